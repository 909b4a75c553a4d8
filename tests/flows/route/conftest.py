"""The routing world every flow test here routes against: the affinity router and its designer, served on loopback,
with the environment a user sets to point Luban at it."""

from __future__ import annotations

import pytest

from tests.support.openai_server import ScriptedOpenAI
from tests.support.routing_world import World


@pytest.fixture
def world(monkeypatch):
    router = World(beta=1.5, none_score=1.0, seed=3)
    with ScriptedOpenAI() as server:
        server.responder = router
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-route-test-3b9f")
        monkeypatch.setenv("LUBAN_ROUTER_MODEL", "router-a")
        yield router, server

from __future__ import annotations

import pytest

from judges.llm import LLMClient
from judges.settings import Secret, Settings
from tests.support.openai_server import ScriptedOpenAI
from tests.support.scripted_llm import LubanResponder

TEST_KEY = "sk-luban-test-7f3a9c2e5b"


@pytest.fixture
def server():
    with ScriptedOpenAI() as running:
        yield running


@pytest.fixture
def responder(server: ScriptedOpenAI) -> LubanResponder:
    r = LubanResponder()
    server.responder = r
    return r


def make_settings(server: ScriptedOpenAI, **overrides) -> Settings:
    values = dict(api_key=Secret(TEST_KEY), base_url=server.base_url, judge_model="judge-a", target_model="target-m",
                  editor_model="editor-e", max_retries=2, timeout_seconds=5.0)
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def client(server: ScriptedOpenAI) -> LLMClient:
    return LLMClient(make_settings(server))

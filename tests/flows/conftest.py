"""A real Prefect API for the flow tests (the test harness: a temporary server on loopback)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# Prefect reads these at import: no analytics (no network here), patience for the first start.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="luban-prefect-home-"))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PREFECT_API_URL"):
    os.environ.pop(name, None)


@pytest.fixture(scope="session")
def prefect_api():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def example_skills(tmp_path: Path) -> Path:
    target = tmp_path / "skills"
    shutil.copytree(REPO_ROOT / "skills", target)
    return target


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory):
    """`prefect server start` on 127.0.0.1 with its own PREFECT_HOME and database, one per test module,
    so a run one test leaves paused can never be mistaken for another test's (tests/flows/prefect_server.py)."""
    from tests.flows.prefect_server import prefect_server_env

    yield from prefect_server_env(tmp_path_factory)

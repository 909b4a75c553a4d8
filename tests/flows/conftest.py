"""A real Prefect API for the flow tests (the test harness: a temporary server on loopback)."""

from __future__ import annotations

import contextlib
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
HARNESS_STARTUP_TIMEOUTS = (120, 300)  # seconds; a 2-core machine running two suites at once needs the second
for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PREFECT_API_URL"):
    os.environ.pop(name, None)


@pytest.fixture(scope="session")
def prefect_api():
    """Prefect's test harness (a temporary API server). A start that times out under load is tried once more with
    a longer wait; if that fails too, only the tests that use the API error, with both reasons."""
    from prefect.testing.utilities import prefect_test_harness

    with contextlib.ExitStack() as stack:
        problems = []
        for timeout in HARNESS_STARTUP_TIMEOUTS:
            try:
                stack.enter_context(prefect_test_harness(server_startup_timeout=timeout))
                break
            except Exception as err:  # noqa: BLE001 - whatever the start raised, the retry is the same
                problems.append(f"after {timeout} s: {type(err).__name__}: {err}")
        else:
            pytest.fail("the Prefect test harness did not start: " + "; ".join(problems), pytrace=False)
        yield


@pytest.fixture
def example_skills(tmp_path: Path) -> Path:
    target = tmp_path / "skills"
    shutil.copytree(REPO_ROOT / "skills", target)
    return target


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory, request):
    """`prefect server start` on 127.0.0.1 with its own PREFECT_HOME and database, one per test module,
    so a run one test leaves paused can never be mistaken for another test's (tests/flows/prefect_server.py).
    A module's ``SERVER_ENV`` (a dict) is added to the server's environment only."""
    from tests.flows.prefect_server import prefect_server_env

    yield from prefect_server_env(tmp_path_factory, server_env=getattr(request.module, "SERVER_ENV", None))

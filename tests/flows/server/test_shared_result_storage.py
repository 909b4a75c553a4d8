"""docs/scale-out.md: with PREFECT_LOCAL_STORAGE_PATH on a path every worker shares, a measurement one machine took
is found by another (a suspended run executed again elsewhere, a child measuring its skill as the batch did) instead
of being paid for again. Two processes with their own PREFECT_HOME stand for two machines; the model is a loopback
server that counts the calls."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.openai_server import ScriptedOpenAI
from tests.support.scripted_llm import LubanResponder

pytestmark = pytest.mark.usefixtures("prefect_api")

MEASURE_ONCE = r'''
import sys
from pathlib import Path
from prefect import flow
from flows.ratchet import tasks
from judges.backend_factory import make_backend
from judges.settings import resolve

base_url, key, skill_file = sys.argv[1:4]
settings = resolve({"base_url": base_url, "judge_model": "judge-a", "target_model": "target-m",
                    "editor_model": "editor-e", "max_retries": 0}, {}, Path("/nonexistent/luban.toml"))
backend = make_backend(settings, Path(skill_file).parent / "cache")

@flow(name="measure-once")
def measure_once():
    text = Path(skill_file).read_text(encoding="utf-8")
    return tasks.evaluate(backend, key, text, "pr-review", ("SKILL.md",), "quick", [], False, "")

print(measure_once().score.total)
'''


def measure_on_a_machine(home: Path, storage: Path, base_url: str, key: str, skill_file: Path) -> str:
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PREFECT_"))}
    env.update(PREFECT_API_URL=str(PREFECT_API_URL.value()), PREFECT_HOME=str(home), PREFECT_LOCAL_STORAGE_PATH=str(storage),
               PREFECT_LOGGING_LEVEL="WARNING", PREFECT_SERVER_ANALYTICS_ENABLED="false")
    done = subprocess.run([sys.executable, "-c", MEASURE_ONCE, base_url, key, str(skill_file)], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_a_measurement_taken_on_one_machine_is_found_on_another_through_shared_storage(tmp_path: Path):
    skill_file = tmp_path / "pr-review" / "SKILL.md"
    skill_file.parent.mkdir()
    skill_file.write_bytes((REPO_ROOT / "skills" / "pr-review" / "SKILL.md").read_bytes())
    key = f"luban-shared-storage-{uuid.uuid4().hex}"
    server = ScriptedOpenAI()
    server.responder = LubanResponder()
    with server:
        shared = tmp_path / "shared-results"
        first = measure_on_a_machine(tmp_path / "machine-a", shared, server.base_url, key, skill_file)
        paid = len(server.chat_requests())
        again = measure_on_a_machine(tmp_path / "machine-b", shared, server.base_url, key, skill_file)
        after_shared = len(server.chat_requests())
        alone = measure_on_a_machine(tmp_path / "machine-c", tmp_path / "its-own-results", server.base_url, key, skill_file)
        after_alone = len(server.chat_requests())
    assert paid > 0 and first == again == alone
    assert after_shared == paid  # machine b found machine a's answer: not one call more
    assert after_alone > after_shared  # without the shared path, the same measurement is paid for again

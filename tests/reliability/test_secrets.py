"""The API key never reaches a file Luban writes, a Prefect log, artifact or flow parameter, or the terminal —
through good runs, judge errors that echo it back, and refusals."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.reliability.crash import run_child
from tests.support.openai_server import ScriptedOpenAI, error
from tests.support.scripted_llm import LubanResponder

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]


class EchoingServer(LubanResponder):
    """A misbehaving proxy: its first judge errors quote the caller's key back."""

    def __init__(self, key: str):
        super().__init__()
        self.key, self.echoes = key, 2

    def _judge(self, request):
        if self.echoes:
            self.echoes -= 1
            return error(500, f"upstream rejected Authorization: Bearer {self.key}")
        return super()._judge(request)


def every_file_under(*roots: Path):
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                yield path


def test_the_key_appears_nowhere(tmp_path: Path):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    key = f"sk-luban-canary-{secrets.token_hex(12)}"
    skills = tmp_path / "skills"
    shutil.copytree(REPO_ROOT / "skills" / "pr-review", skills / "pr-review")
    server = ScriptedOpenAI()
    server.responder = EchoingServer(key)
    outputs = []
    with server:
        env = dict(os.environ, PREFECT_API_URL=PREFECT_API_URL.value(), PREFECT_LOGGING_LEVEL="DEBUG",
                   PREFECT_HOME=str(tmp_path / "prefect-home"), OPENAI_API_KEY=key, OPENAI_BASE_URL=server.base_url)
        runs = [
            ["optimize", "--skills-dir", str(skills), "--mode", "full", "--approval", "auto", "--max-rounds", "1"],  # refused: no git
            ["optimize", "--skills-dir", str(skills), "--mode", "full", "--approval", "auto", "--max-rounds", "1", "--init-git"],
            ["evaluate", "--skills-dir", str(tmp_path / "missing")],  # refused: no such directory
            ["score", str(skills), "--json"],
        ]
        for args in runs:
            result = run_child(args, env, keep_openai=True)
            outputs.append(result.stdout + result.stderr)
    assert "--init-git" in outputs[0] and '"report"' in outputs[1] and "missing" in outputs[2]
    assert sum(key in r.headers.get("authorization", "") for r in server.requests) > 0  # the key was really used
    for number, text in enumerate(outputs):
        assert key not in text, f"the key is in the terminal output of run {number}"
    for path in every_file_under(skills, tmp_path / "luban-workspace", tmp_path / "prefect-home"):
        assert key.encode() not in path.read_bytes(), f"the key is in {path}"
    with get_client(sync_client=True) as client:
        stored = [client.read_logs(limit=200, offset=offset) for offset in range(0, 4000, 200)]
        artifacts = client.read_artifacts(limit=200)
        flow_runs = client.read_flow_runs(limit=200)
    dump = json.dumps([[log.model_dump(mode="json") for log in page] for page in stored]
                      + [a.model_dump(mode="json") for a in artifacts] + [f.model_dump(mode="json") for f in flow_runs])
    assert key not in dump, "the key is in a Prefect log, artifact or flow run"
    assert sum(len(page) for page in stored) > 50  # the logs were really read

"""A server that cannot serve the run refuses it before anything is written, and `luban doctor` says why with the fix.

The real `luban` command as a user runs it, against loopback servers: nothing
listening, a server that rejects the key, one that serves other models, and one
that serves these (scripted to answer as llama-cpp-python's server does).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.cli_runs import assert_refused, left_behind, skills_repo
from tests.support.openai_server import Scripted, ScriptedOpenAI, reply

LUBAN = [sys.executable, "-m", "flows.cli"]
KEY = "sk-luban-preflight-5c1d9e"
MODELS = {"LUBAN_JUDGE_MODEL": "judge-a", "LUBAN_TARGET_MODEL": "target-m", "LUBAN_EDITOR_MODEL": "editor-e"}


def luban(*args: str, cwd: Path, base_url: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_URL", "OPENAI_", "LUBAN_"))}
    env |= {"PYTHONPATH": str(REPO_ROOT), "PREFECT_HOME": str(cwd / "prefect-home"), "OPENAI_BASE_URL": base_url,
            "OPENAI_API_KEY": KEY, "LUBAN_MAX_RETRIES": "0"} | MODELS
    return subprocess.run([*LUBAN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def nothing_listening() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # closed again: a connection is refused at once


@pytest.mark.parametrize("command", [["optimize", "--mode", "full", "--approval", "auto"], ["evaluate", "--mode", "full"]])
def test_a_wrong_base_url_is_refused_before_any_work(tmp_path: Path, command: list[str]):
    """Before: optimize ran every phase, exited 0 in 15 s, every judged dimension unscored, every skill stopped."""
    skills_repo(tmp_path)
    result = luban(*command, "--skills-dir", "skills", cwd=tmp_path, base_url=nothing_listening())
    assert_refused(result, "nothing answers at OPENAI_BASE_URL=http://127.0.0.1:", "start the server")
    assert left_behind(tmp_path) == []


def test_a_rejected_key_and_a_model_the_server_lacks_are_refused_naming_the_setting(tmp_path: Path):
    skills_repo(tmp_path)
    with ScriptedOpenAI(models=["judge-a", "target-m"]) as server:
        result = luban("evaluate", "--skills-dir", "skills", "--mode", "full", cwd=tmp_path, base_url=server.base_url)
        assert_refused(result, "does not serve LUBAN_EDITOR_MODEL=editor-e", "it serves judge-a, target-m")
        assert server.chat_requests() == []  # refused from /models alone: no completion was asked for
        assert KEY not in result.stderr
    assert left_behind(tmp_path) == []
    with _unauthorized_server() as base_url:
        result = luban("evaluate", "--skills-dir", "skills", cwd=tmp_path, base_url=base_url)
    assert_refused(result, "refused the key (HTTP 401)", "set OPENAI_API_KEY")
    assert KEY not in result.stderr and left_behind(tmp_path) == []


def test_a_busy_one_slot_server_is_not_taken_for_an_absent_one():
    """llama-cpp-python answers /models only between generations: busy, it takes the connection and answers late.
    Before: the preflight read that as "nothing answers" and refused the run."""
    from judges.server import probe, refusal
    from judges.settings import Secret, Settings

    with _unauthorized_server(delay=2.0) as base_url:
        settings = Settings(api_key=Secret(KEY), base_url=base_url, judge_model="judge-a")
        facts = probe(settings, timeout=0.5)
    assert facts.reachable and facts.busy and facts.models is None and refusal(settings, facts) is None


def _unauthorized_server(delay: float = 0.0):
    """A loopback server whose every answer is 401 (as a server that does not know the key gives), ``delay`` s late."""
    import contextlib
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            time.sleep(delay)
            payload = b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    @contextlib.contextmanager
    def running():
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        finally:
            httpd.shutdown()
            httpd.server_close()

    return running()


def llama_cpp_python_like(request) -> Scripted:
    """Answers as llama-cpp-python's server does: json_schema is a 500, json_object with a schema is taken."""
    from tests.judges.test_server_dialects import LLAMA_CPP_PYTHON_500
    from tests.support.scripted_llm import LubanResponder

    shape = (request.body.get("response_format") or {}).get("type")
    if shape == "json_schema":
        return Scripted(status=500, body=LLAMA_CPP_PYTHON_500.encode())
    content = request.body["messages"][-1]["content"]
    if "lighthouse" in content:  # the reply-cap check: a story cut at the cap
        from tests.support.openai_server import completion

        return Scripted(body=completion("Once upon a time " * 4, 20, request.body["max_tokens"], finish_reason="length"))
    if "JSON" in content and "ok" in content:
        return reply({"ok": True})
    return LubanResponder()(request) if "skill" in str(request.body["messages"][0]) else reply("one, two, three")


def test_doctor_says_each_check_in_one_line_and_passes_on_a_server_that_can_serve(tmp_path: Path):
    skills_repo(tmp_path)
    with ScriptedOpenAI(models=["judge-a", "target-m", "editor-e"], props={"total_slots": 2}) as server:
        server.responder = llama_cpp_python_like
        result = luban("doctor", "--skills-dir", "skills", cwd=tmp_path, base_url=server.base_url)
        schema_refusals = [r for r in server.chat_requests() if (r.body.get("response_format") or {}).get("type") == "json_schema"]
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == "all checks passed", lines
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "ok   server", "ok   model judge-a", "ok   model target-m", "ok   model editor-e", "ok   structured output",
        "ok   reply cap", "ok   speed", "ok   concurrency", "ok   judge", "ok   target files", "ok   estimate"], lines
    assert "json_object+schema" in lines[4] and "HTTP 500" in lines[4], lines[4]
    assert "2 slot(s) (the server says)" in lines[7] and "1 skill(s), full mode, 5 round(s)" in lines[10], lines
    assert "inline: asked to call read_file, the model answered in text" in lines[9], lines[9]
    assert len(schema_refusals) == 1  # negotiated once, never retried
    assert KEY not in result.stdout + result.stderr


def test_doctor_fails_with_the_fix_when_the_judge_cannot_give_a_verdict(tmp_path: Path):
    skills_repo(tmp_path)
    with ScriptedOpenAI(models=["judge-a", "target-m", "editor-e"]) as server:
        server.responder = lambda request: (reply('{"dims": {}}') if "independent judge" in str(request.body["messages"][0])
                                            else llama_cpp_python_like(request))
        result = luban("doctor", "--skills-dir", "skills", cwd=tmp_path, base_url=server.base_url)
    assert result.returncode == 1, result.stdout
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].startswith("FAIL judge: 0 of 3 verdicts") and "— fix: a stronger LUBAN_JUDGE_MODEL" in failed[0]
    assert result.stdout.rstrip().endswith("1 check(s) failed")


def test_doctor_without_a_server_configured_says_runs_are_offline(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LUBAN_"))} | {"PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([*LUBAN, "doctor"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and "offline stand-ins" in result.stdout, result.stdout + result.stderr


def test_doctor_names_a_wrong_base_url_and_stops_there(tmp_path: Path):
    result = luban("doctor", cwd=tmp_path, base_url=nothing_listening())
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("FAIL server: nothing answers at OPENAI_BASE_URL=")
    assert "model" not in result.stdout.split("\n", 1)[1].split("check(s) failed")[0]


def test_a_server_without_a_model_list_is_not_refused(tmp_path: Path):
    """Some proxies have no /models: the run cannot check the models there, so it does not refuse them."""
    from judges.server import probe, refusal
    from judges.settings import Secret, Settings

    with ScriptedOpenAI(models=None) as server:
        settings = Settings(api_key=Secret(KEY), base_url=server.base_url, judge_model="anything")
        facts = probe(settings)
    assert facts.reachable and facts.models is None and refusal(settings, facts) is None

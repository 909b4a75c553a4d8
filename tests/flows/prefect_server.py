"""A real Prefect server on loopback and `luban serve`, for the tests that need more than the harness."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

from tests.conftest import REPO_ROOT

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    logs = "".join(
        f"\n--- {p.name}\n" + p.read_text(errors="replace")[-3000:]
        for p in sorted(Path(os.environ.get("LUBAN_SERVER_HOME", "/nonexistent")).glob("*.log"))
    )
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{logs}")


SERVER_STARTUP_TIMEOUTS = (120, 300)  # seconds: a start that times out under load is tried once more, waiting longer


def prefect_server_env(tmp_path_factory, timeouts: tuple[float, ...] = SERVER_STARTUP_TIMEOUTS,
                       server_env: dict[str, str] | None = None):
    """`prefect server start` on loopback, with its own PREFECT_HOME; stopped at the end. A first start that times
    out is stopped and tried again on a fresh port and home; only the second failure fails (the module's tests)."""
    failures = []
    for timeout in timeouts:
        started = _start_server(tmp_path_factory, timeout, server_env or {})
        try:
            env = next(started)
        except AssertionError as err:
            failures.append(str(err))
            continue
        yield env
        next(started, None)  # stops the server
        return
    raise AssertionError("prefect server start failed twice:\n" + "\n".join(failures))


def migrated_home(tmp_path_factory) -> Path:
    """A PREFECT_HOME whose database is already migrated, made once per test session (the xdist workers share the
    parent of their temporary directories and take turns at a lock there): a server started on a copy skips the
    migrations, about half of its start-up CPU, which the suite otherwise pays once per module."""
    import fcntl

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    shared = tmp_path_factory.getbasetemp().parent if run_id else tmp_path_factory.getbasetemp()
    template = shared / f"prefect-home-migrated-{run_id or 'alone'}"
    with open(shared / f"prefect-home-migrated-{run_id or 'alone'}.lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        if not (template / "prefect.db").exists():
            making = template.with_name(template.name + ".making")
            env = dict(os.environ, PREFECT_HOME=str(making), PREFECT_SERVER_ANALYTICS_ENABLED="false")
            env.pop("PREFECT_API_URL", None)
            done = subprocess.run([str(BIN / "prefect"), "server", "database", "upgrade", "-y"], env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stdout + done.stderr
            making.rename(template)
    return template


def _start_server(tmp_path_factory, timeout: float, server_env: dict[str, str]):
    import shutil

    port = free_port()
    home = tmp_path_factory.mktemp("prefect-server-home")
    shutil.copytree(migrated_home(tmp_path_factory), home, dirs_exist_ok=True)
    env = dict(os.environ, PREFECT_HOME=str(home), PREFECT_SERVER_API_PORT=str(port), PREFECT_SERVER_API_HOST="127.0.0.1",
               PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
               PREFECT_RUNNER_POLL_FREQUENCY="1", PREFECT_SERVER_UI_SHOW_PROMOTIONAL_CONTENT="false")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    log = open(home / "server.log", "w")  # noqa: SIM115 - the server writes to it for the module's life; closed at teardown
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env | server_env, stdout=log, stderr=subprocess.STDOUT)

    def healthy():
        try:
            return urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2).status == 200
        except OSError:
            return False

    os.environ["LUBAN_SERVER_HOME"] = str(home)  # where wait_for finds the logs to show on a timeout
    try:
        wait_for(healthy, timeout, "prefect server start")
        yield env
    finally:
        server.terminate()
        server.wait(30)
        log.close()


def cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)


def start_batch(env: dict, skills_dir: Path, skill: str, approval_timeout: int = 300, *params: str) -> subprocess.Popen:
    """`luban serve`, wait for the deployments, then `prefect deployment run` one quick batch."""
    log = open(Path(env["PREFECT_HOME"]) / f"serve-{skill}.log", "w")  # noqa: SIM115 - `luban serve` writes to it while it runs
    serve = subprocess.Popen([str(BIN / "luban"), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, text=True)

    def deployed():  # through the REST API: a `prefect deployment ls` process per poll costs seconds of CPU
        return {"batch", "evaluate"} <= {d["name"] for d in api(env, "/deployments/filter")}

    wait_for(deployed, 90, "luban serve to register the deployments")
    started = cli(env, str(BIN / "prefect"), "deployment", "run", "optimize-skills/batch",
                  "-p", f"skills_dir={skills_dir}", "-p", "mode=quick", "-p", "max_rounds=1",
                  "-p", f'skills=["{skill}"]', "-p", f"approval_timeout={approval_timeout}", *params)
    assert started.returncode == 0, started.stdout + started.stderr
    return serve


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()


def api(env: dict, path: str, body: dict | None = None):
    """One call to the server's REST API (faster than a CLI process per poll, which matters on a loaded machine)."""
    import json
    from urllib.request import Request

    request = Request(env["PREFECT_API_URL"] + path, data=json.dumps(body or {}).encode(), method="POST",
                      headers={"Content-Type": "application/json"})
    with urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def paused_runs(env: dict) -> list[tuple[str, str, str]]:
    """(run id, checkpoint, state name) of every paused or suspended flow run."""
    runs = api(env, "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["PAUSED"]}}}})
    return [(r["id"], r["state"]["state_details"].get("pause_key") or "", r["state"]["name"]) for r in runs]


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def batch_finished(env: dict, skills_dir: Path) -> bool:
    """True once this skills directory's optimize-skills run completed; fails fast if it failed or crashed.
    (Other tests of the module share the server: runs are told apart by their skills_dir parameter.)"""
    runs = [r for r in api(env, "/flow_runs/filter", {"flows": {"name": {"any_": ["optimize-skills"]}}})
            if r["parameters"].get("skills_dir") == str(skills_dir)]
    states = [r["state"]["type"] for r in runs]
    assert "FAILED" not in states and "CRASHED" not in states, runs
    return states == ["COMPLETED"]

"""docs/scale-out.md, run as written: PostgreSQL, the server on it, the pool and deployments, two
workers, and two batches on one skills repository that both end where the serial batch ends.

Each ```bash block of the section is one shell on one machine. The test runs every block in order with only
these changes, all of them to reach loopback instead of a network: host names and ports, the example paths
(/srv/..., /shared/..., the checkout), PostgreSQL's superuser reached by its socket instead of ``sudo``, and
the API key left out (the batch runs offline, so nothing leaves the machine). PostgreSQL refuses to run as
root, so under root (CI) it runs as ``nobody`` in a directory of its own.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from tests.conftest import REPO_ROOT
from tests.flows.prefect_server import BIN, api, free_port, stop, wait_for
from tests.reliability.crash import child_env
from tests.support.batches import HALF, explain, make_batch, outcome, postgres_bin, serial_reference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
NOBODY = 65534
BACKGROUND = ("prefect server start", "prefect worker start")  # the commands that run in the foreground for good
WORKERS = 2  # the worker block runs on two "machines"


@pytest.fixture
def postgres() -> Iterator[dict[str, str]]:
    """A PostgreSQL cluster of its own on 127.0.0.1 and a socket in its directory, configured as docs/scale-out.md's
    comment says (listen, pg_hba with scram-sha-256), fsync off (a test's data need not survive a power cut)."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql): docs/scale-out.md's "
                    "PostgreSQL steps need it; apt-get install postgresql")
    root = Path(tempfile.mkdtemp(prefix="luban-pg-"))
    as_user: dict = {}
    if os.geteuid() == 0:  # initdb and postgres refuse root
        os.chown(root, NOBODY, NOBODY)
        as_user = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    data, port = root / "data", free_port()
    made = subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust",
                           "--auth-host=scram-sha-256", "-E", "UTF8"], capture_output=True, text=True, timeout=120,
                          cwd=root, **as_user)
    assert made.returncode == 0, made.stdout + made.stderr
    with open(data / "postgresql.conf", "a") as conf:
        conf.write(f"\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{root}'\n"
                   "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write("host prefect prefect 127.0.0.1/32 scram-sha-256\n")
    log = open(root / "postgres.log", "w")  # noqa: SIM115 - postgres writes to it until the fixture stops it
    server = subprocess.Popen([str(bin_dir / "postgres"), "-D", str(data)], stdout=log, stderr=subprocess.STDOUT,
                              cwd=root, **as_user)
    try:
        wait_for(lambda: subprocess.run([str(bin_dir / "pg_isready"), "-h", str(root), "-p", str(port)],
                                        capture_output=True).returncode == 0, 60, "postgres to accept connections")
        yield {"socket": str(root), "port": str(port), "bin": str(bin_dir)}
    finally:
        stop(server)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def page_blocks() -> list[list[str]]:
    """docs/scale-out.md's bash blocks, each a list of commands (continuation lines joined)."""
    section = (REPO_ROOT / "docs" / "scale-out.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    out = []
    for block in blocks:
        lines = [line.strip() for line in block.replace("\\\n", " ").splitlines()]
        out.append([line for line in lines if line and not line.startswith("#")])
    return out


def on_loopback(command: str, places: dict[str, str]) -> str:
    for written, here in places.items():
        command = command.replace(written, here)
    return command


def exports(command: str) -> dict[str, str]:
    """``export A=1 B=2  # comment`` → {A: 1, B: 2}."""
    words = shlex.split(command, comments=True)[1:]
    return dict(word.split("=", 1) for word in words)


def run_block(commands: list[str], base: dict[str, str], api_url: str, background: list[subprocess.Popen], logs: Path,
              started: list[str]) -> None:
    """One shell: its exports, its commands in order (a server or worker left running), the flow runs it started."""
    env = dict(base)
    for command in commands:
        if command.startswith("export "):
            env.update({k: v for k, v in exports(command).items() if k != "OPENAI_API_KEY"})  # offline: no key
            continue
        if command.startswith(BACKGROUND):
            copies = WORKERS if command.startswith("prefect worker start") else 1
            for n in range(copies):
                log = open(logs / f"{command.split()[1]}-{n}.log", "w")  # noqa: SIM115 - written while it runs
                background.append(subprocess.Popen(["bash", "-c", command], env=env, stdout=log,
                                                   stderr=subprocess.STDOUT, cwd=REPO_ROOT))
            if command.startswith("prefect server start"):
                wait_for(lambda: healthy(api_url), 300, "prefect server start on PostgreSQL")
            continue
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=300,
                              cwd=REPO_ROOT)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        if command.startswith("prefect deployment run"):
            started += re.findall(r"UUID: ([0-9a-f-]{36})", done.stdout)


def healthy(api_url: str) -> bool:
    from urllib.request import urlopen

    try:
        return urlopen(f"{api_url}/health", timeout=2).status == 200
    except OSError:
        return False


def test_the_scale_out_section_runs_as_written_and_two_batches_on_one_repository_end_as_the_serial_one(
        postgres: dict[str, str], tmp_path: Path, tmp_path_factory):
    port = free_port()
    api_url = f"http://127.0.0.1:{port}/api"
    # two examples and two generated skills: enough to spread over both workers, and half the child flow runs
    skills, workspace = make_batch(tmp_path / "srv", HALF)
    places = {
        "sudo -u postgres psql": f"psql -h {postgres['socket']} -p {postgres['port']} -U postgres",
        "db-host:5432": f"127.0.0.1:{postgres['port']}",
        "--host 0.0.0.0": f"--host 127.0.0.1 --port {port}",
        "server-host:4200": f"127.0.0.1:{port}",
        "/path/to/this/checkout": str(REPO_ROOT),
        "/shared/prefect-results": str(tmp_path / "shared-results"),
        "/srv/skills": str(skills),
        "/srv/luban-ws-2": str(tmp_path / "srv" / "luban-workspace-2"),
        "/srv/luban-ws": str(workspace),
    }
    home = tmp_path / "prefect-home"  # every "machine" here shares one home; only the server's database matters
    base = child_env(dict(os.environ, PATH=f"{BIN}:{postgres['bin']}:{os.environ['PATH']}", PREFECT_HOME=str(home),
                          PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_LOGGING_LEVEL="WARNING",
                          PREFECT_WORKER_QUERY_SECONDS="1"))
    base.pop("PREFECT_API_URL", None)  # each block sets it where the page says to (without it: a server of its own)
    blocks = [[on_loopback(c, places) for c in block] for block in page_blocks()]
    assert len(blocks) == 6 and any("deployment run" in c for c in blocks[-1]), blocks  # the section's shape
    background: list[subprocess.Popen] = []
    batches: list[str] = []
    home.mkdir()
    try:
        for block in blocks:
            run_block(block, base, api_url, background, home, batches)
        assert len(batches) == 2, batches
        env = dict(base, PREFECT_API_URL=api_url)
        states = wait_for(lambda: ended(env, batches), 600, "both batches to end")
        children = api(env, "/flow_runs/filter", {"flows": {"name": {"any_": ["optimize-skill"]}}})
        reference, _ = serial_reference(tmp_path_factory, env, HALF)
    finally:
        for process in reversed(background):
            stop(process)
    assert states == ["COMPLETED", "COMPLETED"], states
    assert len(children) == 2 * len(reference["texts"]) and {r["state"]["type"] for r in children} == {"COMPLETED"}
    for ws in (workspace, tmp_path / "srv" / "luban-workspace-2"):
        got = outcome(skills, ws)
        assert (got["rows"], got["rejected"]) == (reference["rows"], reference["rejected"]), explain(reference, got)
    repo = git.Repo(skills)
    trees = {head.name: head.commit.tree.hexsha for head in repo.heads if head.name.startswith("auto-optimize/")}
    assert len(trees) == 2 and set(trees.values()) == {reference["tree"]}, trees  # neither built on the other's edits


def ended(env: dict[str, str], ids: list[str]) -> list[str] | None:
    runs = {r["id"]: r["state"]["type"] for r in api(env, "/flow_runs/filter", {"flow_runs": {"id": {"any_": ids}}})}
    states = [runs.get(i, "") for i in ids]
    return states if all(s in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") for s in states) else None

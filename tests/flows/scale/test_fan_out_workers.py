"""One batch over two Prefect workers: a real server on loopback, a `process` pool, prefect.yaml's deployment, and
each skill's rounds as a child flow run on whichever worker takes it; the merged branch is the serial batch's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.flows.prefect_server import BIN, api, cli, stop
from tests.reliability.crash import child_env, optimize_args, run_child
from tests.support.batches import examples_repository, explain, make_batch, outcome, postgres_bin, serial_reference

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
POOL = "luban"  # prefect.yaml's pool, on this test's own server
# The suite's server is on SQLite, which serialises writers: with several workers' processes writing and the suite's
# load besides, it answered 503 to a budget increment for the whole minute Prefect's client retries. docs/scale-out.md asks
# PostgreSQL for this (tests/flows/scale/test_scale_out_docs.py runs on it); here, writers wait longer for the lock, and
# events and task-run records no assertion reads are not written.
SERVER_ENV = {"PREFECT_SERVER_DATABASE_TIMEOUT": "60", "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false",
              "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED": "false"}
ONLINE_BUDGET = 80  # calls: Phases 0.5 and 1 of the two skills take 59, their rounds and the gate about 60 more


def start_worker(env: dict[str, str], name: str, home: Path) -> subprocess.Popen:
    """`prefect worker start` as docs/scale-out.md says: Luban's environment, LUBAN_CHECKOUT, at most two runs at once
    (so that a batch of four at a time cannot all land on one worker)."""
    log = open(home / f"worker-{name}.log", "w")  # noqa: SIM115 - the worker writes to it while it runs
    worker_env = dict(env, LUBAN_CHECKOUT=str(REPO_ROOT), PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_LOGGING_LEVEL="INFO",
                      PREFECT_WORKER_PREFETCH_SECONDS="1")
    return subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name", name, "--limit", "2"],
                            env=worker_env, stdout=log, stderr=subprocess.STDOUT, cwd=home)


def test_a_batch_fans_out_over_two_workers_as_the_serial_batch_and_online_spends_one_budget(
        prefect_server: dict, tmp_path: Path, tmp_path_factory):
    env = child_env(dict(prefect_server, PREFECT_LOGGING_LEVEL="WARNING"))
    # With PostgreSQL here, test_scale_out_docs.py runs this same batch twice over two workers (for suite time, once).
    on_postgres = postgres_bin() is not None

    created = cli(env, str(BIN / "prefect"), "work-pool", "create", POOL, "--type", "process")
    assert created.returncode == 0, created.stdout + created.stderr
    deployed = cli(env, str(BIN / "prefect"), "--no-prompt", "deploy", "--name", "workers-rounds", timeout=180)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    home = Path(prefect_server["PREFECT_HOME"])
    workers = [start_worker(env, name, home) for name in ("worker-a", "worker-b")]
    fan_out = ("--parallel", "4", "--fan-out-to", "optimize-skill/workers-rounds")
    try:
        skills, workspace = make_batch(tmp_path / "fanned")
        if not on_postgres:
            fanned = run_child(optimize_args(skills, "--workspace", str(workspace), *fan_out), env, timeout=600)
            assert fanned.returncode == 0, fanned.stderr[-3000:]
        children = api(env, "/flow_runs/filter", {"flows": {"name": {"any_": ["optimize-skill"]}}})
        took = {name: (home / f"worker-{name}.log").read_text(errors="replace").count("submitted to infrastructure")
                for name in ("worker-a", "worker-b")}

        # A batch killed while its children still ran: --resume waits for them before it merges their worktrees.
        waited = waits_for_a_child_still_going(env)
        online, calls = online_batch_on_a_budget(env, tmp_path / "online", fan_out)
    finally:
        for worker in workers:
            stop(worker)
    # Online, with a call budget too small for the batch: the workers know no model (their environment has none);
    # the batch hands its settings to the children, which draw on the batch's one budget kept by the server.
    assert online.returncode == 0, online.stderr[-3000:]
    stopped = json.loads(online.stdout)["stopped"] or ""
    assert stopped.startswith("budget") and "across all of its processes" in stopped, stopped  # a child found it spent
    assert len(calls) <= ONLINE_BUDGET, described(calls)
    left = [limit["name"] for limit in api(env, "/v2/concurrency_limits/filter", {})]
    assert not [name for name in left if name.startswith(("luban-calls-", "luban-tokens-"))], left  # gone with the batch
    assert waited["names"] == ["left-going"] and waited["state"] in ("COMPLETED", "FAILED", "CRASHED"), waited
    if on_postgres:
        return
    reference, _ = serial_reference(tmp_path_factory, env)  # the serial batch: run once for the whole session
    got = outcome(skills, workspace)
    assert got == reference, explain(reference, got)
    assert sorted(r["name"] for r in children) == sorted(reference["texts"]), [r["name"] for r in children]
    assert {r["state"]["type"] for r in children} == {"COMPLETED"}
    assert all(took.values()) and sum(took.values()) == len(children), took  # both workers ran skills
    assert not any((workspace / "worktrees").rglob("SKILL.md"))  # every worktree merged and removed
    assert waited["names"] == ["left-going"] and waited["state"] in ("COMPLETED", "FAILED", "CRASHED"), waited


def test_fan_out_is_refused_without_a_server_or_with_a_person_answering(tmp_path: Path, monkeypatch):
    from flows.phases.preflight import Refused, check_fan_out

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with pytest.raises(Refused, match="--approval auto"):
        check_fan_out("optimize-skill/workers-rounds", "ui", "full")
    with pytest.raises(Refused, match="FLOW/DEPLOYMENT"):
        check_fan_out("workers-rounds", "auto", "full")
    with pytest.raises(Refused, match="full mode"):
        check_fan_out("optimize-skill/workers-rounds", "auto", "quick")
    check_fan_out(None, "ui", "quick")  # not fanning out: nothing to refuse


def waits_for_a_child_still_going(env: dict[str, str]) -> dict:
    """A child flow run of a batch that is gone, still on its way through a worker (given nothing to work on, it
    ends at once): what ``wait_for_children`` — the first step of that batch's --resume — waited for, and how the
    run stood when the wait returned. In a child process, because Prefect reads the server's address at start."""
    script = (
        "import json, sys\n"
        "from prefect.deployments import run_deployment\n"
        "from prefect.client.orchestration import get_client\n"
        "from flows.scale.child import wait_for_children\n"
        "nothing = {'skill': 'left-going', 'worktree': '/nonexistent', 'branch': 'b', 'original': 'HEAD',\n"
        "           'workspace': '/nonexistent', 'mode': 'full', 'run_dir': '/nonexistent', 'options': {},\n"
        "           'batch_run_id': None, 'hand_back': '/nonexistent/hand-back.json'}\n"
        "run = run_deployment('optimize-skill/workers-rounds', parameters=nothing, timeout=0, as_subflow=False,\n"
        "                     tags=['luban', 'luban-batch:auto-optimize/gone'], flow_run_name='left-going')\n"
        "names = wait_for_children('auto-optimize/gone', 120)\n"
        "with get_client(sync_client=True) as client:\n"
        "    state = client.read_flow_run(run.id).state.type.value\n"
        "print(json.dumps({'names': names, 'state': state}))\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def described(requests: list) -> str:
    """Requests by kind and retry count, and the last ones' arrival before the end: what a failed count needs."""
    from collections import Counter

    from tests.support.scripted_llm import kind_of

    end = max((r.at for r in requests), default=0.0)
    kinds = Counter((kind_of(r), r.headers.get("x-stainless-retry-count", "0")) for r in requests)
    last = [f"{kind_of(r)} {end - r.at:.2f}s before the last" for r in requests[-5:]]
    return f"{len(requests)} requests: {dict(kinds)}; last: {last}"


def online_batch_on_a_budget(env: dict[str, str], root: Path, fan_out: tuple[str, ...]):
    """Two skills fanned out online against a loopback model, ONLINE_BUDGET calls for all: (the run, calls made)."""
    from tests.support.openai_server import ScriptedOpenAI
    from tests.support.scripted_llm import LubanResponder

    skills, workspace = examples_repository(root, ("pr-review", "weekly-report-zh"))
    model = ScriptedOpenAI()
    model.responder = LubanResponder()
    with model:
        online = dict(env, OPENAI_BASE_URL=model.base_url, LUBAN_JUDGE_MODEL="judge-a", LUBAN_TARGET_MODEL="target-m",
                      LUBAN_EDITOR_MODEL="editor-e", LUBAN_MAX_RETRIES="0", LUBAN_MAX_LLM_CALLS=str(ONLINE_BUDGET))
        args = optimize_args(skills, "--workspace", str(workspace), *fan_out, "--parallel", "2", "--max-rounds", "1")
        result = run_child(args, online, keep_openai=True, timeout=600)
        return result, model.chat_requests()


@pytest.mark.usefixtures("prefect_api")
def test_a_resume_that_waits_in_vain_for_a_child_names_it_and_the_fix():
    """A child that never found a worker (or whose machine is gone and not yet marked Crashed) stays Scheduled or
    Running: the wait ends after its bound with the run named, instead of merging a worktree it may still write."""
    from prefect import flow
    from prefect.client.orchestration import get_client

    from flows.scale.child import ChildRunFailed, wait_for_children

    @flow(name="optimize-skill")
    def never_picked_up() -> None:
        return None

    with get_client(sync_client=True) as client:
        stuck = client.create_flow_run(never_picked_up, name="stuck-child", tags=["luban-batch:auto-optimize/lost"])
    with pytest.raises(ChildRunFailed, match=f"stuck-child \\({stuck.id}"):
        wait_for_children("auto-optimize/lost", wait_seconds=1)
    assert wait_for_children("auto-optimize/none-left", wait_seconds=1) == []

"""One batch over two Prefect workers: a real server on loopback, a `process` pool, prefect.yaml's deployment, and
each skill's rounds as a child flow run on whichever worker takes it; the merged branch is the serial batch's."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.flows.prefect_server import BIN, api, cli, stop, wait_for
from tests.reliability.crash import child_env, optimize_args, run_child
from tests.reliability.test_resume_equivalence import explain, make_batch, outcome

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
POOL = "luban"  # prefect.yaml's pool, on this test's own server


def start_worker(env: dict[str, str], name: str, home: Path) -> subprocess.Popen:
    """`prefect worker start` as the README says: Luban's environment, LUBAN_CHECKOUT, at most two runs at once
    (so that a batch of four at a time cannot all land on one worker)."""
    log = open(home / f"worker-{name}.log", "w")  # noqa: SIM115 - the worker writes to it while it runs
    worker_env = dict(env, LUBAN_CHECKOUT=str(REPO_ROOT), PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_LOGGING_LEVEL="INFO",
                      PREFECT_WORKER_PREFETCH_SECONDS="1")
    return subprocess.Popen([str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name", name, "--limit", "2"],
                            env=worker_env, stdout=log, stderr=subprocess.STDOUT, cwd=home)


def test_a_batch_fans_out_over_two_workers_and_ends_as_the_serial_batch_even_killed_and_resumed(prefect_server: dict,
                                                                                                 tmp_path: Path):
    env = child_env(dict(prefect_server, PREFECT_LOGGING_LEVEL="WARNING"))
    serial_skills, serial_workspace = make_batch(tmp_path / "serial")
    serial = run_child(optimize_args(serial_skills, "--workspace", str(serial_workspace)), env)
    assert serial.returncode == 0, serial.stderr[-3000:]
    reference = outcome(serial_skills, serial_workspace)

    created = cli(env, str(BIN / "prefect"), "work-pool", "create", POOL, "--type", "process")
    assert created.returncode == 0, created.stdout + created.stderr
    deployed = cli(env, str(BIN / "prefect"), "--no-prompt", "deploy", "--name", "workers-rounds", timeout=180)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    home = Path(prefect_server["PREFECT_HOME"])
    workers = [start_worker(env, name, home) for name in ("worker-a", "worker-b")]
    fan_out = ("--parallel", "4", "--fan-out-to", "optimize-skill/workers-rounds")
    try:
        skills, workspace = make_batch(tmp_path / "fanned")
        fanned = run_child(optimize_args(skills, "--workspace", str(workspace), *fan_out), env, timeout=600)
        assert fanned.returncode == 0, fanned.stderr[-3000:]
        children = api(env, "/flow_runs/filter", {"flows": {"name": {"any_": ["optimize-skill"]}}})
        took = {name: (home / f"worker-{name}.log").read_text(errors="replace").count("submitted to infrastructure")
                for name in ("worker-a", "worker-b")}

        # The batch killed after three skills came back, the others' child runs still going: --resume cancels them,
        # merges what their worktrees kept, and runs the rest again.
        killed_skills, killed_workspace = make_batch(tmp_path / "killed")
        args = optimize_args(killed_skills, "--workspace", str(killed_workspace), *fan_out)
        killed = run_child(args, env, kill_at="take_back:return:3:", timeout=600)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        resumed = run_child([*args, "--resume"], env, timeout=600)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        notices = json.loads(resumed.stdout)["notices"]
        assert any("merged what it had kept" in n for n in notices), notices  # the kill left skills mid-fan-out
    finally:
        for worker in workers:
            stop(worker)
    got = outcome(skills, workspace)
    assert got == reference, explain(reference, got)
    assert sorted(r["name"] for r in children) == sorted(reference["texts"]), [r["name"] for r in children]
    assert {r["state"]["type"] for r in children} == {"COMPLETED"}
    assert all(took.values()) and sum(took.values()) == len(children), took  # both workers ran skills
    assert not any((workspace / "worktrees").rglob("SKILL.md"))  # every worktree merged and removed
    after_kill = outcome(killed_skills, killed_workspace)
    assert after_kill == reference, explain(reference, after_kill)


def test_fan_out_is_refused_without_a_server_or_with_a_person_answering(tmp_path: Path, monkeypatch):
    from flows.preflight import Refused, check_fan_out

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with pytest.raises(Refused, match="--approval auto"):
        check_fan_out("optimize-skill/workers-rounds", "ui", "full")
    with pytest.raises(Refused, match="FLOW/DEPLOYMENT"):
        check_fan_out("workers-rounds", "auto", "full")
    with pytest.raises(Refused, match="full mode"):
        check_fan_out("optimize-skill/workers-rounds", "auto", "quick")
    check_fan_out(None, "ui", "quick")  # not fanning out: nothing to refuse


def test_a_childs_samples_come_back_whole_and_replace_only_its_skills():
    """Online, the held-out gate and the skill's summary read the samples the child took: they must arrive as taken."""
    import json

    from flows.measure import Ledger
    from flows.skill_flow import ledger_record, replace_skill
    from scoring.samples import Measured

    child, batch = Ledger(), Ledger()
    for ledger, offset in ((child, 0.0), (batch, 1.0)):
        for skill in ("alpha", "beta"):
            ledger.add(skill, "kept text", Measured.of({"dim2": [6.5 + offset, 7.0], "dim1": [8.0]}, exact=["dim1"]))
            ledger.add(skill, "candidate", Measured.of({"dim3": [5.0 + offset]}))
            ledger.add_held_out(skill, "kept text", (7.5 - offset, 8.0))
            ledger.next_index("evaluate", skill, "kept text")
    child.next_index("resample", "alpha", "candidate")
    replace_skill(batch, "alpha", json.loads(json.dumps(ledger_record(child, "alpha"))))
    assert batch.of("alpha", "kept text") == child.of("alpha", "kept text")
    assert batch.of("alpha", "candidate") == child.of("alpha", "candidate")
    assert {k: v for k, v in batch.held_out.items() if k[0] == "alpha"} == {k: v for k, v in child.held_out.items() if k[0] == "alpha"}
    assert {k: v for k, v in batch.taken.items() if k[1] == "alpha"} == {k: v for k, v in child.taken.items() if k[1] == "alpha"}
    assert batch.of("beta", "kept text").samples("dim2") == (7.5, 7.0)  # the other skill's samples stay the batch's


def test_an_online_batch_fanned_out_through_luban_serve_spends_one_budget(prefect_server: dict, tmp_path: Path):
    """`luban serve`'s optimize-skill/rounds, a loopback model, and a call budget too small for the batch: the batch and
    its children draw on one budget kept by the server, so the model sees at most that many calls in all."""
    from tests.support.openai_server import ScriptedOpenAI
    from tests.support.scripted_llm import LubanResponder

    budget = 190
    server = ScriptedOpenAI()
    server.responder = LubanResponder()
    with server:
        env = dict(prefect_server, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-luban-fan-out-0001",
                   LUBAN_JUDGE_MODEL="judge-a", LUBAN_TARGET_MODEL="target-m", LUBAN_EDITOR_MODEL="editor-e",
                   LUBAN_MAX_RETRIES="0", LUBAN_MAX_LLM_CALLS=str(budget), PREFECT_LOGGING_LEVEL="WARNING")
        log = open(Path(prefect_server["PREFECT_HOME"]) / "serve-online.log", "w")  # noqa: SIM115 - serve writes to it
        serve = subprocess.Popen([str(BIN / "luban"), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for(lambda: "optimize-skill/rounds" in cli(env, str(BIN / "prefect"), "deployment", "ls").stdout, 90,
                     "luban serve to register optimize-skill/rounds")
            skills, workspace = small_batch(tmp_path)
            result = run_child(optimize_args(skills, "--workspace", str(workspace), "--parallel", "3", "--max-rounds", "2",
                                             "--fan-out-to", "optimize-skill/rounds"), env, keep_openai=True, timeout=600)
        finally:
            stop(serve)
            log.close()
        calls = len(server.chat_requests())
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["stopped"] and summary["stopped"].startswith("budget"), summary["stopped"]
    assert "across all of its processes" in summary["stopped"]  # a child found the batch's budget spent
    assert calls <= budget, calls
    children = api(env, "/flow_runs/filter", {"flows": {"name": {"any_": ["optimize-skill"]}}})
    assert children, "the rounds ran as child flow runs"
    left = [limit["name"] for limit in api(env, "/v2/concurrency_limits/filter", {})]
    assert not [name for name in left if name.startswith(("luban-calls-", "luban-tokens-"))], left  # gone with the batch


def small_batch(root: Path) -> tuple[Path, Path]:
    """Three of the shipped examples in a fresh repository: enough for children to share a budget, cheap online."""
    import shutil

    import git

    skills = root / "skills"
    for name in ("pr-review", "weekly-report-zh", "db-migration"):
        shutil.copytree(REPO_ROOT / "skills" / name, skills / name)
    repo = git.Repo.init(skills)
    repo.git.add(A=True)
    repo.git.commit("-m", "skills", env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                                         "GIT_COMMITTER_EMAIL": "t@t"})
    return skills, root / "luban-workspace"

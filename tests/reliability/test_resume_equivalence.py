"""A kill -9 at any instant, then --resume, ends where an unbroken run ends: the same tree and the same rows.

The batch mixes the shipped examples with generated skills (data nobody tuned on), offline, so every run is
deterministic and the unbroken run is the reference. Rows are compared on everything but when they were
written and the commit id (a commit made a second later has another id for the same tree).
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import git
import pytest

from tests.reliability.crash import (
    SERVER_WITH_REPOSSESSOR,
    assert_consistent_after_a_crash,
    child_env,
    optimize_args,
    run_child,
    start_child,
)
from tests.support.batches import explain, make_batch, outcome, serial_reference
from tests.support.repos import commit_all, commit_subjects, copy_examples
from workspace import run_marker

pytestmark = [pytest.mark.slow]
SERVER_ENV = SERVER_WITH_REPOSSESSOR  # a real server, whose repossessor frees the slot of a run killed taking it


def resume_to_the_end(skills: Path, workspace: Path, env: dict[str, str]) -> None:
    result = run_child(optimize_args(skills, "--resume", "--workspace", str(workspace)), env)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory, prefect_server: dict[str, str]) -> tuple[dict[str, Any], float, dict[str, str]]:
    """The reference: the batch run once without a stop (its outcome, how long it took, the children's env)."""
    env = dict(prefect_server, PREFECT_LOGGING_LEVEL="WARNING")
    reference, took = serial_reference(tmp_path_factory, env)
    return reference, took, env


@pytest.mark.parametrize("kill_at", ["GitRatchet.keep:return:1:", "GitRatchet.keep:return:4:",
                                     "save:return:1:rejected_edits.md"])
def test_a_kill_between_a_decision_and_its_row_resumes_to_the_unbroken_result(tmp_path: Path, unbroken, kill_at: str):
    """The kill lands after the keep's commit (or the rejection's entry in rejected_edits.md) and before the row:
    the row is completed from the pending record, and the round is not run again."""
    reference, _, env = unbroken
    skills, workspace = make_batch(tmp_path)
    killed = run_child(optimize_args(skills, "--workspace", str(workspace)), env, kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert list(workspace.rglob("pending-keep.json")), "the kill should have left the decision's row pending"
    resume_to_the_end(skills, workspace, env)
    got = outcome(skills, workspace)
    assert got == reference, explain(reference, got)


def test_in_quick_mode_a_kill_between_a_keep_and_its_row_resumes_to_the_unbroken_result(tmp_path: Path, unbroken):
    """Quick mode keeps by writing SKILL.md.bak: the same pending row makes that keep and its row one step."""
    _, _, env = unbroken
    ends = []
    for kill_at in (None, "FileRatchet.keep:return:3:"):
        skills, workspace = make_batch(tmp_path / ("killed" if kill_at else "unbroken"))
        args = [*optimize_args(skills, "--workspace", str(workspace)), "--mode", "quick"]  # the last --mode counts
        first = run_child(args, env, kill_at=kill_at)
        if kill_at:
            assert first.returncode == -signal.SIGKILL and list(workspace.rglob("pending-keep.json")), first.stderr[-2000:]
            first = run_child([*args, "--resume"], env)
        assert first.returncode == 0, first.stderr[-3000:]
        ends.append(outcome(skills, workspace, "quick"))
    assert ends[1] == ends[0], explain(ends[0], ends[1])


@pytest.mark.parametrize("step", ["GitRatchet.start:call:1:", "ManifestWriter.create:return:1:"])
def test_a_kill_before_the_branch_exists_resumes_as_a_fresh_start(tmp_path: Path, unbroken, step: str):
    reference, _, env = unbroken
    skills, workspace = make_batch(tmp_path)
    killed = run_child(optimize_args(skills, "--workspace", str(workspace)), env, kill_at=step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    resume_to_the_end(skills, workspace, env)
    got = outcome(skills, workspace)
    assert got == reference, explain(reference, got)


def test_the_killed_runs_marker_is_closed_by_the_run_that_follows(tmp_path: Path, unbroken):
    _, _, env = unbroken
    skills, workspace = make_batch(tmp_path)
    killed = run_child(optimize_args(skills, "--workspace", str(workspace)), env, kill_at="GitRatchet.keep:return:2:")
    assert killed.returncode == -signal.SIGKILL
    (marker,) = (workspace / "runs").glob("*.json")
    assert run_marker.load(workspace, marker.stem)["state"] == "running"  # what a kill leaves
    assert workspace_slots_taken(workspace, env) == 1  # and its lease on the server, which has not lapsed
    resume_to_the_end(skills, workspace, env)  # not refused: the freed flock on this host proves the holder gone
    assert workspace_slots_taken(workspace, env) == 0
    closed = run_marker.load(workspace, marker.stem)
    assert closed["state"] == "stopped" and "killed" in closed["stopped_why"]
    states = sorted(run_marker.load(workspace, p.stem)["state"] for p in (workspace / "runs").glob("*.json"))
    assert states == ["finished", "stopped"]


def workspace_slots_taken(workspace: Path, env: dict[str, str]) -> int:
    """The workspace's run lock on the Prefect server the children share (flows/server/lock.py): slots held now.
    Asked of that server by its address: this test process has no API of its own (a client without one would start
    an ephemeral server in this xdist worker, and the worker's event sender would outlive it)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.server.lock import limit_name

    with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}), get_client(sync_client=True) as client:
        return client.read_global_concurrency_limit_by_name(limit_name(workspace)).active_slots


def test_kills_at_random_instants_then_resume_end_as_the_unbroken_run(tmp_path: Path, unbroken):
    """Ten batches, each killed at a random instant of a run's length (start-up included), then resumed."""
    reference, duration, env = unbroken
    rng = random.Random(20261204)
    for attempt in range(10):
        skills, workspace = make_batch(tmp_path / f"attempt-{attempt}")
        child = start_child(optimize_args(skills, "--workspace", str(workspace)), child_env(env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        instant = rng.uniform(0, duration)
        try:
            child.wait(instant)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
        if workspace.exists():
            assert_consistent_after_a_crash(skills, workspace)
        resume_to_the_end(skills, workspace, env)
        got = outcome(skills, workspace)
        assert got == reference, f"killed at {instant:.2f} s of {duration:.2f} s: {explain(reference, got)}"


@pytest.mark.parametrize("killed_at", ["held_out_gate:call:1:", "GitRatchet.rollback_to_previous_keep:return:1:",
                                     "_roll_back_last_keep:return:1:"])
def test_a_kill_around_the_held_out_gate_still_rolls_back_an_overfitted_keep(tmp_path: Path, unbroken, killed_at: str):
    """Held-out Step B after a resume: the kept edit it rejects is read back from git, not from the killed process;
    killed between its rollback commit and its row, or after the row and before its one more round, the resumed run
    completes the row and goes on from there."""
    from tests.support.openai_server import ScriptedOpenAI
    from tests.support.scripted_runs import GateResponder

    _, _, env = unbroken
    ends = []
    for kill_at in (None, killed_at):
        skills = tmp_path / f"{'killed' if kill_at else 'unbroken'}" / "skills"
        repo = commit_all(copy_examples(skills, "pr-review"))
        workspace = skills.parent / "luban-workspace"
        server = ScriptedOpenAI()
        server.responder = GateResponder(held_after=7)
        with server:
            online = dict(env, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-luban-test-resume-0001",
                          LUBAN_JUDGE_MODEL="judge-a", LUBAN_TARGET_MODEL="target-m", LUBAN_EDITOR_MODEL="editor-e",
                          LUBAN_MAX_RETRIES="0")
            args = optimize_args(skills, "--workspace", str(workspace))
            first = run_child(args, online, kill_at=kill_at, keep_openai=True)
            if kill_at:
                assert first.returncode == -signal.SIGKILL, first.stderr[-2000:]
                first = run_child([*args, "--resume"], online, keep_openai=True)
            assert first.returncode == 0, first.stderr[-3000:]
        assert any(s.startswith("held-out-rollback: pr-review") for s in commit_subjects(repo))
        ends.append(outcome(skills, workspace))
    assert ends[1] == ends[0], explain(ends[0], ends[1])


def test_a_batch_run_side_by_side_ends_as_the_serial_batch_even_killed_and_resumed(tmp_path: Path, unbroken):
    """--parallel 3: every skill's rounds in its own worktree and branch, merged back in baseline order. Unbroken,
    then killed (at a keep inside a worktree, and at random instants of its own length) and resumed: the end is
    the serial batch's."""
    reference, _, env = unbroken
    skills, workspace = make_batch(tmp_path / "unbroken")
    started = time.monotonic()
    result = run_child(optimize_args(skills, "--workspace", str(workspace), "--parallel", "3"), env)
    duration = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    got = outcome(skills, workspace)
    assert got == reference, explain(reference, got)
    repo = git.Repo(skills)
    merged = {str(c.message).split(" ")[1] for c in repo.iter_commits() if len(c.parents) == 2}
    kept = {skill for skill, rows in reference["rows"].items() if any(r["status"] == "keep" for r in rows)}
    assert kept and kept <= merged  # every skill that kept an edit came back through its branch's merge
    assert not any((workspace / "worktrees").rglob("SKILL.md")) and not [h for h in repo.heads if "--" in h.name]

    rng = random.Random(20261205)
    kills = [f"GitRatchet.keep:return:{rng.randint(1, 4)}:", None, None]  # None: a random instant
    in_worktrees = 0  # kills that left skills' rounds in worktrees, for --resume to gather
    for attempt, kill_at in enumerate(kills):
        skills, workspace = make_batch(tmp_path / f"attempt-{attempt}")
        args = optimize_args(skills, "--workspace", str(workspace), "--parallel", "3")
        if kill_at:
            assert run_child(args, env, kill_at=kill_at).returncode == -signal.SIGKILL
        else:
            child = start_child(args, child_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                child.wait(rng.uniform(0.2 * duration, 0.9 * duration))
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
                child.wait(30)
        in_worktrees += any((workspace / "worktrees").rglob("SKILL.md"))
        result = run_child([*args, "--resume"], env)
        assert result.returncode == 0, result.stderr[-3000:]
        got = outcome(skills, workspace)
        assert got == reference, f"attempt {attempt} ({kill_at or 'a random instant'}): {explain(reference, got)}"
    assert in_worktrees, "no kill landed while skills ran in worktrees"

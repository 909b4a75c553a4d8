"""SIGKILL a full optimization at each step of the ratchet and at random instants: nothing is lost or torn,
and running again with --resume continues without repeating a kept edit or losing a reverted one."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import git
import pytest

from scoring.notes import parse_note
from tests.reliability.crash import (
    SERVER_WITH_REPOSSESSOR,
    STEPS,
    assert_consistent_after_a_crash,
    child_env,
    optimize_args,
    run_child,
    start_child,
)
from tests.support.repos import commit_all, copy_examples
from workspace import rejected_edits
from workspace.results_tsv import ResultsFile

SKILLS = ("pr-review", "weekly-report-zh", "db-migration")  # in that order (lowest total first): four keeps, then a revert
pytestmark = [pytest.mark.slow]
SERVER_ENV = SERVER_WITH_REPOSSESSOR


@pytest.fixture
def setup(tmp_path: Path, prefect_server: dict[str, str]):
    """Each run talks to a real `prefect server start`, as a team's runs do: a run killed while it takes the
    workspace's slot there leaves a lease nobody can name, which the server's repossessor frees once it lapses (the
    test harness runs no repossessor, so such a slot would be held for ever)."""
    skills = copy_examples(tmp_path / "skills", *SKILLS)
    commit_all(skills)
    env = dict(prefect_server, PREFECT_LOGGING_LEVEL="WARNING")
    return skills, tmp_path / "luban-workspace", env


def decided_edits(workspace: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Per skill: the strategies of kept edits, and the sha256 of every rejected edit."""
    kept, rejected = {}, {}
    for skill in SKILLS:
        rows = ResultsFile(workspace / "full" / skill / "results.tsv").rows() if (workspace / "full" / skill).exists() else []
        kept[skill] = [parse_note(r.note)[0].get("strategy", "") for r in rows if r.status == "keep"]
        buffer = rejected_edits.load(workspace / "full" / skill / "rejected_edits.md", skill, "")
        rejected[skill] = [e.sha256 for e in buffer.entries]
    return kept, rejected


def resume_and_check(skills: Path, workspace: Path, env: dict) -> None:
    kept_before, rejected_before = decided_edits(workspace)
    result = run_child(optimize_args(skills, "--resume"), env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert git.Repo(skills).git.status("--porcelain") == ""
    kept_after, rejected_after = decided_edits(workspace)
    for skill in SKILLS:
        assert len(kept_after[skill]) == len(set(kept_after[skill])), f"{skill}: a kept edit was made twice"
        assert kept_after[skill][: len(kept_before[skill])] == kept_before[skill]
        assert rejected_after[skill][: len(rejected_before[skill])] == rejected_before[skill], f"{skill}: a rejection was lost"


def test_a_kill_at_each_ratchet_step_in_turn_loses_nothing_and_resume_continues(setup):
    """One run killed at each step in the order a run reaches them, each next one resuming the last."""
    skills, workspace, env = setup
    for number, (step, (qualname, event, nth, needle)) in enumerate(STEPS.items()):
        if step == "mid-meta-review":
            continue  # its own test: it needs a finished run before it
        args = optimize_args(skills, "--init-git") if number == 0 else optimize_args(skills, "--resume")
        killed = run_child(args, env, kill_at=f"{qualname}:{event}:{nth}:{needle}")
        assert killed.returncode == -signal.SIGKILL, f"the run was not killed at {step}: {killed.stderr[-2000:]}"
        assert_consistent_after_a_crash(skills, workspace)
    resume_and_check(skills, workspace, env)


def test_a_kill_in_the_meta_review_loses_nothing_and_resume_continues(setup):
    skills, workspace, env = setup
    assert run_child(optimize_args(skills, "--init-git", "--max-rounds", "1"), env).returncode == 0
    qualname, event, nth, needle = STEPS["mid-meta-review"]
    killed = run_child(optimize_args(skills), env, kill_at=f"{qualname}:{event}:{nth}:{needle}")
    assert killed.returncode == -signal.SIGKILL, f"the run was not killed in the meta-review: {killed.stderr[-2000:]}"
    assert_consistent_after_a_crash(skills, workspace)
    resume_and_check(skills, workspace, env)


def test_kills_at_random_instants_lose_nothing_and_resume_continues(setup):
    skills, workspace, env = setup
    rng = random.Random(20261202)
    for _attempt in range(3):
        args = optimize_args(skills, "--resume" if (workspace / "full").exists() else "--init-git")
        child = start_child(args, child_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # A random instant once the run is under way: a fixed delay from the start lands before the
        # first record on a loaded machine (Prefect's ephemeral server alone can take several seconds).
        under_way = time.monotonic() + 90
        while not (workspace / "full").exists() and child.poll() is None and time.monotonic() < under_way:
            time.sleep(0.1)
        time.sleep(rng.uniform(0.5, 5.0))
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        if (skills / ".git").exists() and any(skills.glob("*/SKILL.md")):
            assert_consistent_after_a_crash(skills, workspace)
    if (workspace / "full").exists():
        resume_and_check(skills, workspace, env)
    else:
        pytest.fail("no run got far enough to record anything before its kill: raise the kill delays")

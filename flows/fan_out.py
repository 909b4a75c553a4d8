"""Phase 2 on several skills at once (``--parallel N``): each skill in its own git worktree and branch.

Skills never share a file, so their ratchets are independent: in full mode
each runs in a worktree of the skills repository on a branch of its own
(``<batch branch>--<skill>``), so no two share an index or a branch. When all
are done, the batch merges their branches into its own one at a time, in
baseline order, and then takes the cross-skill steps the serial loop takes
(the skill checkpoints, the exploratory-rewrite trigger) in that same order.
Quick mode keeps every skill's backups apart already and needs no worktree.

A batch killed while skills run in worktrees is gathered the same way by
``--resume``: each worktree's committed state is merged, its undecided edit
dropped, and the skills that had not finished are forked again.

Offline, a parallel batch ends with the tree and rows a serial one ends with.
Online, each keep decision reads the judges' noise pooled over the samples
taken so far, which then depends on how far the other skills have got.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TypeVar

import git

from flows.context import Run, SkillOutcome
from workspace.git_ratchet import GitRatchet, identity_env
from workspace.layout import Workspace

T = TypeVar("T")
R = TypeVar("R")
SEPARATOR = "--"  # between the batch branch and the skill, in a skill's branch name


def fan_out(run: Run, order: list[str], optimize_one) -> dict[str, SkillOutcome]:
    """``optimize_one(child_run, skill)`` for every skill in ``order``, at most ``run.options.parallel`` at once;
    in full mode each in its own worktree, merged back in ``order`` before this returns. With ``fan_out_to``
    (full mode), each skill's rounds run as a child flow run of that deployment instead (flows/skill_flow.py)."""
    children = {skill: fork(run, skill) for skill in order}
    if run.options.fan_out_to and isinstance(run.ratchet, GitRatchet):  # each skill a child flow run on the pool
        from flows.skill_flow import in_child_flow_run

        optimize_one = partial(in_child_flow_run, run)
    elif run.options.fan_out_to:
        run.notices.append("--fan-out-to: quick mode has no worktrees to hand to workers; the skills ran side by side "
                           "on this machine instead")
    outcomes, errors = {}, []
    for skill, future in zip(order, _in_threads(run.options.parallel, order, lambda s: optimize_one(children[s], s)),
                             strict=True):
        try:
            outcomes[skill] = future.result()
        except Exception as err:  # noqa: BLE001 - every other skill's work is merged before the first error is raised
            errors.append(err)
    gather(run, order)
    if errors:
        raise errors[0]
    return outcomes


def side_by_side(run: Run, items: list[T], step: Callable[[T], R]) -> list[R]:
    """``[step(item) for item in items]``, up to ``run.options.parallel`` at once (in order of ``items``).

    For the per-skill steps outside the ratchet (test prompts, baselines, held-out grades): each touches only
    its own skill's files and records, and the run's shared maps are keyed by skill."""
    if run.options.parallel <= 1 or len(items) <= 1:
        return [step(item) for item in items]
    return [future.result() for future in _in_threads(run.options.parallel, items, step)]


def _in_threads(workers: int, items: list[T], step: Callable[[T], R]) -> list[Future[R]]:
    """``step`` on every item, ``workers`` threads at once, all finished when this returns. Each call runs in a
    copy of the caller's context, so Prefect's task submissions and run logger work inside it."""
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="luban-skill") as pool:
        return [pool.submit(contextvars.copy_context().run, step, item) for item in items]


def fork(run: Run, skill: str) -> Run:
    """A run for one skill: in full mode, its own worktree and branch, forked from the batch branch's HEAD."""
    if not isinstance(run.ratchet, GitRatchet):
        return replace(run)
    main = run.ratchet
    branch = f"{main.branch}{SEPARATOR}{skill}"
    path = worktree_root(run) / skill
    if path.exists():  # a worktree a killed batch left: gather() takes its commits first
        raise RuntimeError(f"{path} exists: run with --resume to gather the interrupted batch first")
    main.repo.git.worktree("add", "-b", branch, str(path), "HEAD")
    repo = git.Repo(path)
    skills_dir = path / os.path.relpath(run.workspace.skills_dir, str(main.repo.working_tree_dir))
    workspace = Workspace(skills_dir.resolve(), run.workspace.root, run.workspace.mode)
    ratchet = GitRatchet(workspace, repo, branch, main.repo.head.commit.hexsha, [skill])
    return replace(run, workspace=workspace, ratchet=ratchet)


def worktree_root(run: Run) -> Path:
    assert isinstance(run.ratchet, GitRatchet)
    return run.workspace.root / "worktrees" / run.ratchet.branch.replace("/", "_")


def gather(run: Run, order: list[str] | None = None) -> list[str]:
    """Merge every skill branch of this batch into the batch branch (in ``order``, else by name) and remove their
    worktrees; an edit a worktree holds but never decided is dropped with it. The skills merged."""
    if not isinstance(run.ratchet, GitRatchet):
        return []
    main = run.ratchet
    prefix = f"{main.branch}{SEPARATOR}"
    rank = {skill: i for i, skill in enumerate(order or [])}
    branches = sorted((h.name for h in main.repo.heads if h.name.startswith(prefix)),
                      key=lambda b: (rank.get(b[len(prefix):], len(rank)), b))
    merged = []
    for branch in branches:
        skill = branch[len(prefix):]
        path = worktree_root(run) / skill
        if path.exists():
            main.repo.git.worktree("remove", "--force", str(path))
        if not main.repo.is_ancestor(main.repo.heads[branch].commit, main.repo.head.commit):
            with main.repo.git.custom_environment(**identity_env(main.repo)):
                main.repo.git.merge("--no-ff", "--no-edit", "-m", f"merge: {skill} (its rounds ran in a worktree)", branch)
            merged.append(skill)
        main.repo.git.branch("-D", branch)
    main.repo.git.worktree("prune")
    return merged

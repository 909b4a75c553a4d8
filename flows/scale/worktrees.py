"""A skill's own git worktree and branch, forked from the batch branch and merged back into it."""

from __future__ import annotations

import os
from pathlib import Path

import git

from flows.state.run import Run
from workspace.git_ratchet import GitRatchet
from workspace.git_repository import SKILL_BRANCH_SEPARATOR, identity_env
from workspace.layout import Workspace


def fork(run: Run, skill: str) -> Run:
    """A run for one skill: in full mode, its own worktree and branch, forked from the batch branch's HEAD."""
    main = run.ratchet.git if run.ratchet else None
    if main is None:
        return run.for_skill()
    branch = f"{main.branch}{SKILL_BRANCH_SEPARATOR}{skill}"
    path = worktree_root(run) / skill
    if path.exists():  # a worktree a killed batch left: gather() takes its commits first
        raise RuntimeError(f"{path} exists: run with --resume to gather the interrupted batch first")
    main.repo.git.worktree("add", "-b", branch, str(path), "HEAD")
    repo = git.Repo(path)
    skills_dir = path / os.path.relpath(run.workspace.skills_dir, str(main.repo.working_tree_dir))
    workspace = Workspace(skills_dir.resolve(), run.workspace.root, run.workspace.mode)
    ratchet = GitRatchet(workspace, repo, branch, main.repo.head.commit.hexsha, [skill])
    return run.for_skill(workspace=workspace, ratchet=ratchet)


def worktree_root(run: Run) -> Path:
    git = run.ratchet.git if run.ratchet else None
    assert git is not None, "worktrees exist only in full mode"
    return run.workspace.root / "worktrees" / git.branch.replace("/", "_")


def gather(run: Run, order: list[str] | None = None) -> list[str]:
    """Merge every skill branch of this batch into the batch branch (in ``order``, else by name) and remove their
    worktrees; an edit a worktree holds but never decided is dropped with it. The skills merged."""
    main = run.ratchet.git if run.ratchet else None
    if main is None:
        return []
    prefix = f"{main.branch}{SKILL_BRANCH_SEPARATOR}"
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

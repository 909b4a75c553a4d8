"""Real git repositories for tests: a fixed identity, and everything under a folder committed in a fresh repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from tests.conftest import REPO_ROOT

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def commit_all(root: Path, message: str = "skills", branch: str = "main") -> git.Repo:
    """A fresh repository at ``root`` (on ``branch``) with everything under it committed as the test identity."""
    repo = git.Repo.init(root, initial_branch=branch)
    repo.git.add(A=True)
    repo.git.commit("-m", message, env=GIT_IDENTITY)
    return repo


def copy_examples(skills: Path, *names: str) -> Path:
    """Shipped example skills copied into ``skills`` (the repository's own skills are read-only input)."""
    for name in names:
        shutil.copytree(REPO_ROOT / "skills" / name, skills / name)
    return skills


def commit_subjects(repo: git.Repo) -> list[str]:
    """Every commit's subject, from a branch or from the reflog alone: a run whose kept edits were all undone ends
    with no change, and its branch is deleted (workspace/run_branches.py); its commits stay in the reflog."""
    return repo.git.log("--all", "--reflog", "--format=%s").splitlines()

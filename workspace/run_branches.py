"""A full run's branch from start to hand-off: what it is based on, what it changed, how to merge it; and the
housekeeping of the ``auto-optimize/*`` branches runs leave behind.

- A run that kept nothing leaves no branch: its tree is the one it started from, so the checkout goes back to the
  branch it started on (the files do not change) and the run branch is deleted.
- A run that kept something ends with its branch ready for review: the base branch and commit, every file it
  changed with the lines added and removed, and the commands to merge it or open a pull request.
- Once a run branch is merged into the branch a later run starts from, that run deletes it (``git branch -d``:
  git itself refuses a branch that is not merged, or is checked out in another worktree).
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass

import git

from workspace.git_repository import BRANCH_PREFIX


@dataclass(frozen=True)
class ChangedFile:
    path: str
    added: int
    removed: int


@dataclass(frozen=True)
class Handoff:
    """What a full run hands to its reviewer."""

    branch: str | None  # None: the run kept nothing, and left no branch
    base: str | None  # the branch the run started on (None: a detached HEAD)
    original: str  # the commit it started from
    files: tuple[ChangedFile, ...] = ()
    merge: str | None = None
    pull_request: str | None = None

    def lines(self) -> list[str]:
        if self.branch is None:
            return [f"nothing kept: no branch left; still on {self.base or self.original[:12]}"]
        changed = ", ".join(f"{f.path} (+{f.added} −{f.removed})" for f in self.files) or "no file"
        return [f"branch {self.branch}, based on {self.base or 'a detached HEAD'} at {self.original[:12]}",
                f"changed: {changed}", f"merge: {self.merge}", f"or open a pull request: {self.pull_request}"]


def changed_files(repo: git.Repo, original: str, branch: str) -> tuple[ChangedFile, ...]:
    """Files that differ between ``original`` and ``branch``, with lines added and removed (``git diff --numstat``)."""
    found = []
    for line in repo.git.diff("--numstat", original, branch).splitlines():
        added, removed, path = line.split("\t", 2)
        found.append(ChangedFile(path, int(added) if added.isdigit() else 0, int(removed) if removed.isdigit() else 0))
    return tuple(found)


def file_at(repo: git.Repo, rev: str, path: str) -> bytes | None:
    """The file's bytes at ``rev`` (None: it did not exist there)."""
    try:
        return (repo.commit(rev).tree / path).data_stream.read()
    except KeyError:
        return None


def hand_off(repo: git.Repo, branch: str, base: str | None, original: str, drop_when_empty: bool) -> Handoff:
    """The run's branch ready for review; or, when it changed nothing and ``drop_when_empty``, gone."""
    files = changed_files(repo, original, branch)
    if not files and drop_when_empty:
        repo.git.checkout(base or original)  # the same tree: no file in the work tree changes
        repo.git.branch("-D", branch)  # -D: its pre-edit commits are not on the base, and hold nothing it lacks
        return Handoff(None, base, original)
    target = base or original[:12]
    merge = f"git switch {shlex.quote(target)} && git merge --no-ff {shlex.quote(branch)}"
    pull_request = (f"git push -u origin {shlex.quote(branch)} && gh pr create --base {shlex.quote(target)} "
                    f"--head {shlex.quote(branch)} --title {shlex.quote(f'Luban: {branch}')}")
    return Handoff(branch, base, original, files, merge, pull_request)


def delete_merged(repo: git.Repo, keep: str | None, base: str | None = None) -> list[str]:
    """Delete the ``auto-optimize/*`` branches already merged into HEAD, but ``keep`` (the run's own) and ``base`` (the
    branch the run started from: an earlier run's, built on and not merged anywhere yet); their names."""
    deleted = []
    for head in [h for h in repo.heads if h.name.startswith(BRANCH_PREFIX) and h.name not in (keep, base)]:
        if not repo.is_ancestor(head.commit, repo.head.commit):
            continue
        with contextlib.suppress(git.GitCommandError):  # checked out in another worktree: git keeps it, and so do we
            repo.git.branch("-d", head.name)
            deleted.append(head.name)
    return deleted

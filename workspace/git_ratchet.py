"""The git side of the ratchet (full mode): every change keepable or reversible at any instant.

An edit's operations touch exactly one path, the file it changes (``<skill>/SKILL.md``, or a
Markdown file SKILL.md references): commits are made with ``git commit --only -- <path>`` so
files the user staged for other reasons stay staged and uncommitted, and a rollback is
``git checkout <rev> -- <path>``, never ``reset --hard``. Undoing a keep and restoring the
original work on the skill's folder, whichever of its files the keeps changed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import git

from workspace.atomic import atomic_write, remove_stale_temps
from workspace.git_repository import (
    BRANCH_PREFIX,
    GitStateError,
    check_state,
    dirty_files,
    identity_env,
    interrupted_own_merge,
    open_repository,
    refuse_dirty,
)
from workspace.layout import Workspace, stamped_names
from workspace.lock import held_by, repository_lock
from workspace.skill_source import SKILL_FILE

EDIT_TRAILER = "Luban-Edit:"
# after the skill: a keep's gain, an undo's target, a restore's revision and reason
_SUBJECT_TAIL = re.compile(r" (\+-?[0-9.]+ \[[^\]]*\]|\(undo [0-9a-f]+\)|\(to [0-9a-f]+: [^)]*\))$")


class CommitKind(StrEnum):
    """What a run's commit did: its subject starts with this (``optimize: <skill> +1.5 [dim3]``)."""

    OPTIMIZE = "optimize"  # a kept edit (its edit in the Luban-Edit trailer) or a kept rewrite
    HELD_OUT_ROLLBACK = "held-out-rollback"  # held-out Step B undid the last keep
    RESTORE_ORIGINAL = "restore-original"  # the skill put back as the run found it
    PRE_EDIT = "pre-edit"  # the file as it was before an edit, so the edit can be undone


_KINDS = frozenset(kind.value for kind in CommitKind)


@dataclass(frozen=True)
class LubanCommit:
    sha: str
    kind: CommitKind
    skill: str
    edit: dict[str, Any] | None  # a keep's edit (None for a rewrite, or a commit made before edits were recorded)


@dataclass
class GitRatchet:
    workspace: Workspace
    repo: git.Repo
    branch: str
    original: str  # the commit the run started from
    skills: list[str] = field(default_factory=list)
    base: str | None = None  # the branch the run started on (None: a detached HEAD), where its hand-off merges
    # What HEAD holds for each (skill, file) this ratchet committed or checked out: a pre-edit commit of an
    # unchanged file is skipped (one commit fewer per round); a file changed since, by anyone, is committed.
    _at_head: dict[tuple[str, str], bytes] = field(default_factory=dict, repr=False)
    _identity: dict[str, str] | None = field(default=None, repr=False)
    # GitPython reads objects through one long-lived `git cat-file` pipe per Repo, which two threads must not share
    # (--parallel records several skills' baseline rows at once): reads of HEAD from the run take this lock.
    _reading: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(cls, workspace: Workspace, skills: list[str], now: datetime,
              before_switch: Callable[[str, str, str | None], None] = lambda branch, original, base: None) -> GitRatchet:
        """Check the repository, refuse dirty skills, and switch to a new run branch.

        ``before_switch(branch, original, base)`` records the run before the branch exists, so a kill at any instant
        leaves either no branch or a branch whose run --resume can find."""
        repo = open_repository(workspace.skills_dir)
        check_state(repo)
        for skill in skills:  # a killed run's half-written temp files are not the user's changes
            remove_stale_temps(workspace.skill_file(skill).parent)
        for skill in skills:
            refuse_dirty(repo, skill, workspace.skill_file(skill).parent)
        branch = _free_branch_name(repo, now)
        original = repo.head.commit.hexsha
        base = None if repo.head.is_detached else repo.active_branch.name
        before_switch(branch, original, base)
        repo.git.checkout("-b", branch)  # keeps unrelated dirty files as they are
        return cls(workspace, repo, branch, original, list(skills), base)

    @classmethod
    def resume(cls, workspace: Workspace, skills: list[str], original: str,
               base: str | None = None) -> tuple[GitRatchet, list[str]]:
        """Continue on the current auto-optimize branch; an edit applied but never decided is rolled back."""
        repo = open_repository(workspace.skills_dir)
        check_state(repo, resuming=True)
        if interrupted_own_merge(repo) is not None:
            repo.git.merge("--abort")  # the skill's branch is still there: the resume's gather merges it again, whole
        branch = repo.active_branch.name
        if not branch.startswith(BRANCH_PREFIX):
            raise GitStateError(f"--resume: {repo.working_tree_dir} is on '{branch}', not an {BRANCH_PREFIX}* branch; "
                                "check out the run's branch first (git switch auto-optimize/…)")
        ratchet = cls(workspace, repo, branch, original, list(skills), base)
        undone = []
        for skill in skills:
            remove_stale_temps(workspace.skill_file(skill).parent)
            if dirty_files(repo, workspace.skill_file(skill).parent):  # an edit of SKILL.md or of a file it references
                repo.git.checkout(repo.head.commit.hexsha, "--", ratchet._folder(skill))
                undone.append(skill)
        return ratchet, undone

    def head_sha(self) -> str:
        with self._reading:
            return self.repo.head.commit.hexsha

    @property
    def git(self) -> GitRatchet:
        return self

    def kept_text(self, skill: str, file: str = SKILL_FILE) -> tuple[bytes | None, str]:
        return self.committed_text(skill, file=file), self.last_commit(skill)[:12]

    def _file(self, skill: str, file: str) -> Path:
        return self.workspace.skill_file(skill).parent / file

    def _path(self, skill: str, file: str = SKILL_FILE) -> str:
        return os.path.relpath(self._file(skill, file), self.repo.working_tree_dir)

    def _folder(self, skill: str) -> str:
        return os.path.relpath(self.workspace.skill_file(skill).parent, self.repo.working_tree_dir)

    def _commit_only(self, skill: str, message: str, path: str) -> str:
        if self._identity is None:  # asked once per run: each question is a git process
            self._identity = identity_env(self.repo)
        self.repo.git.add("--", path)
        with self.repo.git.custom_environment(**self._identity):
            self.repo.git.commit("--allow-empty", "--no-verify", "-m", message, "--only", "--", path)
        self._at_head = {k: v for k, v in self._at_head.items() if k[0] != skill}  # a folder commit: read again
        return self.repo.head.commit.hexsha

    def _remember(self, skill: str, file: str) -> None:
        self._at_head[skill, file] = self._file(skill, file).read_bytes()

    def write_skill(self, skill: str, text: str | bytes, file: str = SKILL_FILE) -> None:
        """The one way an edit reaches a skill's file: an atomic write of that one file."""
        atomic_write(self._file(skill, file), text)

    def pre_edit(self, skill: str, file: str = SKILL_FILE) -> str:
        """Commit the file as it is so the edit that follows can always be undone (unless HEAD has it already)."""
        if self._at_head.get((skill, file)) == self._file(skill, file).read_bytes():
            return self.repo.head.commit.hexsha
        sha = self._commit_only(skill, f"{CommitKind.PRE_EDIT}: {skill}", self._path(skill, file))
        self._remember(skill, file)
        return sha

    def keep(self, skill: str, delta: float, dim: str, edit: dict[str, Any] | None = None, file: str = SKILL_FILE) -> str:
        """Commit the kept version of the edited file; the edit rides in the message (``Luban-Edit:``), so the run's
        kept edits can be read back from git after any interruption (held-out Step B rejects the very edit it undoes)."""
        trailer = f"\n\n{EDIT_TRAILER} {json.dumps(edit, sort_keys=True)}" if edit else ""
        sha = self._commit_only(skill, f"{CommitKind.OPTIMIZE}: {skill} +{delta:.1f} [{dim}]{trailer}", self._path(skill, file))
        self._remember(skill, file)
        return sha

    def history(self) -> list[LubanCommit]:
        """This run's commits on its branch, oldest first: what was kept, undone and restored, and with which edit."""
        found = []
        for commit in self.repo.iter_commits(f"{self.original}..HEAD", reverse=True):
            subject, _, body = str(commit.message).partition("\n")
            kind, _, rest = subject.partition(": ")
            if kind not in _KINDS or not rest:
                continue
            edit = next((json.loads(line[len(EDIT_TRAILER):]) for line in body.splitlines() if line.startswith(EDIT_TRAILER)), None)
            found.append(LubanCommit(commit.hexsha, CommitKind(kind), _SUBJECT_TAIL.sub("", rest), edit))
        return found

    def last_commit(self, skill: str) -> str:
        """The newest commit that changed this skill's files (the keep a pending row belongs to)."""
        return next(self.repo.iter_commits("HEAD", paths=self._folder(skill), max_count=1)).hexsha

    def rollback(self, skill: str, file: str = SKILL_FILE) -> str:
        """Put back the last committed (kept) version of this one file; commits nothing."""
        head = self.repo.head.commit.hexsha
        self.repo.git.checkout(head, "--", self._path(skill, file))
        self._remember(skill, file)
        return head

    def rollback_to_previous_keep(self, skill: str) -> str:
        """Undo the last kept edit (held-out Step B): the skill's files as they were before that keep, committed."""
        folder = self._folder(skill)
        for commit in self.repo.iter_commits(f"{self.original}..HEAD", paths=folder):
            if str(commit.message).startswith(f"{CommitKind.OPTIMIZE}: {skill} "):
                self.repo.git.checkout(f"{commit.hexsha}^", "--", *self._changed_by(commit.hexsha, folder))
                return self._commit_only(skill, f"{CommitKind.HELD_OUT_ROLLBACK}: {skill} (undo {commit.hexsha[:12]})",
                                         folder)
        return self.repo.head.commit.hexsha  # nothing kept in this run: nothing to undo

    def _changed_by(self, sha: str, folder: str) -> list[str]:
        """The paths under ``folder`` a commit changed (a keep changes one file)."""
        changed = self.repo.git.diff_tree("--no-commit-id", "--name-only", "-r", sha, "--", folder)
        return [line for line in changed.splitlines() if line] or [folder]

    def restore_original(self, skill: str) -> str:
        """Return the skill to its state before the run, recorded as a commit on the run branch."""
        folder = self._folder(skill)
        self.repo.git.checkout(self.original, "--", folder)
        return self._commit_only(skill, f"{CommitKind.RESTORE_ORIGINAL}: {skill}", folder)

    def restore_to(self, skill: str, revision: str, why: str) -> str:
        """Return the skill's folder to its state at ``revision`` of this run (a routing run's validation choosing an
        earlier kept version), recorded as a commit on the run branch."""
        folder = self._folder(skill)
        self.repo.git.checkout(revision, "--", folder)
        return self._commit_only(skill, f"{CommitKind.RESTORE_ORIGINAL}: {skill} (to {revision[:12]}: {why})", folder)

    def original_text(self, skill: str) -> bytes:
        return self.committed_text(skill, self.original)

    def committed_text(self, skill: str, rev: str = "HEAD", file: str = SKILL_FILE) -> bytes:
        blob = self.repo.commit(rev).tree / self._path(skill, file).replace(os.sep, "/")
        return blob.data_stream.read()


def _free_branch_name(repo: git.Repo, now: datetime) -> str:
    existing = {h.name for h in repo.heads}
    return next(name for name in stamped_names(BRANCH_PREFIX + now.strftime("%Y%m%d-%H%M")) if name not in existing)


def asked_on_branch(skills_dir: Path) -> str | None:
    """The branch a run is asked on (None outside git or on a detached HEAD): where it starts if it has to queue.

    Asked while another run works in the checkout, the branch checked out is that run's own; the run was then
    asked on the branch that run was asked on, which it wrote into the repository's lock. Read as early as
    possible: once the other run finishes, its branch is what is checked out, and nothing says it was not asked."""
    try:
        repo = open_repository(skills_dir)
        current = None if repo.head.is_detached else repo.active_branch.name
    except (GitStateError, TypeError):
        return None
    if current and current.startswith(BRANCH_PREFIX):
        holder = held_by(repository_lock(Path(repo.common_dir), Path(str(repo.working_tree_dir))).path) or {}
        return holder.get("asked_on") or current
    return current

"""The git side of the ratchet (full mode): every change keepable or reversible at any instant.

Each operation touches exactly one path, ``<skill>/SKILL.md``: commits are made
with ``git commit --only -- <path>`` so files the user staged for other reasons
stay staged and uncommitted, and a rollback is ``git checkout <rev> -- <path>``,
never ``reset --hard``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import git

from workspace.atomic import TEMP_SUFFIX, atomic_write, remove_stale_temps
from workspace.layout import Workspace

BRANCH_PREFIX = "auto-optimize/"
_FALLBACK_IDENTITY = {"GIT_AUTHOR_NAME": "Luban", "GIT_AUTHOR_EMAIL": "luban@localhost"}


class GitStateError(RuntimeError):
    """The skills repository is not in a state a run can safely start from; the message says the fix."""


class DirtySkillError(GitStateError):
    def __init__(self, skill: str, files: list[str], repo_root: Path, directory: Path):
        self.skill, self.files = skill, files
        listing = "\n".join(f"  {f}" for f in files)
        super().__init__(
            f"skill '{skill}' has uncommitted changes; commit or stash them first "
            f"({stash_hint(repo_root, directory)}):\n{listing}"
        )


def stash_hint(repo_root: Path, directory: Path, cwd: Path | None = None) -> str:
    """A `git stash` command that works from the current directory: git reads a pathspec relative to it."""
    here = (cwd or Path.cwd()).resolve()
    root = repo_root.resolve()
    if here == root or root in here.parents:
        return f"git stash push -- {shlex.quote(os.path.relpath(directory.resolve(), here))}"
    where = os.path.relpath(root, here)
    where = str(root) if where.startswith("..") else where  # above the current directory: the absolute path reads better
    return f"git -C {shlex.quote(where)} stash push -- {shlex.quote(os.path.relpath(directory.resolve(), root))}"


def not_a_repository_message(skills_dir: Path) -> str:
    return (
        f"{skills_dir} is not inside a git work tree, and full mode keeps every edit in git.\n"
        "  Either: luban optimize --init-git …   (initialise a repository and commit the current state)\n"
        "  Or:     luban optimize --mode quick … (file backups, no git)"
    )


def init_repository(skills_dir: Path) -> str:
    """``--init-git``: make the skills directory a repository holding its current state."""
    repo = git.Repo.init(skills_dir)
    repo.git.add("--all", "--", ".")
    with repo.git.custom_environment(**identity_env(repo)):
        repo.git.commit("--allow-empty", "-m", "luban: initial state of the skills")
    return repo.head.commit.hexsha


def identity_env(repo: git.Repo) -> dict[str, str]:
    """Commit as the user when git knows who they are; otherwise as Luban (CI has no identity)."""
    env: dict[str, str] = {}
    if not (os.environ.get("GIT_AUTHOR_NAME") or _git_knows(repo, "user.name")):
        env.update(GIT_AUTHOR_NAME=_FALLBACK_IDENTITY["GIT_AUTHOR_NAME"], GIT_COMMITTER_NAME="Luban")
    if not (os.environ.get("GIT_AUTHOR_EMAIL") or _git_knows(repo, "user.email")):
        env.update(GIT_AUTHOR_EMAIL=_FALLBACK_IDENTITY["GIT_AUTHOR_EMAIL"], GIT_COMMITTER_EMAIL="luban@localhost")
    return env


def _git_knows(repo: git.Repo, key: str) -> bool:
    """Ask git itself (it honours GIT_CONFIG_GLOBAL and includes, which a file reader would miss)."""
    try:
        return bool(repo.git.config("--get", key).strip())
    except git.GitCommandError:
        return False


EDIT_TRAILER = "Luban-Edit:"
_SUBJECT_TAIL = re.compile(r" (\+-?[0-9.]+ \[[^\]]*\]|\(undo [0-9a-f]+\))$")  # after the skill: a keep's gain, an undo's target


@dataclass(frozen=True)
class LubanCommit:
    KINDS: ClassVar[frozenset[str]] = frozenset({"optimize", "held-out-rollback", "restore-original", "pre-edit"})

    sha: str
    kind: str
    skill: str
    edit: dict[str, Any] | None  # a keep's edit (None for a rewrite, or a commit made before edits were recorded)


@dataclass
class GitRatchet:
    workspace: Workspace
    repo: git.Repo
    branch: str
    original: str  # the commit the run started from
    skills: list[str] = field(default_factory=list)
    # What HEAD holds for each SKILL.md this ratchet committed or checked out: a pre-edit commit of an
    # unchanged file is skipped (one commit fewer per round); a file changed since, by anyone, is committed.
    _at_head: dict[str, bytes] = field(default_factory=dict, repr=False)
    _identity: dict[str, str] | None = field(default=None, repr=False)
    # GitPython reads objects through one long-lived `git cat-file` pipe per Repo, which two threads must not share
    # (--parallel records several skills' baseline rows at once): reads of HEAD from the run take this lock.
    _reading: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def start(cls, workspace: Workspace, skills: list[str], now: datetime,
              before_switch: Callable[[str, str], None] = lambda branch, original: None) -> GitRatchet:
        """Check the repository, refuse dirty skills, and switch to a new run branch.

        ``before_switch(branch, original)`` records the run before the branch exists, so a kill at any instant
        leaves either no branch or a branch whose run --resume can find."""
        repo = open_repository(workspace.skills_dir)
        check_state(repo)
        for skill in skills:  # a killed run's half-written temp files are not the user's changes
            remove_stale_temps(workspace.skill_file(skill).parent)
        for skill in skills:
            refuse_dirty(repo, skill, workspace.skill_file(skill).parent)
        branch = _free_branch_name(repo, now)
        original = repo.head.commit.hexsha
        before_switch(branch, original)
        repo.git.checkout("-b", branch)  # keeps unrelated dirty files as they are
        return cls(workspace, repo, branch, original, list(skills))

    @classmethod
    def resume(cls, workspace: Workspace, skills: list[str], original: str) -> tuple[GitRatchet, list[str]]:
        """Continue on the current auto-optimize branch; an edit applied but never decided is rolled back."""
        repo = open_repository(workspace.skills_dir)
        check_state(repo)
        branch = repo.active_branch.name
        if not branch.startswith(BRANCH_PREFIX):
            raise GitStateError(f"--resume: {repo.working_tree_dir} is on '{branch}', not an {BRANCH_PREFIX}* branch; "
                                "check out the run's branch first (git switch auto-optimize/…)")
        ratchet = cls(workspace, repo, branch, original, list(skills))
        undone = []
        for skill in skills:
            remove_stale_temps(workspace.skill_file(skill).parent)
            if dirty_files(repo, workspace.skill_file(skill)):
                ratchet.rollback(skill)
                undone.append(skill)
        return ratchet, undone

    def head_sha(self) -> str:
        with self._reading:
            return self.repo.head.commit.hexsha

    def _path(self, skill: str) -> str:
        return os.path.relpath(self.workspace.skill_file(skill), self.repo.working_tree_dir)

    def _commit_only(self, skill: str, message: str) -> str:
        path = self._path(skill)
        if self._identity is None:  # asked once per run: each question is a git process
            self._identity = identity_env(self.repo)
        self.repo.git.add("--", path)
        with self.repo.git.custom_environment(**self._identity):
            self.repo.git.commit("--allow-empty", "--no-verify", "-m", message, "--only", "--", path)
        self._remember(skill)
        return self.repo.head.commit.hexsha

    def _remember(self, skill: str) -> None:
        self._at_head[skill] = self.workspace.skill_file(skill).read_bytes()

    def write_skill(self, skill: str, text: str | bytes) -> None:
        """The one way an edit reaches a SKILL.md: an atomic write of that one file."""
        atomic_write(self.workspace.skill_file(skill), text)

    def pre_edit(self, skill: str) -> str:
        """Commit the current SKILL.md so the edit that follows can always be undone (unless HEAD has it already)."""
        if self._at_head.get(skill) == self.workspace.skill_file(skill).read_bytes():
            return self.repo.head.commit.hexsha
        return self._commit_only(skill, f"pre-edit: {skill}")

    def keep(self, skill: str, delta: float, dim: str, edit: dict[str, Any] | None = None) -> str:
        """Commit the kept version; the edit rides in the message (``Luban-Edit:``), so the run's kept edits can be
        read back from git after any interruption (held-out Step B rejects the very edit it undoes)."""
        trailer = f"\n\n{EDIT_TRAILER} {json.dumps(edit, sort_keys=True)}" if edit else ""
        return self._commit_only(skill, f"optimize: {skill} +{delta:.1f} [{dim}]{trailer}")

    def history(self) -> list[LubanCommit]:
        """This run's commits on its branch, oldest first: what was kept, undone and restored, and with which edit."""
        found = []
        for commit in self.repo.iter_commits(f"{self.original}..HEAD", reverse=True):
            subject, _, body = str(commit.message).partition("\n")
            kind, _, rest = subject.partition(": ")
            if kind not in LubanCommit.KINDS or not rest:
                continue
            edit = next((json.loads(line[len(EDIT_TRAILER):]) for line in body.splitlines() if line.startswith(EDIT_TRAILER)), None)
            found.append(LubanCommit(commit.hexsha, kind, _SUBJECT_TAIL.sub("", rest), edit))
        return found

    def last_commit(self, skill: str) -> str:
        """The newest commit that changed this skill's file (the keep a pending row belongs to)."""
        return next(self.repo.iter_commits("HEAD", paths=self._path(skill), max_count=1)).hexsha

    def rollback(self, skill: str) -> str:
        """Put back the last committed (kept) version of this one file; commits nothing."""
        head = self.repo.head.commit.hexsha
        self.repo.git.checkout(head, "--", self._path(skill))
        self._remember(skill)
        return head

    def rollback_to_previous_keep(self, skill: str) -> str:
        """Undo the last kept edit (held-out Step B): the file as it was before that keep, committed."""
        path = self._path(skill)
        for commit in self.repo.iter_commits(f"{self.original}..HEAD", paths=path):
            if str(commit.message).startswith(f"optimize: {skill} "):
                self.repo.git.checkout(f"{commit.hexsha}^", "--", path)
                return self._commit_only(skill, f"held-out-rollback: {skill} (undo {commit.hexsha[:12]})")
        return self.repo.head.commit.hexsha  # nothing kept in this run: nothing to undo

    def restore_original(self, skill: str) -> str:
        """Return the skill to its state before the run, recorded as a commit on the run branch."""
        self.repo.git.checkout(self.original, "--", self._path(skill))
        return self._commit_only(skill, f"restore-original: {skill}")

    def committed_text(self, skill: str, rev: str = "HEAD") -> bytes:
        blob = self.repo.commit(rev).tree / self._path(skill).replace(os.sep, "/")
        return blob.data_stream.read()


def open_repository(skills_dir: Path) -> git.Repo:
    try:
        repo = git.Repo(skills_dir, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitStateError(not_a_repository_message(skills_dir)) from None
    if repo.bare or repo.working_tree_dir is None:
        raise GitStateError(not_a_repository_message(skills_dir))
    if Path(repo.working_tree_dir).resolve() != skills_dir.resolve() and _ignored(repo, skills_dir):
        # an enclosing repository that ignores the skills cannot version them (e.g. a scratch copy)
        raise GitStateError(not_a_repository_message(skills_dir) + f"\n  ({repo.working_tree_dir} git-ignores it)")
    return repo


def _ignored(repo: git.Repo, path: Path) -> bool:
    try:
        repo.git.check_ignore("-q", "--", os.path.relpath(path.resolve(), repo.working_tree_dir))
        return True
    except git.GitCommandError:
        return False


def check_state(repo: git.Repo) -> None:
    """Refuse states in which a branch and path checkouts would surprise the user."""
    git_dir = Path(repo.git_dir)
    for marker, what, verb in (("MERGE_HEAD", "a merge", "merge"), ("REBASE_HEAD", "a rebase", "rebase"),
                               ("CHERRY_PICK_HEAD", "a cherry-pick", "cherry-pick"), ("rebase-merge", "a rebase", "rebase"),
                               ("rebase-apply", "a rebase", "rebase")):
        if (git_dir / marker).exists():
            raise GitStateError(f"{repo.working_tree_dir}: {what} is in progress; finish it, or undo it with "
                                f"'git {verb} --abort', then run again")
    if repo.head.is_detached:
        raise GitStateError(
            f"{repo.working_tree_dir}: HEAD is detached at {repo.head.commit.hexsha[:12]}; "
            "check out a branch first (git switch <branch>)"
        )
    if not repo.head.is_valid():
        raise GitStateError(f"{repo.working_tree_dir}: the repository has no commits yet; commit the skills first, or use --init-git")


def refuse_dirty(repo: git.Repo, skill: str, directory: Path) -> None:
    """Raise DirtySkillError when the skill's folder holds the user's uncommitted changes (a killed run's temp files
    are not theirs: the run removes them under its lock)."""
    files = [f for f in dirty_files(repo, directory) if not f.endswith(TEMP_SUFFIX)]
    if files:
        raise DirtySkillError(skill, files, Path(str(repo.working_tree_dir)), directory)


def dirty_files(repo: git.Repo, directory: Path) -> list[str]:
    """Modified, staged or untracked files under ``directory``, as git lists them."""
    rel = os.path.relpath(directory, repo.working_tree_dir)
    out = repo.git.status("--porcelain", "--untracked-files=all", "--", rel)
    return [line[3:] for line in out.splitlines() if line.strip()]


def _free_branch_name(repo: git.Repo, now: datetime) -> str:
    base = BRANCH_PREFIX + now.strftime("%Y%m%d-%H%M")
    existing = {h.name for h in repo.heads}
    for candidate in (base, f"{base}-2", f"{base}-3"):
        if candidate not in existing:
            return candidate
    raise GitStateError(
        f"branches {base}, {base}-2 and {base}-3 all exist; wait a minute or delete old run branches "
        f"(git branch -D {base})"
    )

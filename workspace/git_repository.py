"""The repository the skills live in, as git sees it: found, checked, initialised, and refused with the fix —
a merge in progress, a detached HEAD, a skill with the user's uncommitted changes (the ratchet: git_ratchet.py)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import git

from workspace.atomic import TEMP_SUFFIX

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


BRANCH_PREFIX = "auto-optimize/"  # every run branch Luban makes, and the only branches it ever deletes
SKILL_BRANCH_SEPARATOR = "--"  # between a batch branch and a skill, in the name of the branch of the skill's worktree


def interrupted_own_merge(repo: git.Repo) -> str | None:
    """The branch whose merge a killed Luban batch left in progress: one of the current branch's own skill branches
    (merged back from their worktrees, flows/scale/worktrees.py), the one MERGE_HEAD names. None in any other state,
    a merge the user started included."""
    merge_head = Path(repo.git_dir) / "MERGE_HEAD"
    if not merge_head.exists() or repo.head.is_detached:
        return None
    merging = merge_head.read_text(encoding="utf-8").split()
    prefix = f"{repo.active_branch.name}{SKILL_BRANCH_SEPARATOR}"
    return next((h.name for h in repo.heads if h.name.startswith(prefix) and [h.commit.hexsha] == merging), None)


def check_state(repo: git.Repo, resuming: bool = False) -> None:
    """Refuse states in which a branch and path checkouts would surprise the user (``resuming``: a merge of the batch's
    own skill branch that a kill interrupted is the resume's to undo and redo, not the user's to finish)."""
    git_dir = Path(repo.git_dir)
    own_merge = resuming and interrupted_own_merge(repo) is not None
    for marker, what, verb in (("MERGE_HEAD", "a merge", "merge"), ("REBASE_HEAD", "a rebase", "rebase"),
                               ("CHERRY_PICK_HEAD", "a cherry-pick", "cherry-pick"), ("rebase-merge", "a rebase", "rebase"),
                               ("rebase-apply", "a rebase", "rebase")):
        if (git_dir / marker).exists() and not (own_merge and marker == "MERGE_HEAD"):
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

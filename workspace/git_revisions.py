"""Read SKILL.md files as they were at a git revision, for `luban score --changed`.

Uses GitPython, imported here and only here on the `score` path, so plain
`luban score` never pays for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workspace.skill_source import SKILL_FILE, SkillSource


class RevisionError(ValueError):
    """The repository or the base revision cannot be used; the message says why."""


@dataclass(frozen=True)
class ChangedSkill:
    """A SKILL.md that differs from the base: its path now, and its version at base (or None if new)."""

    path: Path
    at_base: SkillSource | None
    deleted: bool = False


def _open(start: Path, base: str):
    """(the repository ``start`` is in, the commit ``base`` names); RevisionError saying what to fix."""
    import git

    try:
        repo = git.Repo(start, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise RevisionError(f"{start}: not inside a git repository; --changed compares against git history") from None
    if repo.bare or repo.working_tree_dir is None:
        raise RevisionError(f"{start}: the repository has no work tree")
    try:
        commit = repo.commit(base)
    except (git.BadName, ValueError, git.GitCommandError):
        raise RevisionError(
            f"--base {base}: unknown revision; use a commit, a branch or a tag (in CI fetch it first, e.g. 'git fetch origin main')"
        ) from None
    return repo, commit


def changed_skills(start: Path, base: str, within: list[Path] | None = None) -> list[ChangedSkill]:
    repo, commit = _open(start, base)
    root = Path(repo.working_tree_dir)
    names = set(repo.git.diff("--name-only", "--no-renames", "-z", commit.hexsha, "--").split("\0"))
    names |= set(repo.untracked_files)
    scopes = [p.resolve() for p in within or []]
    changed = []
    for name in sorted(n for n in names if n and PurePosixPath(n).name == SKILL_FILE):
        path = root / name
        if scopes and not any(path.resolve() == s or s in path.resolve().parents for s in scopes):
            continue
        changed.append(ChangedSkill(path, _at_revision(commit, name), deleted=not path.exists()))
    return changed


def skills_at(start: Path, base: str) -> list[SkillSource]:
    """Every SKILL.md under the folder ``start`` as it was at ``base`` (the library a change is compared against)."""
    repo, commit = _open(start, base)
    inside = PurePosixPath(Path(start).resolve().relative_to(Path(repo.working_tree_dir).resolve()).as_posix())
    tree = commit.tree if str(inside) == "." else _subtree(commit.tree, str(inside))
    if tree is None:
        return []
    found = [item.path for item in tree.traverse() if item.type == "blob" and PurePosixPath(item.path).name == SKILL_FILE]
    return [source for name in sorted(found) if (source := _at_revision(commit, name)) is not None]


def _subtree(tree, path: str):
    try:
        return tree / path
    except KeyError:
        return None


def _at_revision(commit, name: str) -> SkillSource | None:
    """The skill's SKILL.md and file list at the commit, read from git objects only."""
    posix = PurePosixPath(name)
    try:
        blob = commit.tree / name
    except KeyError:
        return None
    skill_dir = str(posix.parent)
    files: set[str] = set()
    tree = commit.tree / skill_dir if skill_dir != "." else commit.tree
    for item in tree.traverse():
        if item.type == "blob":
            files.add(str(PurePosixPath(item.path).relative_to(skill_dir if skill_dir != "." else "")))
    data = blob.data_stream.read()
    return SkillSource(posix.parent.name or "root", f"{commit.hexsha[:12]}:{name}", data=data, files=frozenset(files))

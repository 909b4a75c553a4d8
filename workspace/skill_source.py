"""Find SKILL.md files on disk and read them, refusing what must not be read.

A skill that cannot be read becomes a ``SkillSource`` with an ``error`` that
names the file and the fix, so one bad skill never stops a batch. Reading is
bounded (never more than 2 MiB + 1 byte), only regular files are opened, and a
SKILL.md or reference that is a symlink out of its skill directory is not
followed: no skill can make Luban read outside it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from scoring.document import MAX_BYTES, UnreadableSkill, decode
from scoring.skill_view import SourceFile

SKILL_FILE = "SKILL.md"
_SKIP_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__"}
_MAX_LISTED_FILES = 20_000


@dataclass(frozen=True)
class SkillSource:
    name: str
    path: str
    data: bytes | None = None
    files: frozenset[str] = frozenset()
    error: str | None = None


def discover(paths: list[str]) -> list[SkillSource | Path]:
    """Each PATH as SKILL.md files (a file, a skill directory, or a tree to search).

    Paths that do not exist or hold no SKILL.md come back as error sources.
    """
    found: list[SkillSource | Path] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            found.append(SkillSource(path.parent.name or raw, raw, error=f"{raw}: no such file or directory; check the path"))
            continue
        if path.is_dir() and not (path / SKILL_FILE).exists():
            hits = sorted(_search(path))
            if not hits:
                found.append(SkillSource(path.name, raw, error=f"{raw}: no {SKILL_FILE} found in this directory or below it"))
            candidates = hits
        else:
            candidates = [path / SKILL_FILE if path.is_dir() else path]
        for candidate in candidates:
            key = candidate.absolute()
            if key not in seen:
                seen.add(key)
                found.append(candidate)
    return found


def _search(root: Path) -> list[Path]:
    hits = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.startswith(".")]
        if SKILL_FILE in filenames:
            hits.append(Path(dirpath) / SKILL_FILE)
    return hits


def read_skill(skill_file: Path) -> SkillSource:
    """Read one SKILL.md and list the files of its directory, without following escapes."""
    skill_dir = skill_file.parent
    name = skill_dir.absolute().name
    shown = str(skill_file)
    try:
        info = os.lstat(skill_file)
        if stat.S_ISLNK(info.st_mode):
            if not _inside(_resolve(skill_file), skill_dir.resolve()):
                return SkillSource(name, shown, error=f"{shown}: is a symlink to outside its skill directory; replace it "
                                   "with the file itself")
            info = os.stat(skill_file)
        if not stat.S_ISREG(info.st_mode):
            return SkillSource(name, shown, error=f"{shown}: is not a regular file")
        if info.st_size > MAX_BYTES:
            return SkillSource(name, shown, error=f"{shown}: is {info.st_size:,} bytes, over the 2 MiB limit; move detail into references/")
        data = read_at_most(skill_file, MAX_BYTES + 1)
    except OSError as err:
        return SkillSource(name, shown, error=f"{shown}: cannot be read ({err.strerror or err}); check it exists and is readable")
    return SkillSource(name, shown, data=data, files=list_files(skill_dir))


def read_at_most(path: str | os.PathLike[str], limit: int) -> bytes:
    """The first ``limit`` bytes of a regular file, however large it is (or grows while read); OSError for anything
    else. Opened without blocking (a FIFO opened to read waits for a writer: a skill could hang the gate), and asks
    for what the file's size says, not for ``limit``: a buffered read of n bytes allocates n first, and 2 MiB per
    small file cost four times the reading itself."""
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        size = info.st_size
        data = handle.read(min(size + 1, limit))
        return data + handle.read(limit - len(data)) if len(data) > size else data  # it grew while read


def list_files(skill_dir: Path) -> frozenset[str]:
    """POSIX paths, relative to the skill directory, of the files a reference may name.

    os.walk's top-down order and rules (a link to a directory is not entered), with os.scandir's entries read
    once: a file's type comes with its directory listing, so only a symlink costs a system call."""
    root: Path | None = None  # resolved when a link is met: most skills have none
    listed: set[str] = set()
    pending = [(os.fspath(skill_dir), "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue  # as os.walk: a folder that cannot be listed holds nothing to reference
        subfolders = []
        for entry in entries:
            if _is_dir(entry):
                if entry.name not in _SKIP_DIRS and not entry.is_symlink():
                    subfolders.append((entry.path, f"{prefix}{entry.name}/"))
                continue
            if entry.is_symlink():
                root = root or skill_dir.resolve()
                if not _inside(_resolve(Path(entry.path)), root):
                    continue  # a link out of the skill is not a file of the skill
            listed.add(prefix + entry.name)
            if len(listed) >= _MAX_LISTED_FILES:
                return frozenset(listed)
        pending.extend(reversed(subfolders))
    return frozenset(listed)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _resolve(path: Path) -> Path:
    """Where a link leads; a loop raises OSError (pathlib raises RuntimeError), which callers report."""
    try:
        return path.resolve()
    except RuntimeError as err:  # Python < 3.13: a symlink loop
        raise OSError(40, "too many levels of symbolic links (a symlink loop)", str(path)) from err


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def source_text(source: SkillSource) -> tuple[str | None, str | None]:
    """(the skill's text, None), or (None, why it cannot be scored): unreadable, too large, not UTF-8, empty."""
    if source.error is not None or source.data is None:
        return None, source.error or f"{source.path}: could not be read"
    try:
        return decode(source.data), None
    except UnreadableSkill as err:
        return None, f"{source.path}: {err}"


INLINE_BYTES = 64 * 1024  # a file larger than this is named to the judges, never inlined
SOURCE_FILES = 200  # at most this many files of one skill are read for its judges


def read_sources(skill_dir: Path, files: frozenset[str], limit: int = INLINE_BYTES) -> tuple[SourceFile, ...]:
    """The skill's files other than SKILL.md as its judges may read them: text (UTF-8, no NUL byte) up to ``limit``
    bytes, or why not. ``files`` from ``list_files``, so nothing outside the skill is opened."""
    sources = []
    for path in sorted(files - {SKILL_FILE})[:SOURCE_FILES]:
        try:
            data = read_at_most(skill_dir / path, limit + 1)
        except OSError as err:
            sources.append(SourceFile(path, None, f"unreadable: {err.strerror or err}"))
            continue
        if len(data) > limit:
            sources.append(SourceFile(path, None, f"over {limit // 1024} KB"))
        elif b"\0" in data:
            sources.append(SourceFile(path, None, "binary"))
        else:
            try:
                sources.append(SourceFile(path, data.decode("utf-8")))
            except UnicodeDecodeError:
                sources.append(SourceFile(path, None, "binary (not UTF-8)"))
    return tuple(sources)

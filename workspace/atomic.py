"""Crash-safe writes: a file on disk is always the old version or the new one, never a mix.

Every write goes to a temporary file in the target's own directory, is flushed
and fsynced, then renamed over the target (``os.replace`` is atomic on POSIX),
and the directory is fsynced so the rename itself survives a power cut.

The OS calls go through ``FileOps`` so tests can inject real ``OSError``s
(ENOSPC, EACCES, EXDEV) and prove the fallbacks, without mocking the logic.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


class FileOps:
    """The few OS calls the file layer makes; subclass to inject faults in tests."""

    def write_temp(self, directory: Path, prefix: str, data: bytes, mode: int | None = None) -> Path:
        fd, name = tempfile.mkstemp(dir=directory, prefix=prefix, suffix=TEMP_SUFFIX)
        try:
            os.fchmod(fd, _default_mode() if mode is None else mode)  # mkstemp's 0600 would leak into the target
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise
        return Path(name)

    def replace(self, source: Path, target: Path) -> None:
        os.replace(source, target)

    def unlink(self, path: Path) -> None:
        os.unlink(path)

    def fsync_dir(self, directory: Path) -> None:
        with contextlib.suppress(OSError):  # not every filesystem lets a directory be fsynced
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def disk_free(self, path: Path) -> int:
        return shutil.disk_usage(path).free


DEFAULT_OPS = FileOps()
TEMP_SUFFIX = ".luban.tmp"


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def remove_stale_temps(directory: Path) -> list[Path]:
    """Delete temp files a killed writer left in ``directory``; call only while holding the workspace lock."""
    removed = []
    for leftover in directory.glob(f".*{TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            leftover.unlink()
            removed.append(leftover)
    return removed


def atomic_write(path: Path, data: bytes | str, ops: FileOps = DEFAULT_OPS) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)  # a rewrite keeps the file's permissions
    except FileNotFoundError:
        mode = None
    temp = ops.write_temp(path.parent, f".{path.name}.", payload, mode)
    try:
        ops.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            ops.unlink(temp)
        raise
    ops.fsync_dir(path.parent)


@dataclass(frozen=True)
class MoveOutcome:
    """How a move into place finally went, for the audit trail."""

    method: str  # "rename", "rename-retry", or "copy-unlink"
    first_error: str | None = None


class MoveBlocked(OSError):
    """Neither rename nor copy could put the file in place; the target was left untouched."""


def move_into_place(source: Path, target: Path, ops: FileOps = DEFAULT_OPS, retry_delay: float = 0.1) -> MoveOutcome:
    """Rename ``source`` over ``target``, with the design's fallbacks.

    1. rename; on failure wait ``retry_delay`` and rename once more (transient faults);
    2. on EXDEV (another filesystem) copy to a temp file beside the target, then
       rename that over the target and unlink the source — still atomic at the target;
    3. if that fails too, raise ``MoveBlocked`` carrying the OS error: the target is
       exactly as it was, and the source is kept.
    """
    try:
        ops.replace(source, target)
        ops.fsync_dir(target.parent)
        return MoveOutcome("rename")
    except OSError as first:
        first_error = first
    if first_error.errno != errno.EXDEV:
        time.sleep(retry_delay)
        try:
            ops.replace(source, target)
            ops.fsync_dir(target.parent)
            return MoveOutcome("rename-retry", _describe(first_error))
        except OSError as second:
            if second.errno != errno.EXDEV:
                raise MoveBlocked(second.errno, f"rename failed twice: {_describe(second)}") from second
    try:
        atomic_write(target, source.read_bytes(), ops)
    except OSError as err:
        raise MoveBlocked(err.errno, f"cross-device copy failed: {_describe(err)}") from err
    with contextlib.suppress(OSError):  # the target is in place; a leftover source is only clutter
        ops.unlink(source)
    return MoveOutcome("copy-unlink", _describe(first_error))


def _describe(err: OSError) -> str:
    name = errno.errorcode.get(err.errno or 0, "OSError")
    return f"{name}: {err.strerror or err}"

"""One run per workspace at a time.

The lock is an ``flock`` on ``<workspace>/luban.lock``, held for the run's
life: the kernel drops it when the process dies, even by SIGKILL, so a crashed
run never leaves a lock that blocks forever. The file's content (pid, host,
start time) says who holds it; when it names a process that is gone, the next
run takes over and says so.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO


class WorkspaceLocked(RuntimeError):
    """Another run holds the workspace."""


@dataclass
class WorkspaceLock:
    path: Path
    handle: TextIO | None = None
    took_over_from: dict | None = None
    subject: str = ""  # what the lock guards, in a refusal (default: the folder the lock file is in)
    details: dict | None = None  # more for whoever reads the holder (a repository's: the branch the run was asked on)

    def acquire(self) -> WorkspaceLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Read-write, created if missing, never truncated on open and not in append mode: the record is rewritten in
        # place at offset 0 (_rewrite), which append mode would send to the end instead.
        handle = open(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644), "r+", encoding="utf-8")  # noqa: SIM115 - held open for the run's life: the flock lives on it
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(self.path)
            handle.close()
            raise WorkspaceLocked(
                f"{self.subject or self.path.parent} is in use by another Luban run ({_describe(holder)}); "
                "wait for it to finish (or let this run queue behind it: --wait-for-lock SECONDS)"
                + ("" if self.subject else ", or use another --workspace")
            ) from None
        previous = _read(self.path)
        if previous:
            self.took_over_from = previous  # its process is gone: the kernel released its flock
        _rewrite(handle.fileno(), {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(),
            **(self.details or {}),
        })
        self.handle = handle
        return self

    def note(self, **details: object) -> None:
        """Add to what the held lock file says about its holder (e.g. the lease it holds on a Prefect server)."""
        if self.handle is None:
            raise RuntimeError(f"{self.path}: not held; acquire it first")
        _rewrite(self.handle.fileno(), {**_read(self.path), **details})

    def warning(self) -> str | None:
        if not self.took_over_from:
            return None
        return f"took over the workspace lock left by a run that is gone ({_describe(self.took_over_from)})"

    def release(self) -> None:
        if self.handle is None:
            return
        handle, self.handle = self.handle, None
        os.ftruncate(handle.fileno(), 0)
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()

    def __enter__(self) -> WorkspaceLock:
        return self if self.handle is not None else self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def holder(path: Path) -> str | None:
    """Who holds the lock at ``path`` (None when nobody does), without creating or changing anything.

    Asked before a run starts, so a refusal leaves no lock file behind and names the run in the way."""
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed by the `with` below, after the open may fail
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _describe(_read(path))
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None


def held_by(path: Path) -> dict | None:
    """What the holder of the lock at ``path`` wrote about itself, or None when nobody holds it."""
    return _read(path) if holder(path) is not None else None


def acquire_with_timeout(path: Path, timeout: float, poll: float = 0.05) -> WorkspaceLock:
    """For short critical sections (profile and meta-learning writes): wait up to ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return WorkspaceLock(path).acquire()
        except WorkspaceLocked:
            if time.monotonic() >= deadline:
                raise WorkspaceLocked(f"{path} stayed locked for {timeout:.1f} s; another Luban process is writing it") from None
            time.sleep(poll)


def queue_for(lock: WorkspaceLock, wait: float, poll: float = 0.5) -> WorkspaceLock:
    """Take a run's lock, queueing up to ``wait`` seconds behind the run that holds it (0: refuse at once, naming
    the holder). A queued run starts when the holder finishes, or when its process dies (the kernel frees it)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return lock.acquire()
        except WorkspaceLocked as err:
            if time.monotonic() >= deadline:
                raise WorkspaceLocked(f"{err}" + (f" (waited {wait:.0f} s)" if wait else "")) from None
            time.sleep(poll)


def repository_lock(git_common_dir: Path, repository: Path, asked_on: str | None = None) -> WorkspaceLock:
    """One full-mode run per git repository, whatever its workspace: two runs in one checkout would share its index
    (``index.lock: File exists``) and commit onto each other's branch. The file is in the common git dir, so every
    worktree of the repository sees the same lock."""
    return WorkspaceLock(git_common_dir / "luban-run.lock", subject=f"the git repository {repository}",
                         details={"asked_on": asked_on} if asked_on else None)


def _rewrite(fd: int, record: dict) -> None:
    """The lock file's record replaced in place, never by a rename: the flock lives on this inode. The new record is
    written over the old one, padded with spaces to the old one's length, then the file is cut to the new length: a
    process killed between the two leaves the new record and blanks, never an empty or half-written record (the next
    run could not tell an empty one from a holder it must not overrule)."""
    text = json.dumps(record).encode("utf-8")
    _write_over(fd, text.ljust(os.fstat(fd).st_size))
    _cut(fd, len(text))


def _write_over(fd: int, data: bytes) -> None:
    os.pwrite(fd, data, 0)  # one system call for a record of a few hundred bytes: one page, never torn by a kill


def _cut(fd: int, length: int) -> None:
    os.ftruncate(fd, length)
    os.fsync(fd)


def _read(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8").strip()
        return json.loads(text) if text else {}
    except (OSError, ValueError):
        return {"unreadable": True}


def _describe(holder: dict) -> str:
    if not holder:
        return "holder unknown"
    if holder.get("unreadable"):
        return "lock file unreadable"
    return f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}"

"""The file side of the ratchet (quick mode, and git-less fallback): snapshots and `.bak` restore.

The kept version of each skill lives in the workspace as ``SKILL.md.bak``; the
skills directory only ever holds ``SKILL.md``. A rollback follows the design:
the current version is preserved as ``SKILL.md.rolled_back`` (in the
workspace), then the kept one is moved into place with ``move_into_place``
(rename, retry after 100 ms, copy+unlink on EXDEV). Preserving by copy rather
than renaming the target away means there is no instant at which the skill has
no SKILL.md. If the kept version cannot be put in place, the skill enters
read-only protection: nothing is touched, a ``rollback_blocked`` alert is
raised with the OS error, and every later write to that skill is refused until
``check_readonly`` passes at a run's start or the user clears it.
"""

from __future__ import annotations

import contextlib
import errno
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from workspace.atomic import DEFAULT_OPS, FileOps, MoveBlocked, atomic_write, move_into_place, remove_stale_temps
from workspace.layout import Workspace, new_stamped_dir
from workspace.skill_source import SKILL_FILE

GIB = 1024**3
READONLY_FILE = "readonly.json"
MAX_READONLY_SESSIONS = 30


class RollbackBlocked(OSError):
    """``rollback_blocked``: the kept version could not be restored; the skill is now read-only."""


def _skill_md_only(file: str) -> None:
    if file != SKILL_FILE:  # the flows offer edits of other files only with git (proposal_requests)
        raise ValueError(f"quick mode keeps snapshots of SKILL.md alone: it cannot edit {file} (use --mode full)")


class ReadOnlySkill(PermissionError):
    """A write was refused because the skill is under read-only protection."""


@dataclass
class FileRatchet:
    workspace: Workspace
    snapshot_dir: Path
    ops: FileOps = DEFAULT_OPS

    @classmethod
    def start(cls, workspace: Workspace, skills: list[str], now: datetime, ops: FileOps = DEFAULT_OPS) -> FileRatchet:
        """Snapshot each skill under ``backups/YYYYMMDD-HHMM`` and make it the kept version."""
        snapshot = new_stamped_dir(workspace.backups(), now)
        ratchet = cls(workspace, snapshot, ops)
        for skill in skills:
            remove_stale_temps(workspace.skill_file(skill).parent)
            data = workspace.skill_file(skill).read_bytes()
            atomic_write(snapshot / skill / "SKILL.md", data, ops)
            atomic_write(ratchet.kept_path(skill), data, ops)
        return ratchet

    @classmethod
    def resume(cls, workspace: Workspace, skills: list[str], ops: FileOps = DEFAULT_OPS) -> tuple[FileRatchet, list[str]]:
        """Continue with the latest snapshot; a SKILL.md that differs from its kept version is rolled back."""
        snapshots = sorted(p for p in workspace.backups().glob("*") if p.is_dir()) if workspace.backups().exists() else []
        if not snapshots:
            raise FileNotFoundError(f"--resume: no quick-mode snapshot under {workspace.backups()}; start without --resume")
        ratchet = cls(workspace, snapshots[-1], ops)
        undone = []
        for skill in skills:
            remove_stale_temps(workspace.skill_file(skill).parent)
            kept = ratchet.kept_path(skill)
            if kept.exists() and kept.read_bytes() != workspace.skill_file(skill).read_bytes():
                ratchet.rollback(skill)
                undone.append(skill)
        return ratchet, undone

    def kept_path(self, skill: str) -> Path:
        return self.workspace.skill_state(skill) / "SKILL.md.bak"

    def rolled_back_path(self, skill: str) -> Path:
        return self.workspace.skill_state(skill) / "SKILL.md.rolled_back"

    def write_skill(self, skill: str, text: str | bytes, file: str = SKILL_FILE) -> None:
        """The one way an edit reaches a SKILL.md: atomic, and refused under read-only protection."""
        _skill_md_only(file)
        ensure_writable(self.workspace, skill)
        atomic_write(self.workspace.skill_file(skill), text, self.ops)

    def pre_edit(self, skill: str, file: str = SKILL_FILE) -> str:
        """The current SKILL.md is already the kept version; return its snapshot path."""
        _skill_md_only(file)
        ensure_writable(self.workspace, skill)
        return str(self.kept_path(skill))

    def keep(self, skill: str, delta: float, dim: str, edit: dict | None = None, file: str = SKILL_FILE) -> str:
        _skill_md_only(file)
        atomic_write(self.kept_path(skill), self.workspace.skill_file(skill).read_bytes(), self.ops)
        return str(self.kept_path(skill))

    def rollback(self, skill: str, file: str = SKILL_FILE) -> str:
        _skill_md_only(file)
        return self._restore(skill, self.kept_path(skill))

    def original_text(self, skill: str) -> bytes:
        return (self.snapshot_dir / skill / "SKILL.md").read_bytes()

    def head_sha(self) -> str:
        return ""  # the kept versions are files, not commits

    def kept_text(self, skill: str, file: str = SKILL_FILE) -> tuple[bytes | None, str]:
        _skill_md_only(file)
        path = self.kept_path(skill)
        return (path.read_bytes() if path.exists() else None), ""

    @property
    def git(self) -> None:
        return None

    def restore_original(self, skill: str) -> str:
        restored = self._restore(skill, self.snapshot_dir / skill / "SKILL.md")
        atomic_write(self.kept_path(skill), self.workspace.skill_file(skill).read_bytes(), self.ops)
        return restored

    def _restore(self, skill: str, source: Path) -> str:
        ensure_writable(self.workspace, skill)
        target = self.workspace.skill_file(skill)
        staged = self.workspace.skill_state(skill) / "SKILL.md.restoring"
        try:
            atomic_write(self.rolled_back_path(skill), target.read_bytes(), self.ops)
            atomic_write(staged, source.read_bytes(), self.ops)
            move_into_place(staged, target, self.ops)
        except (MoveBlocked, OSError) as err:
            enter_readonly(self.workspace, skill, err)
            raise RollbackBlocked(
                err.errno,
                f"rollback_blocked: could not restore {target} ({err}); it was left exactly as it was, the kept "
                f"version is at {source}. The skill is read-only until the cause is fixed (then run again, or "
                f"'luban unfreeze {skill}').",
            ) from err
        return str(source)


def _readonly_marker(workspace: Workspace, skill: str) -> Path:
    return workspace.skill_state(skill) / READONLY_FILE


def readonly_state(workspace: Workspace, skill: str) -> dict | None:
    marker = _readonly_marker(workspace, skill)
    if not marker.exists():
        return None
    return json.loads(marker.read_text(encoding="utf-8"))


def enter_readonly(workspace: Workspace, skill: str, err: OSError) -> None:
    """Record read-only protection. The marker lives in the workspace, never beside the skill."""
    state = {
        "alert": "rollback_blocked",
        "since": datetime.now(UTC).isoformat(),
        "errno": errno.errorcode.get(err.errno or 0, "unknown"),
        "error": str(err),
        "failed_checks": 0,
        "permanent": False,
    }
    marker = _readonly_marker(workspace, skill)
    marker.parent.mkdir(parents=True, exist_ok=True)
    try:
        atomic_write(marker, json.dumps(state, indent=2))
    except OSError:  # the disk that blocked the rollback may block this too: try a plain write
        with contextlib.suppress(OSError):
            marker.write_text(json.dumps(state), encoding="utf-8")


def ensure_writable(workspace: Workspace, skill: str) -> None:
    state = readonly_state(workspace, skill)
    if state is not None:
        raise ReadOnlySkill(
            f"skill '{skill}' is under read-only protection since {state['since']} ({state['error']}); "
            f"fix the cause and run again, or clear it with 'luban unfreeze {skill}'"
        )


def clear_readonly(workspace: Workspace, skill: str) -> bool:
    marker = _readonly_marker(workspace, skill)
    if marker.exists():
        marker.unlink()
        return True
    return False


def check_readonly(workspace: Workspace, skill: str, ops: FileOps = DEFAULT_OPS) -> str | None:
    """At a run's start: leave read-only protection when its cause is gone. Returns a notice, or None.

    ENOSPC/EDQUOT: free space ≥ max(1 GiB, 3 × the skill directory). EACCES/EPERM
    and anything else: a temp file can be written in the skill directory. After
    30 failed checks the protection becomes permanent (only a person clears it).
    """
    state = readonly_state(workspace, skill)
    if state is None or state.get("permanent"):
        return None
    skill_dir = workspace.skill_file(skill).parent
    if state["errno"] in ("ENOSPC", "EDQUOT"):
        needed = max(GIB, 3 * sum(p.stat().st_size for p in skill_dir.rglob("*") if p.is_file()))
        recovered = ops.disk_free(skill_dir) >= needed
        notice = "disk space has recovered; optimization of this skill is enabled again"
    else:
        recovered = _can_write(skill_dir, ops)
        notice = "directory permissions have recovered; optimization of this skill is enabled again"
    if recovered:
        clear_readonly(workspace, skill)
        return f"{skill}: {notice}"
    state["failed_checks"] += 1
    state["permanent"] = state["failed_checks"] >= MAX_READONLY_SESSIONS
    atomic_write(_readonly_marker(workspace, skill), json.dumps(state, indent=2))
    return None


def _can_write(directory: Path, ops: FileOps) -> bool:
    try:
        probe = ops.write_temp(directory, ".luban-write-check.", b"")
        ops.unlink(probe)
        return True
    except OSError:
        return False

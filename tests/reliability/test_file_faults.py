"""The file layer under injected OS errors: EXDEV, ENOSPC, EACCES, and read-only protection."""

from __future__ import annotations

import errno
import os
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import write_skill
from workspace.atomic import FileOps, MoveBlocked, atomic_write, move_into_place
from workspace.file_ratchet import (
    FileRatchet,
    ReadOnlySkill,
    RollbackBlocked,
    check_readonly,
    clear_readonly,
    readonly_state,
)
from workspace.layout import Workspace

NOW = datetime(2026, 12, 2, 15, 4)


class FaultyOps(FileOps):
    """Real file operations, except the faults a test asks for."""

    def __init__(self, replace_errors=(), write_errors=(), cross_device=False, free=None):
        self.replace_errors = list(replace_errors)  # errnos raised by the next replace() calls
        self.write_errors = list(write_errors)
        self.cross_device = cross_device  # a rename between two directories is EXDEV
        self.free = free
        self.calls: list[str] = []

    def replace(self, source: Path, target: Path) -> None:
        self.calls.append("replace")
        if self.replace_errors:
            code = self.replace_errors.pop(0)
            raise OSError(code, os.strerror(code), str(target))
        if self.cross_device and source.parent != target.parent:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(target))
        super().replace(source, target)

    def write_temp(self, directory: Path, prefix: str, data: bytes, mode: int | None = None) -> Path:
        self.calls.append("write_temp")
        if self.write_errors:
            code = self.write_errors.pop(0)
            raise OSError(code, os.strerror(code), str(directory))
        return super().write_temp(directory, prefix, data, mode)

    def disk_free(self, path: Path) -> int:
        return self.free if self.free is not None else super().disk_free(path)


def test_atomic_write_failure_leaves_the_old_file_and_no_temp(tmp_path: Path):
    target = tmp_path / "SKILL.md"
    target.write_text("old\n")
    for code in (errno.ENOSPC, errno.EACCES):
        with pytest.raises(OSError) as caught:
            atomic_write(target, "new\n", FaultyOps(replace_errors=[code]))
        assert caught.value.errno == code
        assert target.read_text() == "old\n"
        assert [p.name for p in tmp_path.iterdir()] == ["SKILL.md"]
    with pytest.raises(OSError):
        atomic_write(target, "new\n", FaultyOps(write_errors=[errno.ENOSPC]))
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["SKILL.md"]


def test_atomic_write_keeps_the_files_permissions(tmp_path: Path):
    target = tmp_path / "SKILL.md"
    target.write_text("old\n")
    target.chmod(0o640)
    atomic_write(target, "new\n")
    assert (target.stat().st_mode & 0o777) == 0o640
    fresh = tmp_path / "new.md"
    atomic_write(fresh, "x")
    assert (fresh.stat().st_mode & 0o777) == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_stale_temps_of_a_killed_writer_are_removed(tmp_path: Path):
    from workspace.atomic import remove_stale_temps

    (tmp_path / ".SKILL.md.abc123.luban.tmp").write_text("half")
    (tmp_path / "SKILL.md").write_text("whole")
    (tmp_path / ".hidden-user-file").write_text("mine")
    assert [p.name for p in remove_stale_temps(tmp_path)] == [".SKILL.md.abc123.luban.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hidden-user-file", "SKILL.md"]


def test_move_retries_once_after_a_transient_failure(tmp_path: Path):
    (tmp_path / "src").write_text("kept\n")
    outcome = move_into_place(tmp_path / "src", tmp_path / "dst", FaultyOps(replace_errors=[errno.EBUSY]), retry_delay=0.01)
    assert outcome.method == "rename-retry" and "EBUSY" in (outcome.first_error or "")
    assert (tmp_path / "dst").read_text() == "kept\n" and not (tmp_path / "src").exists()


def test_move_across_devices_copies_then_unlinks(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "src").write_text("kept\n")
    (tmp_path / "b" / "dst").write_text("current\n")
    outcome = move_into_place(tmp_path / "a" / "src", tmp_path / "b" / "dst", FaultyOps(cross_device=True))
    assert outcome.method == "copy-unlink" and "EXDEV" in (outcome.first_error or "")
    assert (tmp_path / "b" / "dst").read_text() == "kept\n"
    assert not (tmp_path / "a" / "src").exists()


def test_move_blocked_leaves_target_and_source(tmp_path: Path):
    (tmp_path / "src").write_text("kept\n")
    (tmp_path / "dst").write_text("current\n")
    ops = FaultyOps(replace_errors=[errno.ENOSPC, errno.ENOSPC])
    with pytest.raises(MoveBlocked) as caught:
        move_into_place(tmp_path / "src", tmp_path / "dst", ops, retry_delay=0.01)
    assert caught.value.errno == errno.ENOSPC
    assert (tmp_path / "dst").read_text() == "current\n" and (tmp_path / "src").read_text() == "kept\n"


def test_exdev_then_copy_failure_is_blocked(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "src").write_text("kept\n")
    (tmp_path / "dst").write_text("current\n")
    ops = FaultyOps(cross_device=True, write_errors=[errno.ENOSPC])
    with pytest.raises(MoveBlocked, match="cross-device copy failed"):
        move_into_place(tmp_path / "a" / "src", tmp_path / "dst", ops)
    assert (tmp_path / "dst").read_text() == "current\n"


def quick_setup(tmp_path: Path, ops: FileOps | None = None) -> tuple[Workspace, FileRatchet]:
    write_skill(tmp_path / "skills", "alpha", "original\n")
    ws = Workspace.open(tmp_path / "skills", "quick")
    return ws, FileRatchet.start(ws, ["alpha"], NOW, ops or FileOps())


def test_quick_snapshot_keep_rollback_restore(tmp_path: Path):
    ws, ratchet = quick_setup(tmp_path)
    assert (ws.backups() / "20261202-1504" / "alpha" / "SKILL.md").read_text() == "original\n"
    ratchet.pre_edit("alpha")
    ratchet.write_skill("alpha", "better\n")
    ratchet.keep("alpha", 1.0, "dim4")
    ratchet.write_skill("alpha", "worse\n")
    ratchet.rollback("alpha")
    assert ws.skill_file("alpha").read_text() == "better\n"
    assert ratchet.rolled_back_path("alpha").read_text() == "worse\n"
    ratchet.restore_original("alpha")
    assert ws.skill_file("alpha").read_text() == "original\n"
    assert sorted(p.name for p in ws.skill_file("alpha").parent.iterdir()) == ["SKILL.md"]


def test_quick_snapshot_dirs_get_suffixes(tmp_path: Path):
    ws, first = quick_setup(tmp_path)
    second = FileRatchet.start(ws, ["alpha"], NOW)
    third = FileRatchet.start(ws, ["alpha"], NOW)
    fourth = FileRatchet.start(ws, ["alpha"], NOW)  # a scheduler's fourth run in the minute is not told to wait
    assert [first.snapshot_dir.name, second.snapshot_dir.name, third.snapshot_dir.name, fourth.snapshot_dir.name] == [
        "20261202-1504", "20261202-1504-2", "20261202-1504-3", "20261202-1504-4"]


def test_rollback_over_exdev_still_restores(tmp_path: Path):
    ws, ratchet = quick_setup(tmp_path)
    ratchet.write_skill("alpha", "worse\n")
    ratchet.ops = FaultyOps(cross_device=True)
    ratchet.rollback("alpha")
    assert ws.skill_file("alpha").read_text() == "original\n"


@pytest.mark.parametrize("code, name", [(errno.ENOSPC, "ENOSPC"), (errno.EACCES, "EACCES")])
def test_blocked_rollback_enters_read_only_protection(tmp_path: Path, code: int, name: str):
    ws, ratchet = quick_setup(tmp_path)
    ratchet.write_skill("alpha", "worse\n")
    # the rename into place fails, its retry fails, and it is not EXDEV, so there is no copy fallback
    ratchet.ops = _fail_final_move(code)
    with pytest.raises(RollbackBlocked, match="rollback_blocked") as caught:
        ratchet.rollback("alpha")
    assert caught.value.errno == code
    assert ws.skill_file("alpha").read_text() == "worse\n"  # touched nothing
    state = readonly_state(ws, "alpha")
    assert state is not None and state["errno"] == name and state["alert"] == "rollback_blocked"
    with pytest.raises(ReadOnlySkill, match="read-only protection"):
        ratchet.write_skill("alpha", "another edit\n")
    with pytest.raises(ReadOnlySkill):
        ratchet.pre_edit("alpha")
    assert ws.skill_file("alpha").read_text() == "worse\n"


class _FinalMoveFails(FaultyOps):
    """Temp writes and same-directory renames work; putting the file over SKILL.md does not."""

    def __init__(self, code: int):
        super().__init__()
        self.code = code

    def replace(self, source: Path, target: Path) -> None:
        if target.name == "SKILL.md" and source.parent != target.parent:
            raise OSError(self.code, os.strerror(self.code), str(target))
        super().replace(source, target)


def _fail_final_move(code: int) -> FaultyOps:
    return _FinalMoveFails(code)


def test_read_only_leaves_when_space_recovers(tmp_path: Path):
    ws, ratchet = quick_setup(tmp_path)
    ratchet.ops = _fail_final_move(errno.ENOSPC)
    with pytest.raises(RollbackBlocked):
        ratchet.rollback("alpha")
    assert check_readonly(ws, "alpha", FaultyOps(free=10 * 1024**2)) is None  # 10 MiB < 1 GiB: stays
    assert readonly_state(ws, "alpha")["failed_checks"] == 1
    notice = check_readonly(ws, "alpha", FaultyOps(free=5 * 1024**3))
    assert notice == "alpha: disk space has recovered; optimization of this skill is enabled again"
    assert readonly_state(ws, "alpha") is None
    ratchet.ops = FileOps()
    ratchet.write_skill("alpha", "allowed again\n")


def test_read_only_leaves_when_permissions_recover(tmp_path: Path):
    ws, ratchet = quick_setup(tmp_path)
    ratchet.ops = _fail_final_move(errno.EACCES)
    with pytest.raises(RollbackBlocked):
        ratchet.rollback("alpha")
    assert check_readonly(ws, "alpha", FaultyOps(write_errors=[errno.EACCES])) is None
    assert "permissions have recovered" in (check_readonly(ws, "alpha", FileOps()) or "")


def test_read_only_becomes_permanent_after_30_failed_checks_and_user_can_clear(tmp_path: Path):
    ws, ratchet = quick_setup(tmp_path)
    ratchet.ops = _fail_final_move(errno.ENOSPC)
    with pytest.raises(RollbackBlocked):
        ratchet.rollback("alpha")
    for _ in range(30):
        check_readonly(ws, "alpha", FaultyOps(free=0))
    assert readonly_state(ws, "alpha")["permanent"] is True
    assert check_readonly(ws, "alpha", FaultyOps(free=10 * 1024**4)) is None  # permanent: no auto exit
    assert clear_readonly(ws, "alpha") is True
    assert readonly_state(ws, "alpha") is None

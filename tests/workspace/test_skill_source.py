"""Reading skills from disk: bounded, regular files only, never through a link out of the skill."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import write_skill
from workspace.skill_source import discover, list_files, read_at_most, read_skill, read_sources


def test_reads_bytes_and_lists_files_relative_to_the_skill(tmp_path: Path):
    path = write_skill(tmp_path, "s", "---\nname: s\n---\n", {"references/a.md": "a", "assets/x/y.txt": "y"})
    source = read_skill(path)
    assert source.error is None and source.name == "s"
    assert source.data == b"---\nname: s\n---\n"
    assert source.files == {"SKILL.md", "references/a.md", "assets/x/y.txt"}


def test_skill_file_symlinked_out_of_the_skill_is_refused(tmp_path: Path):
    secret = tmp_path / "outside.md"
    secret.write_text("---\nname: secret\n---\n")
    (tmp_path / "skills" / "evil").mkdir(parents=True)
    (tmp_path / "skills" / "evil" / "SKILL.md").symlink_to(secret)
    source = read_skill(tmp_path / "skills" / "evil" / "SKILL.md")
    assert source.data is None
    assert "symlink to outside its skill directory" in (source.error or "")


def test_skill_file_symlinked_inside_the_skill_is_read_and_a_dangling_one_named(tmp_path: Path):
    path = write_skill(tmp_path, "s", "x", {"docs/real.md": "---\nname: s\n---\n"})
    path.unlink()
    path.symlink_to(path.parent / "docs" / "real.md")
    assert read_skill(path).data == b"---\nname: s\n---\n"
    (path.parent / "docs" / "real.md").unlink()
    assert "SKILL.md: cannot be read" in (read_skill(path).error or "")


def test_read_at_most_reads_a_file_whole_up_to_the_limit(tmp_path: Path):
    (tmp_path / "f").write_bytes(b"0123456789")
    assert read_at_most(tmp_path / "f", 100) == b"0123456789"
    assert read_at_most(tmp_path / "f", 4) == b"0123"
    (tmp_path / "empty").write_bytes(b"")
    assert read_at_most(tmp_path / "empty", 4) == b""


def test_read_at_most_reads_past_the_size_the_file_reported():
    """What a file that grew after its size was read looks like: /proc reports size 0 and holds text."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs Linux's /proc, whose files report size 0")
    assert os.stat(status).st_size == 0
    assert read_at_most(status, 5) == b"Name:"


def test_symlinked_reference_out_of_the_skill_is_not_a_file_of_it(tmp_path: Path):
    path = write_skill(tmp_path, "s", "x", {"references/inside.md": "i"})
    (path.parent / "references" / "passwd").symlink_to("/etc/passwd")
    (path.parent / "references" / "alias.md").symlink_to(path.parent / "references" / "inside.md")
    assert list_files(path.parent) == {"SKILL.md", "references/inside.md", "references/alias.md"}


def test_fifo_is_not_opened(tmp_path: Path):
    (tmp_path / "s").mkdir()
    os.mkfifo(tmp_path / "s" / "SKILL.md")
    source = read_skill(tmp_path / "s" / "SKILL.md")  # would block forever if opened
    assert "not a regular file" in (source.error or "")


def test_directory_named_skill_md_is_not_a_skill(tmp_path: Path):
    (tmp_path / "s" / "SKILL.md").mkdir(parents=True)
    assert "not a regular file" in (read_skill(tmp_path / "s" / "SKILL.md").error or "")


def test_oversized_file_is_refused_before_reading(tmp_path: Path):
    path = write_skill(tmp_path, "big", b"")
    with open(path, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: costs no disk
    source = read_skill(path)
    assert source.data is None and "over the 2 MiB limit" in (source.error or "")


def test_discovery_skips_git_venv_and_hidden_directories(tmp_path: Path):
    write_skill(tmp_path, "a", "x")
    write_skill(tmp_path / "nested", "b", "x")
    write_skill(tmp_path / ".git", "c", "x")
    write_skill(tmp_path / ".venv", "d", "x")
    write_skill(tmp_path / "node_modules", "e", "x")
    found = discover([str(tmp_path)])
    assert sorted(p.parent.name for p in found) == ["a", "b"]  # type: ignore[union-attr]


def test_discovery_reports_missing_paths_as_error_sources(tmp_path: Path):
    (found,) = discover([str(tmp_path / "nope")])
    assert getattr(found, "error", None) and "no such file or directory" in found.error  # type: ignore[union-attr]


def test_sources_are_text_files_whole_and_name_what_cannot_be_inlined(tmp_path: Path):
    skill = tmp_path / "s"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: s\n---\n", encoding="utf-8")
    (skill / "references" / "api.md").write_text("Retry twice — then stop.\n", encoding="utf-8")
    (skill / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    (skill / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (skill / "big.md").write_text("x" * 2048, encoding="utf-8")
    sources = {s.path: s for s in read_sources(skill, list_files(skill), limit=1024)}
    assert "SKILL.md" not in sources
    assert sources["references/api.md"].text == "Retry twice — then stop.\n"
    assert sources["logo.png"].why_not == "binary" and sources["latin1.txt"].why_not == "binary (not UTF-8)"
    assert sources["big.md"].text is None and sources["big.md"].why_not == "over 1 KB"

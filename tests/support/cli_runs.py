"""What a refused `luban` command must look like, and a small skills repository to refuse it on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import git

from tests.conftest import write_skill
from tests.support.repos import commit_all


def assert_refused(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines and lines[0].startswith("luban "), result.stderr
    assert "Traceback" not in result.stderr and "prefect" not in result.stderr.lower(), result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def left_behind(root: Path) -> list[str]:
    """Anything a refused run wrote: a workspace, a lock file, a Prefect home."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name in ("luban-workspace", "luban.lock", "prefect-home"))


def skills_repo(root: Path, dirty: bool = False) -> git.Repo:
    write_skill(root / "skills", "alpha", "---\nname: alpha\ndescription: Does alpha things. Use when asked.\n---\n# Alpha\n")
    repo = commit_all(root)
    if dirty:
        (root / "skills" / "alpha" / "SKILL.md").write_text("changed\n")
    return repo

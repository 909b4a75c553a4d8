"""Shared fixtures: where the public corpus is, and a way to lay out skills on disk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("LUBAN_CORPUS", REPO_ROOT.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS.is_dir():  # a clone on its own has no ../shared: these tests need real public skills, nothing else does
        pytest.skip(f"public skill corpus not found at {CORPUS}; set LUBAN_CORPUS to a folder of <collection>/<skill>/SKILL.md")
    return CORPUS


@pytest.fixture(scope="session", params=["corpus", "generated"])
def skill_collection(request, tmp_path_factory) -> Path:
    """Real public skills when present (else skipped), and always a generated set (tests/support/generated_skills.py):
    whatever the corpus proves is proved on data the repository makes, so a clone on its own checks it too."""
    if request.param == "corpus":
        return request.getfixturevalue("corpus_dir")
    from tests.support.generated_skills import write_generated

    return write_generated(tmp_path_factory.mktemp("generated"), count=24, seed=7)


@pytest.fixture
def corpus_copy(corpus_dir: Path, tmp_path: Path) -> Path:
    """A writable copy: the corpus itself is read-only input."""
    target = tmp_path / "corpus"
    shutil.copytree(corpus_dir, target)
    return target


def write_skill(root: Path, name: str, text: str | bytes, files: dict[str, str] | None = None) -> Path:
    skill_dir = root / name
    skill_dir.mkdir(parents=True, exist_ok=True)
    path = skill_dir / "SKILL.md"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        (skill_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (skill_dir / rel).write_text(content, encoding="utf-8")
    return path

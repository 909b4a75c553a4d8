"""Hostile and malformed skills: each is scored or rejected by name, none crashes a batch, none hangs,
and none makes Luban open anything outside the skills directory and the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from flows.gate.check import score_source
from tests.reliability.crash import run_child
from tests.reliability.hostile import AUDIT_PRELUDE, build
from workspace.skill_source import read_skill

PER_SKILL_SECONDS = 10  # the bound on scoring any one hostile skill
BATCH_SECONDS = 180  # the bound on a whole `luban` run over the corpus


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("hostile")
    skills, outside = root / "skills", root / "outside"
    cases = build(skills, outside)
    return skills, outside, cases


def run_audited(args: list[str], audit_log: Path, timeout: float = BATCH_SECONDS, **env: str) -> subprocess.CompletedProcess:
    """`luban ARGS` in a child process whose every file open is logged to ``audit_log``."""
    return run_child(args, {**os.environ, "LUBAN_AUDIT_LOG": str(audit_log), **env}, timeout=timeout, prelude=AUDIT_PRELUDE)


def opened(audit_log: Path) -> list[tuple[str, str]]:
    return [tuple(line.rsplit("\t", 1)) for line in audit_log.read_text(errors="replace").splitlines() if "\t" in line]


def assert_stayed_inside(audit_log: Path, outside: Path, allowed_writes: list[Path]) -> None:
    entries = opened(audit_log)
    assert entries, "the audit hook recorded nothing: the guard is not working"
    for path, how in entries:
        resolved = Path(path).resolve() if path else Path(path)
        assert outside not in resolved.parents and resolved != outside, f"opened {path} outside the skills directory"
        assert not path.startswith(("/etc/passwd", "/etc/shadow")), f"opened {path}"
        writing = how in ("os.rename", "os.remove", "os.symlink", "shutil.rmtree") or any(c in how for c in "wax+")
        if writing and not path.startswith("/dev/") and "__pycache__" not in path:
            assert any(root == resolved or root in resolved.parents for root in allowed_writes), f"wrote {path} ({how})"


def test_the_corpus_has_at_least_40_hostile_skills(hostile):
    skills, _, cases = hostile
    assert len(cases) >= 40 and all((skills / name).exists() or (skills / name).is_symlink() for name in cases)


def test_each_hostile_skill_is_scored_or_rejected_naming_its_file_within_the_bound(hostile):
    skills, _, cases = hostile
    for name in cases:
        started = time.monotonic()
        score, error = score_source(read_skill(skills / name / "SKILL.md"))
        elapsed = time.monotonic() - started
        assert elapsed < PER_SKILL_SECONDS, f"{name}: {elapsed:.1f} s"
        assert (score is None) != (error is None), name
        if error is not None:
            assert f"{name}/SKILL.md" in error, f"{name}: the message does not name the file: {error}"
        else:
            assert (0 <= score.deterministic_subtotal <= 31 and score.total is None) or 0 <= score.total <= 100
            assert score == score_source(read_skill(skills / name / "SKILL.md"))[0], f"{name}: not deterministic"


def test_luban_score_over_the_corpus_finishes_reports_every_skill_and_reads_nothing_outside(hostile, tmp_path):
    skills, outside, cases = hostile
    audit = tmp_path / "audit.log"
    result = run_audited(["score", str(skills), "--json"], audit)
    assert result.returncode == 2, result.stderr[-2000:]  # some skills cannot be scored: exit 2, not a crash
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    by_dir = {Path(s["path"]).parent.name: s for s in report["skills"]}
    readable_somehow = set(cases) - {"skill-is-dir"}  # a directory named SKILL.md is not a skill file
    assert readable_somehow <= set(by_dir), sorted(readable_somehow - set(by_dir))
    for name, entry in by_dir.items():
        assert ("error" in entry and f"{name}/SKILL.md" in entry["error"]) or entry.get("total") is not None \
            or entry.get("deterministic_subtotal") is not None, (name, entry)
    assert "SECRET-CANARY-CONTENT" not in result.stdout + result.stderr
    assert_stayed_inside(audit, outside, allowed_writes=[])


@pytest.mark.slow
def test_an_offline_optimize_batch_over_the_corpus_goes_on_and_stays_inside(hostile, tmp_path, prefect_api):
    from prefect.settings import PREFECT_API_URL

    # every kind that cannot be read, and the readable kinds most likely to break the flow after scoring
    subset = {"invalid-utf8", "huge-50mb", "symlink-out", "symlink-loop", "symlink-dangling", "fifo", "utf16", "empty",
              "skill-is-dir", "nul-bytes", "billion-laughs", "yaml-python-tag", "merge-markers", "ref-etc-passwd",
              "ref-dotdot-canary", "symlink-ref-out", "name with spaces", "名字-unicode", "injection-judge", "crlf"}
    skills, outside = tmp_path / "skills", tmp_path / "outside"
    build(skills, outside, only=subset)
    audit = tmp_path / "audit.log"
    workspace = tmp_path / "workspace"
    result = run_audited(["optimize", "--skills-dir", str(skills), "--workspace", str(workspace), "--mode", "quick",
                          "--approval", "auto", "--max-rounds", "1"], audit, PREFECT_API_URL=PREFECT_API_URL.value(),
                         PREFECT_HOME=str(tmp_path / "prefect-home"))
    assert result.returncode == 0, (result.stdout[-3000:], result.stderr[-3000:])
    summary = json.loads(result.stdout)  # stdout is the one JSON document; "report: …" goes to stderr
    unreadable = [n for n in summary["notices"] if "not optimized:" in n]
    assert any(n.startswith("fifo:") for n in unreadable) and any(n.startswith("symlink-out:") for n in unreadable)
    assert any(n.startswith("huge-50mb:") and "2 MiB" in n for n in unreadable)
    assert {"nul-bytes", "billion-laughs", "ref-etc-passwd", "name with spaces", "名字-unicode"} <= set(summary["baselines"])
    assert "SECRET-CANARY-CONTENT" not in result.stdout + result.stderr
    assert_stayed_inside(audit, outside, allowed_writes=[skills, workspace, tmp_path / "prefect-home", Path("/tmp")])

"""`luban score --changed --base REV` on a real git repository."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.conftest import write_skill
from tests.support.repos import commit_all

BASE_TEXT = """---
name: {name}
description: Formats SQL queries to the team style. Use when the user says "format this SQL".
---
# {name}

## Overview

## Workflow

Do not guess.
"""


def invoke(*args: str):
    return CliRunner().invoke(app, ["score", *args], env={"COLUMNS": "200"})


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "repo"
    skills = root / "skills"
    for name in ("improves", "regresses", "untouched", "deleted"):
        write_skill(skills, name, BASE_TEXT.format(name=name))
    (root / "README.md").write_text("x\n")
    commit_all(root, "base").create_tag("base")
    monkeypatch.chdir(root)
    return root


def change(repo: Path) -> None:
    skills = repo / "skills"
    improved = BASE_TEXT.format(name="improves") + "Never skip tests.\n\n## Rules\n\n🛑 STOP before deploying.\n"
    (skills / "improves" / "SKILL.md").write_text(improved)
    regressed = BASE_TEXT.format(name="regresses").replace("name: regresses", "name: Regresses!")
    (skills / "regresses" / "SKILL.md").write_text(regressed)
    (skills / "deleted" / "SKILL.md").unlink()
    (skills / "untouched" / "notes.md").write_text("a reference changed, not the SKILL.md\n")


def test_changed_scores_only_changed_skills_and_fails_on_regression(repo: Path):
    change(repo)
    r = git.Repo(repo)
    r.git.add(A=True)
    r.index.commit("edit skills")
    result = invoke("--changed", "--base", "base", "--json")
    assert result.exit_code == 1, result.stdout
    doc = json.loads(result.stdout)
    by_name = {s["skill"]: s for s in doc["skills"]}
    assert set(by_name) == {"improves", "regresses"}
    improves, regresses = by_name["improves"], by_name["regresses"]
    assert improves["base"]["delta_dims"]["dim4"] == 10
    assert improves["base"]["delta_dims"]["dim7"] == 3
    assert improves["base"]["delta_total"] > 0 and improves["gate_failures"] == []
    assert improves["base"]["path"].endswith(":skills/improves/SKILL.md")
    assert regresses["base"]["delta_dims"]["dim1"] == -10
    assert regresses["gate_failures"] == [
        f"deterministic subtotal fell from {regresses['base']['deterministic_subtotal']} "
        f"to {regresses['deterministic_subtotal']} since base"
    ]


def test_allow_regression_turns_the_check_off(repo: Path):
    change(repo)
    assert invoke("--changed", "--base", "base", "--allow-regression").exit_code == 0


def test_uncommitted_and_untracked_changes_count(repo: Path):
    change(repo)  # nothing committed
    write_skill(repo / "skills", "brand-new", BASE_TEXT.format(name="brand-new"))
    result = invoke("--changed", "--base", "HEAD", "--json")
    doc = json.loads(result.stdout)
    by_name = {s["skill"]: s for s in doc["skills"]}
    assert set(by_name) == {"improves", "regresses", "brand-new"}
    assert by_name["brand-new"]["base"] is None and by_name["brand-new"]["gate_failures"] == []
    assert result.exit_code == 1


def test_text_output_shows_per_dimension_deltas(repo: Path):
    change(repo)
    out = invoke("--changed", "--base", "base").stdout
    assert "Δ" in out and "+10" in out and "-10" in out
    assert "gate: deterministic subtotal fell from" in out


def test_paths_narrow_the_changed_set(repo: Path):
    change(repo)
    result = invoke("--changed", "--base", "base", "--json", "skills/improves")
    assert [s["skill"] for s in json.loads(result.stdout)["skills"]] == ["improves"]
    assert result.exit_code == 0


def test_nothing_changed_passes(repo: Path):
    result = invoke("--changed", "--base", "base")
    assert result.exit_code == 0 and "no SKILL.md changed since base" in result.stdout


def test_unknown_base_is_a_usage_error_with_the_fix(repo: Path):
    result = invoke("--changed", "--base", "no-such-ref")
    assert result.exit_code == 2
    assert "unknown revision" in result.stderr and "git fetch" in result.stderr


def test_outside_a_repository_is_a_usage_error(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("--changed", "--base", "main")
    assert result.exit_code == 2 and "not inside a git repository" in result.stderr


def test_base_version_is_scored_with_its_own_files(repo: Path):
    """A reference that existed at base and was deleted since: base had no violation, now there is one."""
    skills = repo / "skills"
    text = BASE_TEXT.format(name="improves") + "\nSee [g](references/g.md).\n"
    write_skill(skills, "improves", text, {"references/g.md": "# g\n"})
    r = git.Repo(repo)
    r.git.add(A=True)
    r.index.commit("add reference")
    (skills / "improves" / "references" / "g.md").unlink()
    (skills / "improves" / "SKILL.md").write_text(text + "\nNever guess.\n")
    doc = json.loads(invoke("--changed", "--base", "HEAD", "--json").stdout)
    entry = doc["skills"][0]
    assert [v["kind"] for v in entry["violations"]] == ["missing_reference"]
    assert entry["base"]["delta_dims"]["dim9"] == 4  # 1 line (3) -> 2 lines (7)


def test_the_step_summary_shows_each_skill_before_and_after_and_the_checks_that_flipped(repo: Path, tmp_path: Path):
    """What a reviewer reads on the pull request: one row per changed skill, readable at a glance."""
    change(repo)
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(app, ["score", "--changed", "--base", "base", "--format", "github"],
                                env={"COLUMNS": "200", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": ""})
    assert result.exit_code == 1  # the regression
    text = summary.read_text(encoding="utf-8")
    assert "| skill | total | dimensions that moved | checks flipped | gate |" in text
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ") and
            not line.startswith("| skill") and "---" not in line}
    assert set(rows) == {"improves", "regresses"}
    assert "dim4 0 → 10" in rows["improves"] and "none |" in rows["improves"].split("dim4")[1]  # no check flipped
    assert "❌ name" in rows["regresses"] and "dim1 10 → 0" in rows["regresses"] and "❌ " in rows["regresses"].split("|")[-2]
    assert "(+" in rows["improves"] and "(-" in rows["regresses"]


def test_an_ignored_check_is_ignored_at_the_base_too_so_it_is_never_a_change(repo: Path):
    """Both versions lack a when-cue and trigger words: with those checks ignored, dim1 must not move between them."""
    path = repo / "skills" / "untouched" / "SKILL.md"
    path.write_text(BASE_TEXT.format(name="untouched").replace(' Use when the user says "format this SQL".', ""))
    r = git.Repo(repo)
    r.git.add(A=True)
    r.index.commit("no when-cue")
    r.create_tag("without-when")
    path.write_text(path.read_text() + "Never skip tests.\n")
    result = invoke("--changed", "--base", "without-when", "--json", "--ignore", "dim1.when", "--ignore", "dim1.triggers")
    entry = json.loads(result.stdout)["skills"][0]
    assert entry["skill"] == "untouched" and entry["dims"]["dim1"]["score"] == 10
    assert entry["base"]["delta_dims"]["dim1"] == 0, entry["base"]
    assert sorted(i["rule"] for i in entry["ignored"]) == ["dim1.triggers", "dim1.when"]

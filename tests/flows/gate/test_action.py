"""action.yml, run as GitHub runs a composite action's steps: each `run:` through `bash --noprofile --norc -eo
pipefail`, its `${{ }}` expressions filled in, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY as files. Nothing is fetched:
Luban is installed here already (the install step then says so), and the upload step is GitHub's own action,
checked for when it runs and what it is given."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO_ROOT, write_skill
from tests.support.repos import commit_all
from tests.support.skill_texts import GOOD

ACTION = yaml.safe_load((REPO_ROOT / "action.yml").read_text(encoding="utf-8"))


def expression(text: str, inputs: dict[str, str], outputs: dict[str, str]) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1).strip()
        if name.startswith("inputs."):
            return inputs[name.removeprefix("inputs.")]
        if name == "github.action_path":
            return str(REPO_ROOT)
        if name.startswith("steps.score.outputs."):
            return outputs.get(name.removeprefix("steps.score.outputs."), "")
        raise AssertionError(f"action.yml uses {name}, which this test does not provide")

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def condition(text: str, inputs: dict[str, str]) -> bool:
    """The `if:` expressions action.yml uses: comparisons of inputs joined by &&."""
    return all(inputs[m.group(1)] == m.group(2) for m in re.finditer(r"inputs\.([\w-]+) == '([^']*)'", text))


def run_action(workdir: Path, tmp: Path, **given: str) -> tuple[list[tuple[str, int]], dict[str, str], str, list[dict]]:
    """Every step in order: (name, exit status) of the run steps, the score step's outputs, the step summary, and
    the `uses:` steps that would have run with what they would have been given."""
    inputs = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()} | given
    summary, outputs, ran, used = tmp / "summary.md", {}, [], []
    for step in ACTION["runs"]["steps"]:
        if "if" in step and not condition(step["if"], inputs):
            continue
        if "uses" in step:
            used.append({"uses": step["uses"], **{k: expression(str(v), inputs, outputs) for k, v in step["with"].items()}})
            continue
        output_file = tmp / f"output-{len(ran)}"
        output_file.write_text("")
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", GITHUB_OUTPUT=str(output_file),
                   GITHUB_STEP_SUMMARY=str(summary), GITHUB_WORKSPACE=str(workdir), COLUMNS="200")
        env |= {k: expression(str(v), inputs, outputs) for k, v in step.get("env", {}).items()}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env,
                              cwd=workdir, capture_output=True, text=True, timeout=120)
        ran.append((step["name"], done.returncode))
        if step.get("id") == "score":
            outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines())
        if done.returncode != 0:
            break
    return ran, outputs, summary.read_text(encoding="utf-8") if summary.exists() else "", used


def test_the_action_gates_a_pull_request_writes_sarif_and_the_summary_and_asks_for_the_upload(tmp_path: Path):
    repo = tmp_path / "repo"
    write_skill(repo / "skills", "good-skill", GOOD.format(name="good-skill"), {"references/guide.md": "# Guide\n"})
    write_skill(repo / "skills", "conflicted", GOOD.format(name="conflicted"), {"references/guide.md": "x"})
    commit_all(repo, "base")
    conflicted = repo / "skills" / "conflicted" / "SKILL.md"
    conflicted.write_text(conflicted.read_text() + "<<<<<<< HEAD\n")  # the pull request's change

    ran, outputs, summary, used = run_action(repo, tmp_path, paths="skills", base="main", **{"upload-sarif": "true"})
    assert [name for name, _ in ran] == ["Install Luban", "Score skills", "Gate"] and ran[-1][1] == 1, ran
    assert outputs["exit-status"] == "1" and outputs["results-file"] == "luban-results.sarif"
    sarif = json.loads((repo / "luban-results.sarif").read_text())
    locations = {(res["ruleId"], res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for res in
                 sarif["runs"][0]["results"]}
    assert ("merge_marker", "skills/conflicted/SKILL.md") in locations  # relative to GITHUB_WORKSPACE
    assert "| conflicted |" in summary and "checks flipped" in summary and "good-skill" not in summary
    assert used == [{"uses": "github/codeql-action/upload-sarif@v3", "sarif_file": "luban-results.sarif",
                     "category": "luban"}]

    conflicted.write_text(GOOD.format(name="conflicted"))  # fixed: nothing changed since main, and the gate passes
    ran, outputs, _, used = run_action(repo, tmp_path, paths="skills", base="main", format="junit", strict="true")
    assert ran[-1] == ("Gate", 0) and outputs["results-file"] == "luban-results.junit" and used == []
    assert (repo / "luban-results.junit").read_text().startswith('<?xml version="1.0" encoding="UTF-8"?>')


def test_a_bad_input_stops_the_action_with_the_fix(tmp_path: Path):
    write_skill(tmp_path / "skills", "good-skill", GOOD.format(name="good-skill"), {"references/guide.md": "# Guide\n"})
    ran, outputs, _, _ = run_action(tmp_path, tmp_path, paths="skills", strict="maybe")
    assert ran == [("Install Luban", 0), ("Score skills", 2)] and outputs == {}

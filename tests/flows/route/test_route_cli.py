"""`luban route`'s refusals: one line naming the fix, exit 2, before Prefect starts and with nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.cli_runs import assert_refused, left_behind

LUBAN = [sys.executable, "-m", "flows.cli"]


def luban(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LUBAN_", "OPENAI_", "PREFECT_"))}
    env |= {"PYTHONPATH": str(REPO_ROOT), "PREFECT_HOME": str(cwd / "prefect-home")}  # a started flow would show
    return subprocess.run([*LUBAN, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = tmp_path / "skills" / "invoices"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: invoices\ndescription: Creates invoices. Use when billing.\n---\n# I\n",
                                     encoding="utf-8")
    return tmp_path / "skills"


@pytest.mark.parametrize(("args", "needles"), [
    (["--client", "cursor"], ["no client 'cursor'", "claude-code, codex, agent-skills"]),
    (["--window", "64k"], ["no window '64k'", "unknown, 128k, 200k, 1M"]),
    (["--approval", "maybe"], ["--approval must be ui, auto or cli"]),
])
def test_a_wrong_choice_is_refused_with_the_choices(library, tmp_path, args, needles):
    assert_refused(luban("route", "--skills-dir", str(library), *args, cwd=tmp_path), *needles)
    assert left_behind(tmp_path) == []


def test_a_folder_without_routable_skills_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_refused(luban("route", "--skills-dir", str(tmp_path / "empty"), cwd=tmp_path), "no skill can be offered")


def test_an_eval_set_that_cannot_be_used_names_its_line(library, tmp_path):
    bad = tmp_path / "set.json"
    bad.write_text('[{"query": "bill them", "should_trigger": true},\n {"query": "x"]', encoding="utf-8")
    assert_refused(luban("route", "invoices", "--skills-dir", str(library), "--eval-set", str(bad), cwd=tmp_path),
                   f"{bad}:2: not valid JSON")
    bad.write_text(json.dumps({"invoice": []}), encoding="utf-8")
    assert_refused(luban("route", "--skills-dir", str(library), "--eval-set", str(bad), cwd=tmp_path),
                   "no skill named 'invoice'")


def test_prefect_info_lines_reach_stderr_only_when_asked(library, tmp_path):
    """A command's stderr is read in CI logs and cron mail: no line per flow and task run unless `luban -v`."""
    quiet = luban("route", "--skills-dir", str(library), "--workspace", str(tmp_path / "ws"), cwd=tmp_path)
    loud = luban("-v", "route", "--skills-dir", str(library), "--workspace", str(tmp_path / "ws"), cwd=tmp_path)
    assert quiet.returncode == loud.returncode == 0, quiet.stderr + loud.stderr
    assert json.loads(quiet.stdout)["routing"].startswith("not measured"), quiet.stdout
    assert "| INFO" not in quiet.stderr and "report: " in quiet.stderr, quiet.stderr
    assert "| INFO" in loud.stderr, loud.stderr

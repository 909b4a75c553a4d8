"""A stranger's first commands: refusals before any work, one line each, nothing left behind; one default per option."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.core import TyperOption
from typer.testing import CliRunner

from flows.cli import app
from flows.phases.prompts import appended, prompts_summary
from tests.conftest import REPO_ROOT, write_skill
from tests.support.cli_runs import assert_refused, left_behind, skills_repo
from workspace.test_prompts import TestPrompt

LUBAN = [sys.executable, "-m", "flows.cli"]


def luban(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed command as a user runs it; PREFECT_API_URL unset, so a started flow would start a server."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PREFECT_HOME"] = str(cwd / "prefect-home")
    return subprocess.run([*LUBAN, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_missing_skills_dir_is_refused_before_prefect_starts_and_leaves_nothing(tmp_path: Path):
    result = luban("optimize", "--skills-dir", "nope", "--approval", "auto", cwd=tmp_path)
    assert_refused(result, "--skills-dir nope does not exist", "<name>/SKILL.md")
    assert left_behind(tmp_path) == []


@pytest.mark.parametrize("mode", ["full", "quick", "auto"])
def test_a_folder_without_skills_is_refused_and_the_branch_stays(tmp_path: Path, mode: str):
    repo = skills_repo(tmp_path)
    (tmp_path / "empty").mkdir()
    result = luban("optimize", "--skills-dir", "empty", "--mode", mode, "--approval", "auto", cwd=tmp_path)
    assert_refused(result, "holds no skill")
    assert repo.active_branch.name == "main" and left_behind(tmp_path) == []


def test_a_dirty_skill_is_refused_with_a_stash_command_that_works_from_here(tmp_path: Path):
    repo = skills_repo(tmp_path, dirty=True)
    result = luban("optimize", "--skills-dir", "skills", "--mode", "full", "--approval", "auto", cwd=tmp_path)
    assert_refused(result, "uncommitted changes", "git stash push -- skills/alpha")
    assert subprocess.run("git stash push -- skills/alpha", shell=True, cwd=tmp_path, check=False).returncode == 0
    assert repo.active_branch.name == "main" and not repo.is_dirty() and left_behind(tmp_path) == []


def test_full_mode_outside_git_is_refused_with_both_ways_out(tmp_path: Path):
    write_skill(tmp_path / "skills", "alpha", "# Alpha\n")
    result = luban("optimize", "--skills-dir", "skills", "--mode", "full", "--approval", "auto", cwd=tmp_path)
    assert_refused(result, "--init-git", "--mode quick")
    assert left_behind(tmp_path) == []


def test_a_workspace_in_use_is_refused_naming_the_holder(tmp_path: Path):
    from workspace.lock import WorkspaceLock

    write_skill(tmp_path / "skills", "alpha", "# Alpha\n")
    with WorkspaceLock(tmp_path / "luban-workspace" / "luban.lock"):
        result = luban("optimize", "--skills-dir", "skills", "--mode", "quick", "--approval", "auto", cwd=tmp_path)
    assert_refused(result, "in use by another Luban run", f"pid {os.getpid()}")


@pytest.mark.parametrize("args, needle", [
    (["--mode", "fast"], "--mode must be quick, full or auto"),
    (["--approval", "maybe"], "--approval must be ui, auto or cli"),
    (["--budget", "0.5"], "--budget must be in (0, 0.10]"),
    (["ghost"], "no SKILL.md for ghost"),
    (["--parallel", "2", "--approval", "cli"], "cannot all ask at once: use --approval auto, or --parallel 1"),
])
def test_bad_options_are_refused_in_one_line(tmp_path: Path, args: list[str], needle: str):
    write_skill(tmp_path / "skills", "alpha", "# Alpha\n")
    assert_refused(luban("optimize", "--skills-dir", "skills", *args, cwd=tmp_path), needle)


def test_version_and_a_help_text_for_every_option_of_every_command():
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"luban {version('luban')}"
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    options = [(name, param) for name, command in commands.items() for param in command.params if isinstance(param, TyperOption)]
    assert len(options) > 30
    assert [f"{name} {param.opts[0]}" for name, param in options if not param.help] == []


def test_one_default_for_mode_and_skills_dir_across_commands():
    defaults: dict[str, set] = {"--mode": set(), "--skills-dir": set()}
    for command in typer.main.get_command(app).commands.values():  # type: ignore[attr-defined]
        for param in command.params:
            if isinstance(param, TyperOption) and param.opts[0] in defaults:
                defaults[param.opts[0]].add(param.default)
    assert defaults == {"--mode": {"auto"}, "--skills-dir": {"."}}


def test_history_finds_the_workspace_optimize_wrote_from_the_folder_above_the_skills(tmp_path: Path, monkeypatch):
    from workspace.results_tsv import ResultRow, ResultsFile

    write_skill(tmp_path / "skills", "alpha", "# Alpha\n")
    for mode, score, stamp in (("full", 30.0, "2026-12-01T09:00:00+00:00"), ("quick", 40.0, "2026-12-01T10:00:00+00:00")):
        rows = ResultsFile(tmp_path / "luban-workspace" / mode / "alpha" / "results.tsv")
        rows.append(ResultRow(stamp, "alpha", 0, "baseline", mode, new_score=score))
    full = tmp_path / "luban-workspace" / "full" / "alpha" / "results.tsv"
    os.utime(full, (full.stat().st_mtime - 60, full.stat().st_mtime - 60))  # the quick run came last
    monkeypatch.chdir(tmp_path)  # `luban optimize --skills-dir skills` was run from here
    result = CliRunner().invoke(app, ["history", "alpha"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "quick mode" in result.stdout and "40.0" in result.stdout  # the quick run's records, found and read


def test_prompt_ids_that_are_words_can_be_appended_to():
    existing = [TestPrompt(id="login-happy-path", type="main", prompt="log in", expected="ok", held_out=False),
                TestPrompt(id="expired", type="error", prompt="expired token", expected="refuse", held_out=True)]
    designed = [TestPrompt(id=1, type="edge", prompt="two tabs", expected="one session", held_out=True)]
    merged = appended(existing, designed)
    assert [p.id for p in merged] == ["login-happy-path", "expired", 1] and merged[-1].held_out is False


def test_the_test_prompts_checkpoint_shows_the_prompts_not_a_count():
    prompts = [TestPrompt(id=1, type="main", prompt="Review PR #12 for the\nrelease", expected="a verdict", held_out=False),
               TestPrompt(id=2, type="error", prompt="Review an empty diff", expected="says nothing to review", held_out=True)]
    shown = prompts_summary("pr-review", prompts)
    assert "Review PR #12 for the release" in shown and "[held out] Review an empty diff" in shown
    assert "expected: says nothing to review" in shown

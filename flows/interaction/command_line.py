"""What every `luban` run command shares: one default per option, and Prefect's environment set before its import.

Imported by ``flows/cli.py`` at start-up, so it imports nothing heavy.
"""

from __future__ import annotations

import os
from typing import Any

import typer

# One default for every command, so `luban history` finds what `luban optimize` wrote.
SKILLS_DIR_HELP = "The folder that holds <name>/SKILL.md (also LUBAN_SKILLS_DIR)."


WORKSPACE_HELP = "Where records live; default <skills-dir>/../luban-workspace."


MODE_HELP = ("quick (copies, no git), full (git branch, dim8, review) or auto: optimize lets the mode router decide; "
             "history and report read the mode of the newest records.")


def skills_dir_option() -> Any:
    return typer.Option(".", "--skills-dir", envvar="LUBAN_SKILLS_DIR", help=SKILLS_DIR_HELP)


def mode_option() -> Any:
    return typer.Option("auto", "--mode", help=MODE_HELP)


def workspace_option() -> Any:
    return typer.Option(None, "--workspace", help=WORKSPACE_HELP)


def prefect_defaults(home: str | None = None) -> None:
    """Environment Prefect needs here, set before Prefect is imported (an explicit setting always wins).

    Without PREFECT_API_URL a flow starts a temporary API server, which takes
    17–19 s on a fresh PREFECT_HOME: give it 120 s, and no analytics (no network).
    """
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    # The temporary server's services log a cancelled flush as an ERROR with two tracebacks when it stops at the
    # end of every run: nothing a user can act on. Its real failures still surface as the flow's errors.
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
    # A command's stderr is for a person or a CI log: Prefect's INFO line for every task and flow run buries the
    # warnings and the cost. The console shows warnings and errors unless `luban -v`; the run's logs in the Prefect
    # UI (the API handler) keep every level.
    os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "1")
    if home:
        os.environ.setdefault("PREFECT_HOME", home)


JUDGE_HELP = "Model for the judged dimensions (overrides LUBAN_JUDGE_MODEL and luban.toml)."


TARGET_HELP = "Model that runs the test prompts with and without the skill, for dim8 (overrides LUBAN_TARGET_MODEL)."


EDITOR_HELP = "Model that proposes the edits (overrides LUBAN_EDITOR_MODEL)."


CALLS_HELP = "Hard cap on LLM calls for the whole run; the run stops and keeps its records when it is reached."


def llm_flags(judge_model, target_model, editor_model, max_llm_calls) -> dict:
    flags = {"judge_model": judge_model, "target_model": target_model, "editor_model": editor_model,
             "max_llm_calls": max_llm_calls}
    return {k: v for k, v in flags.items() if v is not None}

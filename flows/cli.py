"""The `luban` command. Each subcommand imports what it needs when it runs.

`luban score` is a CI gate that runs on every push, so this module imports
nothing heavy (no Prefect, openai or pandas) at the top.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC

import typer

from flows.gate.cli import score as score_command
from flows.interaction import records_cli
from flows.interaction.command_line import (
    CALLS_HELP,
    EDITOR_HELP,
    JUDGE_HELP,
    TARGET_HELP,
    llm_flags,
    mode_option,
    prefect_defaults,
    skills_dir_option,
    workspace_option,
)
from flows.interaction.doctor import doctor as doctor_command
from flows.interaction.terminal import usage_error as _usage_error
from flows.route.cli import route as route_command

app = typer.Typer(
    name="luban",
    help="Luban makes agent skills (SKILL.md) measurably better, and never worse.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"luban {version('luban')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("luban (not installed: run 'make install')")
        raise typer.Exit(0)


@app.callback()
def main(
    show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print Luban's version and exit."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's INFO lines (every flow and task run) "
                                 "on stderr; without it only warnings and errors reach the terminal."),
) -> None:
    """Score, optimize and gate agent skills."""
    if verbose:  # the flag over the environment: set before any command imports Prefect
        os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "INFO"


app.command("score")(score_command)  # flows/gate/cli.py: the CI gate, light on imports like this module
app.command("route")(route_command)  # flows/route/cli.py: routing across the library, measured
app.command("doctor")(doctor_command)  # flows/interaction/doctor.py: the model server checked before a batch
# flows/interaction/records_cli.py: the records read, or a hold lifted, without a run
for command in (records_cli.history, records_cli.report, records_cli.status, records_cli.lift, records_cli.unfreeze,
                records_cli.export_evals):
    app.command()(command)


@app.command()
def optimize(
    skills: list[str] | None = typer.Argument(None, help="Skill names to optimize (default: all under --skills-dir)."),
    skills_dir: str = skills_dir_option(),
    mode: str = mode_option(),
    approval: str = typer.Option("cli", "--approval", help="Who answers checkpoints: ui (Prefect UI), auto (safe defaults), cli."),
    max_rounds: int | None = typer.Option(None, "--max-rounds", help="Rounds per skill (default 3 quick, 5 full)."),
    budget: float = typer.Option(0.10, "--budget", help="Edit budget: Levenshtein distance ≤ budget × file length."),
    workspace: str | None = workspace_option(),
    init_git: bool = typer.Option(False, "--init-git", help="Make the skills directory a git repository first (full mode)."),
    allow_rename: bool = typer.Option(False, "--allow-rename",
                                      help="Let an edit change a skill's frontmatter name (runtimes invoke skills by it)."),
    resume: bool = typer.Option(False, "--resume", help="Continue after a stop (kept edits and rejected edits are on disk)."),
    approval_timeout: int = typer.Option(3600, "--approval-timeout", help="Seconds a ui checkpoint waits."),
    judge_model: str | None = typer.Option(None, "--judge-model", help=JUDGE_HELP),
    target_model: str | None = typer.Option(None, "--target-model", help=TARGET_HELP),
    editor_model: str | None = typer.Option(None, "--editor-model", help=EDITOR_HELP),
    max_llm_calls: int | None = typer.Option(None, "--max-llm-calls", help=CALLS_HELP),
    parallel: int = typer.Option(1, "--parallel", min=1, help="Skills whose rounds run at once, each in its own git "
                                 "worktree (needs --approval auto; offline it ends as the serial run does)."),
    wait_for_lock: int = typer.Option(0, "--wait-for-lock", min=0, help="Seconds to queue behind another run on the same "
                                      "workspace or git repository (default 0: refuse at once, naming that run)."),
    fan_out_to: str | None = typer.Option(None, "--fan-out-to", help="A deployment of the optimize-skill flow (e.g. "
                                          "optimize-skill/workers-rounds): each skill's rounds run as a child flow run on "
                                          "its pool's workers, --parallel of them at once (full mode, --approval auto)."),
) -> None:
    """Run the optimize-skills flow (Phases 0–6) locally. The run's summary is one JSON document on stdout."""
    llm = llm_flags(judge_model, target_model, editor_model, max_llm_calls)
    _refuse_early("optimize", skills_dir, skills, mode, approval, budget, workspace, init_git, resume, llm,
                  lock_wait=wait_for_lock, parallel=parallel, fan_out_to=fan_out_to)
    from pathlib import Path

    from workspace.git_ratchet import asked_on_branch

    asked_on = asked_on_branch(Path(skills_dir))  # now, not when the flow starts: another run may finish meanwhile
    _stop_at_first_interrupt(skills_dir, workspace, mode)
    prefect_defaults()
    from flows.optimize import optimize_skills

    try:
        result = optimize_skills(skills_dir=skills_dir, skills=list(skills or []), mode=mode, approval=approval,
                                 max_rounds=max_rounds, budget=budget, workspace=workspace, init_git=init_git,
                                 allow_rename=allow_rename, resume=resume, approval_timeout=approval_timeout, llm=llm,
                                 lock_wait=wait_for_lock, parallel=parallel, fan_out_to=fan_out_to, start_branch=asked_on)
    except Exception as err:  # noqa: BLE001 - every refusal reaches the user as one clear line
        typer.echo(f"luban optimize: {err}", err=True)
        raise typer.Exit(2) from None
    _emit_json(result)
    typer.echo(f"report: {result['report']}", err=True)


@app.command()
def evaluate(
    skills: list[str] | None = typer.Argument(None, help="Skill names (default: all under --skills-dir)."),
    skills_dir: str = skills_dir_option(),
    mode: str = mode_option(),
    workspace: str | None = workspace_option(),
) -> None:
    """Run Phases 0–1 only: score and record baselines; nothing is edited. One JSON document on stdout."""
    _refuse_early("evaluate", skills_dir, skills, mode, "auto", 0.10, workspace, False, False, {}, evaluate_only=True)
    _stop_evaluate_at_first_interrupt(skills_dir, skills, workspace, mode)
    prefect_defaults()
    from flows.optimize import evaluate_skills

    try:
        result = evaluate_skills(skills_dir=skills_dir, skills=list(skills or []), mode=mode, workspace=workspace, approval="auto")
    except Exception as err:  # noqa: BLE001 - every refusal reaches the user as one clear line
        typer.echo(f"luban evaluate: {err}", err=True)
        raise typer.Exit(2) from None
    _emit_json(result)


def _refuse_early(command: str, skills_dir: str, skills, mode: str, approval: str, budget: float, workspace, init_git: bool,
                  resume: bool, llm: dict, evaluate_only: bool = False, lock_wait: int = 0, parallel: int = 1,
                  fan_out_to: str | None = None) -> None:
    """The run's refusals before any Prefect server starts: one line, exit 2, nothing written."""
    from flows.phases.preflight import Refused, preflight

    try:
        preflight(skills_dir, list(skills or []), mode, approval, budget, workspace, init_git, resume, llm, evaluate_only,
                  lock_wait, parallel, fan_out_to)
    except Refused as err:
        _usage_error(str(err), command)


def _stop_at_first_interrupt(skills_dir: str, workspace: str | None, mode: str) -> None:
    from datetime import datetime
    from pathlib import Path

    from flows.interaction.interrupt import (
        exit_at_first_interrupt,
        interrupted_document,
        interrupted_summary,
        resume_command,
    )
    from workspace.layout import default_root

    started = datetime.now(UTC).replace(microsecond=0)  # results.tsv stamps whole seconds
    root = Path(workspace).resolve() if workspace else default_root(Path(skills_dir))
    exit_at_first_interrupt(
        lambda how: interrupted_summary(root, started, resume_command(skills_dir, workspace, mode, root), how),
        lambda how: interrupted_document(root, started, resume_command(skills_dir, workspace, mode, root), how))


def _stop_evaluate_at_first_interrupt(skills_dir: str, skills, workspace: str | None, mode: str) -> None:
    import shlex
    from datetime import datetime
    from pathlib import Path

    from flows.interaction.interrupt import evaluated_summary, exit_at_first_interrupt
    from workspace.layout import default_root

    started = datetime.now(UTC).replace(microsecond=0)
    root = Path(workspace).resolve() if workspace else default_root(Path(skills_dir))
    again = shlex.join(["luban", "evaluate", *(skills or []), "--skills-dir", skills_dir, "--mode", mode]
                       + (["--workspace", workspace] if workspace else []))
    exit_at_first_interrupt(lambda how: evaluated_summary(root, started, again, how))


def _emit_json(result: dict) -> None:
    """Exactly one JSON document on stdout (``luban optimize > run.json``); everything else goes to stderr."""
    import json

    sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


@app.command()
def serve(limit: int | None = typer.Option(None, "--limit", help="Most runs at once.")) -> None:
    """Serve optimize-skills/batch, optimize-skill/rounds (--fan-out-to), evaluate-skills/evaluate, route-library/route
    and optimize-routing/route-rounds (needs PREFECT_API_URL)."""
    prefect_defaults()
    from flows.serving import serve_forever

    serve_forever(limit)


@app.command("setup-server")
def setup_server(heartbeat: int = typer.Option(60, "--heartbeat", min=31, help="The workers' "
                                               "PREFECT_FLOWS_HEARTBEAT_FREQUENCY in seconds (prefect.yaml sets 60)."),
                 llm_limit: int | None = typer.Option(None, "--llm-limit", min=1, help="LLM calls in flight at once "
                                                      "across all workers (global concurrency limit luban-llm)."),
                 llm_rate: float | None = typer.Option(None, "--llm-rate", min=0.01, help="LLM calls per second across "
                                                       "all workers (global concurrency limit luban-llm-rate).")) -> None:
    """Once per shared Prefect server: the automation that marks a lost machine's runs Crashed, and the limits on LLM
    calls all workers share (needs PREFECT_API_URL)."""
    prefect_defaults()
    from flows.server.setup import ZOMBIE_AUTOMATION, ensure_llm_limits, ensure_zombie_automation

    automation_id, created = ensure_zombie_automation(heartbeat)
    typer.echo(f"{'created' if created else 'already there'}: automation '{ZOMBIE_AUTOMATION}' ({automation_id})")
    for line in ensure_llm_limits(llm_limit, llm_rate):
        typer.echo(f"limit {line}")


@app.command()
def pending() -> None:
    """List flow runs paused at a checkpoint, waiting for an answer."""
    from flows.serving import pending as list_pending

    runs = list_pending()
    if not runs:
        typer.echo("no run is waiting for an answer")
    for run in runs:
        typer.echo(f"{run.id}  {run.flow}/{run.name}  checkpoint={run.checkpoint}  state={run.state}  since {run.since}")


@app.command()
def approve(
    run_id: str = typer.Argument(..., help="The paused flow run's id (see 'luban pending')."),
    reject: bool = typer.Option(False, "--reject", help="Answer no at the checkpoint."),
    comment: str = typer.Option("", "--comment", help="Why: stored with the answer in the run's records."),
    choice: str = typer.Option("", "--choice", help="For checkpoints that offer choices."),
) -> None:
    """Answer a paused run's checkpoint, as the form in the Prefect UI does."""
    from flows.serving import NotPaused
    from flows.serving import approve as answer

    try:
        answer(run_id, reject=reject, comment=comment, choice=choice)
    except NotPaused as err:
        typer.echo(f"luban approve: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{run_id}: {'rejected' if reject else 'approved'}")


if __name__ == "__main__":
    app()

"""The `luban` command. Each subcommand imports what it needs when it runs.

`luban score` is a CI gate that runs on every push, so this module imports
nothing heavy (no Prefect, openai or pandas) at the top.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

app = typer.Typer(
    name="luban",
    help="Luban makes agent skills (SKILL.md) measurably better, and never worse.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    github = "github"


@app.callback()
def main() -> None:
    """Score, optimize and gate agent skills."""


@app.command()
def score(
    paths: Optional[List[str]] = typer.Argument(
        None, help="SKILL.md files, skill directories, or directories searched recursively."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout (same as --format json)."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text, json, or github (annotations + step summary)."),
    fail_under: Optional[float] = typer.Option(
        None, "--fail-under", help="Fail when a skill's deterministic subtotal (or total, once LLM dims are scored) is below N."
    ),
    strict: bool = typer.Option(False, "--strict", help="Fail on any validation violation."),
    changed: bool = typer.Option(False, "--changed", help="Score only SKILL.md files changed since --base, and compare."),
    base: Optional[str] = typer.Option(None, "--base", help="Revision to compare against with --changed (e.g. origin/main)."),
    allow_regression: bool = typer.Option(False, "--allow-regression", help="With --changed, do not fail when a skill got worse."),
) -> None:
    """Score skills with the deterministic rubric; exit 0 good, 1 gate failed, 2 usage error or unscorable skill."""
    from flows.score_command import EXIT_ERROR, ScoreOptions, apply_gates, collect
    from flows.score_output import write_github, write_json, write_text

    if base is not None and not changed:
        _usage_error("--base goes with --changed: 'luban score --changed --base origin/main'")
    if changed and base is None:
        _usage_error("--changed needs --base REV, the revision to compare against, e.g. --base origin/main")
    if not paths and not changed:
        _usage_error("name at least one SKILL.md, skill directory or directory to search, e.g. 'luban score skills/'")
    options = ScoreOptions(tuple(paths or ()), fail_under, strict, changed, base, allow_regression)
    try:
        results = collect(options)
    except ValueError as err:  # RevisionError: a repository or revision that cannot be used
        typer.echo(f"luban score: {err}", err=True)
        raise typer.Exit(EXIT_ERROR) from None
    status = apply_gates(results, options)
    fmt = OutputFormat.json if as_json else output_format
    if fmt is OutputFormat.json:
        write_json(results, status, sys.stdout)
    elif fmt is OutputFormat.github:
        write_github(results, status, sys.stdout)
    else:
        from rich.console import Console

        if changed and not results:
            typer.echo(f"no SKILL.md changed since {base}")
        write_text(results, status, Console())
    raise typer.Exit(status)


def _workspace(skills_dir: str, mode: str, workspace: Optional[str]):
    from pathlib import Path

    from workspace.layout import Workspace

    if mode not in ("quick", "full"):
        _usage_error(f"--mode must be quick or full, not {mode!r}", "history/report")
    return Workspace.open(Path(skills_dir), mode, Path(workspace) if workspace else None)  # type: ignore[arg-type]


@app.command()
def history(
    skill: str = typer.Argument(..., help="The skill's directory name."),
    skills_dir: str = typer.Option(".", "--skills-dir", help="The directory holding the skills."),
    mode: str = typer.Option("full", "--mode", help="Whose records: quick or full (kept apart)."),
    workspace: Optional[str] = typer.Option(None, "--workspace", help="Defaults to <skills-dir>/../luban-workspace."),
) -> None:
    """Show a skill's results.tsv, newest first."""
    from rich.console import Console
    from rich.table import Table

    from workspace.results_tsv import ResultsFile

    ws = _workspace(skills_dir, mode, workspace)
    path = ws.results_tsv(skill)
    if not path.exists():
        typer.echo(f"luban history: no {mode}-mode records for '{skill}' ({path} does not exist)", err=True)
        raise typer.Exit(2)
    results = ResultsFile(path)
    repair = results.ensure()
    if repair:
        typer.echo(repair.message(path), err=True)
    frame = results.frame().iloc[::-1]
    table = Table(title=f"{skill} — {mode} mode, newest first", title_justify="left")
    columns = ["timestamp", "round", "status", "old_score", "new_score", "delta", "dim_changed", "stop", "samples", "bound",
               "llm_calls", "eval_mode", "note"]
    for column in columns:
        table.add_column(column, overflow="fold")
    for _, row in frame.iterrows():
        table.add_row(*["" if str(row[c]) == "nan" else str(row[c]) for c in columns])
    Console().print(table)


@app.command()
def report(
    skills_dir: str = typer.Option(".", "--skills-dir", help="The directory holding the skills."),
    mode: str = typer.Option("full", "--mode", help="Which records: quick or full."),
    workspace: Optional[str] = typer.Option(None, "--workspace", help="Defaults to <skills-dir>/../luban-workspace."),
) -> None:
    """Rebuild the last run's report from the records alone (Markdown and a PNG chart)."""
    from datetime import datetime, timezone

    from rich.console import Console
    from rich.markdown import Markdown

    from scoring.governance.report import RunFacts, chart_png, render
    from workspace.governance_records import mode_history, write_report

    ws = _workspace(skills_dir, mode, workspace)
    frame = mode_history(ws)
    if frame.empty:
        typer.echo(f"luban report: no {mode}-mode records under {ws.mode_dir}; run 'luban optimize' first", err=True)
        raise typer.Exit(2)
    markdown = render(frame, RunFacts(mode=mode, backups=str(ws.backups())))
    md, png = write_report(ws, markdown, chart_png(frame), datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"))
    Console().print(Markdown(markdown))
    typer.echo(f"report: {md}\nchart:  {png}")


def prefect_defaults(home: str | None = None) -> None:
    """Environment Prefect needs here, set before Prefect is imported (an explicit setting always wins).

    Without PREFECT_API_URL a flow starts a temporary API server, which takes
    17–19 s on a fresh PREFECT_HOME: give it 120 s, and no analytics (no network).
    """
    import os

    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "1")
    if home:
        os.environ.setdefault("PREFECT_HOME", home)


def _llm_flags(judge_model, target_model, editor_model, max_llm_calls) -> dict:
    flags = {"judge_model": judge_model, "target_model": target_model, "editor_model": editor_model,
             "max_llm_calls": max_llm_calls}
    return {k: v for k, v in flags.items() if v is not None}


@app.command()
def optimize(
    skills: Optional[List[str]] = typer.Argument(None, help="Skill names to optimize (default: all under --skills-dir)."),
    skills_dir: str = typer.Option(..., "--skills-dir", help="The directory holding <name>/SKILL.md."),
    mode: str = typer.Option("auto", "--mode", help="quick, full, or auto (the mode router decides)."),
    approval: str = typer.Option("cli", "--approval", help="Who answers checkpoints: ui (Prefect UI), auto (safe defaults), cli."),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", help="Rounds per skill (default 3 quick, 5 full)."),
    budget: float = typer.Option(0.10, "--budget", help="Edit budget: Levenshtein distance ≤ budget × file length."),
    workspace: Optional[str] = typer.Option(None, "--workspace", help="Defaults to <skills-dir>/../luban-workspace."),
    init_git: bool = typer.Option(False, "--init-git", help="Make the skills directory a git repository first (full mode)."),
    allow_rename: bool = typer.Option(False, "--allow-rename",
                                      help="Let an edit change a skill's frontmatter name (runtimes invoke skills by it)."),
    resume: bool = typer.Option(False, "--resume", help="Continue after a stop (kept edits and rejected edits are on disk)."),
    approval_timeout: int = typer.Option(3600, "--approval-timeout", help="Seconds a ui checkpoint waits."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model"),
    target_model: Optional[str] = typer.Option(None, "--target-model"),
    editor_model: Optional[str] = typer.Option(None, "--editor-model"),
    max_llm_calls: Optional[int] = typer.Option(None, "--max-llm-calls"),
) -> None:
    """Run the optimize-skills flow (Phases 0–6) locally."""
    import json

    prefect_defaults()
    from flows.optimize import optimize_skills

    try:
        result = optimize_skills(skills_dir=skills_dir, skills=list(skills or []), mode=mode, approval=approval,  # type: ignore[arg-type]
                                 max_rounds=max_rounds, budget=budget, workspace=workspace, init_git=init_git,
                                 allow_rename=allow_rename,
                                 resume=resume, approval_timeout=approval_timeout,
                                 llm=_llm_flags(judge_model, target_model, editor_model, max_llm_calls))
    except Exception as err:  # noqa: BLE001 - every refusal reaches the user as one clear line
        typer.echo(f"luban optimize: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    typer.echo(f"report: {result['report']}")


@app.command()
def evaluate(
    skills: Optional[List[str]] = typer.Argument(None, help="Skill names (default: all)."),
    skills_dir: str = typer.Option(..., "--skills-dir"),
    mode: str = typer.Option("quick", "--mode", help="quick or full."),
    workspace: Optional[str] = typer.Option(None, "--workspace"),
) -> None:
    """Run Phases 0–1 only: score and record baselines; nothing is edited."""
    import json

    prefect_defaults()
    from flows.optimize import evaluate_skills

    try:
        result = evaluate_skills(skills_dir=skills_dir, skills=list(skills or []), mode=mode, workspace=workspace, approval="auto")
    except Exception as err:  # noqa: BLE001
        typer.echo(f"luban evaluate: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(result, indent=2, ensure_ascii=False, default=str))


@app.command()
def unfreeze(
    skill: str = typer.Argument(...),
    skills_dir: str = typer.Option(..., "--skills-dir"),
    workspace: Optional[str] = typer.Option(None, "--workspace"),
) -> None:
    """Lift a freeze or read-only protection a person has checked (the only way out of a permanent one)."""
    from workspace import profile as profile_store
    from workspace.file_ratchet import clear_readonly

    cleared = []
    for mode in ("quick", "full"):
        ws = _workspace(skills_dir, mode, workspace)
        if clear_readonly(ws, skill):
            cleared.append(f"read-only protection ({mode})")
    ws = _workspace(skills_dir, "full", workspace)
    if skill in profile_store.load(ws.profile).frozen:
        profile_store.update(ws.profile, lambda p: p.frozen.pop(skill, None))
        cleared.append("freeze")
    typer.echo(f"{skill}: lifted {', '.join(cleared)}" if cleared else f"{skill}: was neither frozen nor read-only")


@app.command()
def serve(limit: Optional[int] = typer.Option(None, "--limit", help="Most runs at once.")) -> None:
    """Serve the deployments optimize-skills/batch and optimize-skills/evaluate (needs PREFECT_API_URL)."""
    prefect_defaults()
    from flows.serving import serve_forever

    serve_forever(limit)


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
    comment: str = typer.Option("", "--comment"),
    choice: str = typer.Option("", "--choice", help="For checkpoints that offer choices."),
) -> None:
    """Answer a paused run's checkpoint, as the form in the Prefect UI does."""
    from flows.serving import NotPaused, approve as answer

    try:
        answer(run_id, reject=reject, comment=comment, choice=choice)
    except NotPaused as err:
        typer.echo(f"luban approve: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"{run_id}: {'rejected' if reject else 'approved'}")


def _usage_error(message: str, command: str = "score") -> None:
    typer.echo(f"luban {command}: {message}", err=True)
    raise typer.Exit(2)


if __name__ == "__main__":
    app()

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
    columns = ["timestamp", "round", "status", "old_score", "new_score", "delta", "dim_changed", "eval_mode", "note"]
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


def _usage_error(message: str, command: str = "score") -> None:
    typer.echo(f"luban {command}: {message}", err=True)
    raise typer.Exit(2)


if __name__ == "__main__":
    app()

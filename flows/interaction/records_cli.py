"""`luban history`, `luban report` and `luban lift`: the records a run left, read (or a hold lifted) without a run.

Each command imports what it needs when it runs: ``flows/cli.py`` imports this module at start-up.
"""

from __future__ import annotations

from datetime import UTC

import typer

from flows.interaction.command_line import mode_option, skills_dir_option, workspace_option
from flows.interaction.terminal import usage_error as _usage_error


def _workspace(skills_dir: str, mode: str, workspace: str | None, command: str):
    """The workspace ``optimize`` wrote for these options, in the mode asked (auto: the newest records' mode)."""
    from pathlib import Path

    from workspace.layout import Mode, Workspace, default_root, find_workspace, newest_mode

    if mode not in ("quick", "full", "auto"):
        _usage_error(f"--mode must be quick, full or auto, not {mode!r}", command)
    root = Path(workspace) if workspace else find_workspace(Path(skills_dir))
    if root is None:
        _usage_error(f"no Luban workspace for --skills-dir {skills_dir} ({default_root(Path(skills_dir))} "
                     "does not exist); give the --skills-dir you optimized, or --workspace, or run 'luban optimize' first",
                     command)
    assert root is not None  # _usage_error exits
    chosen = newest_mode(root) if mode == "auto" else mode
    return Workspace.open(Path(skills_dir), Mode(chosen or "full"), root)


# What fits 80 columns (a CI log, a cron mail); --wide shows the rest.
HISTORY_NARROW = ["timestamp", "round", "status", "new_score", "delta", "dim_changed", "stop"]
NARROW_LABELS = {"round": "#", "new_score": "score", "delta": "Δ", "dim_changed": "dim"}
HISTORY_WIDE = ["timestamp", "round", "status", "old_score", "new_score", "delta", "dim_changed", "stop", "samples",
                "bound", "llm_calls", "eval_mode", "note"]


def history(
    skill: str = typer.Argument(..., help="The skill's directory name."),
    skills_dir: str = skills_dir_option(),
    mode: str = mode_option(),
    workspace: str | None = workspace_option(),
    routing: bool = typer.Option(False, "--routing", help="The skill's routing rounds (luban route --optimize) instead "
                                 "of the rubric's."),
    wide: bool = typer.Option(False, "--wide", help="Every column, each row's note included (for a wide terminal)."),
) -> None:
    """Show a skill's results.tsv (or its routing rounds), newest first."""
    from rich.console import Console
    from rich.table import Table

    from workspace.results_tsv import ResultsFile, RowKind

    ws = _workspace(skills_dir, "full" if routing else mode, workspace, "history")
    path = ws.routing_tsv(skill) if routing else ws.results_tsv(skill)
    if not path.exists():
        typer.echo(f"luban history: no {'routing' if routing else ws.mode + '-mode'} records for '{skill}' "
                   f"({path} does not exist)", err=True)
        raise typer.Exit(2)
    results = ResultsFile(path)
    repair = results.ensure()
    if repair:
        typer.echo(repair.message(path), err=True)
    frame = results.frame(RowKind.ROUTING if routing else RowKind.RUBRIC).iloc[::-1]
    what = "routing rounds" if routing else f"{ws.mode} mode"
    table = Table(title=f"{skill} — {what}, newest first", title_justify="left")
    columns = HISTORY_WIDE if wide else HISTORY_NARROW
    for column in columns:
        short = not wide and column in ("timestamp", "dim_changed", "status", "stop")  # never cut mid-word
        table.add_column(column if wide else NARROW_LABELS.get(column, column), overflow="fold", no_wrap=short)
    for _, row in frame.iterrows():
        cells = ["" if str(row[c]) == "nan" else str(row[c]) for c in columns]
        table.add_row(*([cells[0][:16].replace("T", " "), *cells[1:]] if not wide else cells))
    Console().print(table)
    if not wide:
        typer.echo("(--wide: every column: samples, bound, calls, eval mode, each row's note)")


def report(
    skills_dir: str = skills_dir_option(),
    mode: str = mode_option(),
    workspace: str | None = workspace_option(),
) -> None:
    """Rebuild the last run's report from the records alone (Markdown and a PNG chart)."""
    from datetime import datetime

    from rich.console import Console
    from rich.markdown import Markdown

    from scoring.governance.charts import chart_png
    from scoring.governance.report import RunFacts, render
    from workspace import run_marker
    from workspace.governance_records import mode_history, write_report

    ws = _workspace(skills_dir, mode, workspace, "report")
    frame = mode_history(ws)
    if frame.empty:
        typer.echo(f"luban report: no {ws.mode}-mode records under {ws.mode_dir}; run 'luban optimize' first", err=True)
        raise typer.Exit(2)
    recorded = run_marker.latest_report_facts(ws.root, ws.mode) or {}  # what Phase 5 of the newest run saw
    listed = {k: tuple(recorded.get(k, ())) for k in ("alerts", "notices", "totals", "fallbacks")}
    facts = RunFacts(**{**recorded, "mode": ws.mode, **listed}) if recorded else RunFacts(mode=ws.mode, backups=str(ws.backups()))
    markdown = render(frame, facts)
    md, png = write_report(ws, markdown, chart_png(frame), datetime.now(UTC).strftime("%Y%m%d-%H%M%S"))
    Console().print(Markdown(markdown))
    typer.echo(f"report: {md}\nchart:  {png}")


def status(
    skills_dir: str = skills_dir_option(),
    mode: str = mode_option(),
    workspace: str | None = workspace_option(),
    runs: int = typer.Option(5, "--runs", min=1, help="How many of each skill's last runs the Δ and kept columns cover."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout instead of the table."),
    wide: bool = typer.Option(False, "--wide", help="Every column in the table, the reasons included (for a wide "
                              "terminal); without it the table fits 80 columns and the reasons follow it."),
) -> None:
    """The library at a glance: per skill its last run, its score over the last runs, what holds it (frozen, paused,
    resting), alert counters, guards and edit budget; the run branches still open."""
    import json

    from rich.console import Console
    from rich.table import Table

    from workspace.library_status import held_lines, library_status, narrow_rows, rows_for_table

    ws = _workspace(skills_dir, mode, workspace, "status")
    recorded = sorted(p.parent.name for p in ws.mode_dir.glob("*/results.tsv"))
    state = library_status(ws, sorted(set(ws.skill_names()) | set(recorded)), runs)
    if as_json:
        typer.echo(json.dumps(state.to_json(), indent=2, ensure_ascii=False))
        return
    rows = rows_for_table(state) if wide else narrow_rows(state)
    table = Table(title=f"{ws.skills_dir} — {ws.mode} mode", title_justify="left")
    for column in (rows[0] if rows else {"skill": ""}):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*row.values())
    console = Console()
    console.print(table)
    for line in [] if wide else held_lines(state):
        console.print(line, highlight=False)
    held = sum(not s.state.startswith("ok") for s in state.skills)
    console.print(f"{len(state.skills)} skill(s), {held} held back; edit budget {state.budget}", highlight=False)
    console.print(f"library alerts: {', '.join(state.library_alerts) or 'none'}; "
                  f"run branches: {', '.join(state.branches) or 'none'}", highlight=False)


def lift(
    skill: str | None = typer.Argument(None, help="The skill whose freeze, pause, read-only protection, budget and "
                                       "guards to lift (its alert counters are reset with them)."),
    guard: str | None = typer.Option(None, "--guard", help="Lift the oscillation guard on this dimension (e.g. dim3)."),
    budget: bool = typer.Option(False, "--budget", help="Undo every edit-budget tightening (back to 10 %)."),
    every: bool = typer.Option(False, "--all", help="Lift everything that holds any skill, and say what for each."),
    skills_dir: str = skills_dir_option(),
    workspace: str | None = workspace_option(),
) -> None:
    """Lift what holds skills back between runs — a freeze, a pause, a guard, a budget tightening — and say what.
    A hold the library's alert put on every skill is lifted for each when it is lifted for one."""
    from workspace import profile as profile_store
    from workspace.file_ratchet import clear_readonly
    from workspace.holds import lift as lift_holds

    if skill is None and guard is None and not budget and not every:
        _usage_error("name a skill, --all, --guard DIM or --budget (see 'luban status' for what holds what)", "lift")
    lifted: list[str] = []
    if skill is not None:
        for mode in ("quick", "full"):
            if clear_readonly(_workspace(skills_dir, mode, workspace, "lift"), skill):
                lifted.append(f"{skill}: read-only protection ({mode})")
    ws = _workspace(skills_dir, "full", workspace, "lift")
    if ws.profile.exists():
        profile_store.update(ws.profile, lambda p: lifted.extend(lift_holds(p, skill, guard, budget, every)))
    what = "every skill" if every else skill or (f"guard {guard}" if guard else "budget")
    typer.echo("\n".join(f"lifted {line}" for line in lifted) if lifted else f"{what}: nothing held it")


def export_evals(
    skill: str = typer.Argument(..., help="The skill's directory name."),
    skills_dir: str = skills_dir_option(),
    mode: str = mode_option(),
    workspace: str | None = workspace_option(),
) -> None:
    """Write the test prompts Luban designed for a skill as its evals/evals.json (never over the author's own)."""
    from workspace import author_evals, test_prompts

    ws = _workspace(skills_dir, mode, workspace, "export-evals")
    source = ws.test_prompts(skill)
    if not source.exists():
        _usage_error(f"no {ws.mode}-mode test prompts for '{skill}' ({source} does not exist); run 'luban optimize' "
                     "first", "export-evals")
    try:
        written = author_evals.export_prompts(ws.skill_file(skill).parent, test_prompts.load(source))
    except (author_evals.AuthorEvalsError, test_prompts.TestPromptsError) as err:
        typer.echo(f"luban export-evals: {err}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {written} ({skill}'s test prompts from {source})")


def unfreeze(
    skill: str = typer.Argument(..., help="The skill's directory name."),
    skills_dir: str = skills_dir_option(),
    workspace: str | None = workspace_option(),
) -> None:
    """The same as 'luban lift SKILL' (kept for scripts written before it)."""
    lift(skill, guard=None, budget=False, every=False, skills_dir=skills_dir, workspace=workspace)

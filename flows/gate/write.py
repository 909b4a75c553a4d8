"""How `luban score` shows its results: rich tables, one JSON document, or GitHub annotations (JUnit XML and
SARIF are in flows/gate/ci_formats.py). Every path is the one the gate was configured to show (relative)."""

from __future__ import annotations

import json
import os
import sys
from typing import TextIO

from flows.gate import ci_formats
from flows.gate.check import ScoreOptions, SkillResult, severity
from flows.gate.summary import changed_summary, delta_cell, dim_deltas, markdown_summary, summary, summary_line, to_json_entry
from scoring.formula import explain_total


def write(fmt: str, results: list[SkillResult], status: int, options: ScoreOptions, out: TextIO | None = None) -> None:
    """The results in ``fmt`` (text, json, github, junit, sarif) on ``out`` (stdout)."""
    out = out or sys.stdout
    if fmt == "json":
        write_json(results, status, out)
    elif fmt == "github":
        write_github(results, status, out, options)
    elif fmt in ("junit", "sarif"):
        (ci_formats.write_junit if fmt == "junit" else ci_formats.write_sarif)(results, status, out, options)
    else:
        from rich.console import Console

        if options.changed and not results:
            out.write(f"no SKILL.md changed since {options.base}\n")
        write_text(results, status, Console(file=out))


def write_json(results: list[SkillResult], status: int, out: TextIO) -> None:
    """One JSON document, ``{"skills": [...], "summary": {...}}``, one skill per line: written skill by skill, so a
    tree of a thousand skills is never one string in memory (and compact: a third of the indented size and time)."""
    out.write('{"skills": [')
    for index, result in enumerate(results):
        out.write(("\n" if index == 0 else ",\n") + json.dumps(to_json_entry(result), ensure_ascii=False))
    out.write('\n],\n"summary": ' + json.dumps(summary(results, status), ensure_ascii=False) + "}\n")


def write_text(results: list[SkillResult], status: int, console) -> None:
    from rich.table import Table

    for result in results:
        if result.score is None:
            console.print(f"[bold red]✗[/] {result.error}", highlight=False)
            continue
        score = result.score
        title = f"{score.skill}  ·  {explain_total(score.dims)}  ·  deterministic {score.deterministic_subtotal}/31"
        table = Table(title=title, title_justify="left", show_lines=False)
        table.add_column("dimension", max_width=24)
        for column in ("weight", "score", "source"):
            table.add_column(column, justify="left" if column == "source" else "right", no_wrap=True)
        deltas = dim_deltas(result)
        if deltas:
            table.add_column("Δ", justify="right", no_wrap=True)
        table.add_column("first reason", overflow="fold", ratio=1)
        for dim in score.dims:
            if dim.score is None:
                continue
            row = [f"{dim.dim} {dim.name}", str(dim.weight), f"{dim.score:g}", dim.source]
            if deltas:
                row.append(delta_cell(deltas.get(dim.dim)))
            row.append(dim.reasons[0] if dim.reasons else "")
            table.add_row(*row)
        console.print(table)
        not_scored = [d for d in score.dims if d.score is None]
        if not_scored:
            names = ", ".join(d.dim for d in not_scored)
            console.print(f"  unscored ({sum(d.weight for d in not_scored)} points): {names} — {not_scored[0].reasons[0]}")
        for violation in score.violations:
            where = f"{result.source.path}:{violation.line}" if violation.line else result.source.path
            colour = "red" if severity(violation.kind).value == "error" else "yellow"
            console.print(f"  [{colour}]{where}[/] {severity(violation.kind).value} {violation.kind}: {violation.message}",
                          highlight=False)
        for ignored in result.ignored:
            where = f"{result.source.path}:{ignored.line}" if ignored.line else result.source.path
            console.print(f"  [dim]{where} ignored {ignored.rule} ({ignored.why}): {ignored.message}[/]", highlight=False)
        if result.is_new:
            console.print("  new skill: nothing at the base revision to compare with")
        for failure in result.gate_failures:
            console.print(f"  [bold red]gate:[/] {failure}")
    console.print(summary_line(results, status))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(results: list[SkillResult], status: int, out: TextIO, options: ScoreOptions | None = None) -> None:
    """Workflow-command annotations on stdout (level = the finding's severity; an ignored one as a notice), and a
    Markdown table in the step summary (with --changed, each skill's before → after)."""
    for result in results:
        file = _escape_property(result.source.path)
        if result.score is None:
            out.write(f"::error file={file}::{_escape_data(result.error or 'could not be scored')}\n")
            continue
        for v in result.score.violations:
            line = f",line={v.line}" if v.line else ""
            out.write(f"::{severity(v.kind).value} file={file}{line},title={v.kind}::{_escape_data(v.message)}\n")
        for i in result.ignored:
            line = f",line={i.line}" if i.line else ""
            out.write(f"::notice file={file}{line},title=ignored {i.rule}::{_escape_data(f'{i.message} ({i.why})')}\n")
        for failure in result.gate_failures:
            out.write(f"::error file={file},title=luban gate::{_escape_data(failure)}\n")
    out.write(summary_line(results, status) + "\n")
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(changed_summary(results, status, options.base) if options and options.changed
                         else markdown_summary(results, status))

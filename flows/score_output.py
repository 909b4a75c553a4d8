"""How `luban score` shows its results: rich tables, one JSON document, or GitHub annotations."""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from flows.score_command import SkillResult
from scoring import WEIGHTS, round1
from scoring.formula import explain_total

_ERROR_KINDS = {"merge_marker", "frontmatter_invalid", "escaping_reference"}


def dim_deltas(result: SkillResult) -> dict[str, float | None]:
    if result.score is None or result.base_score is None:
        return {}
    deltas: dict[str, float | None] = {}
    for dim in WEIGHTS:
        new, old = result.score.dim(dim).score, result.base_score.dim(dim).score
        deltas[dim] = None if new is None or old is None else round1(new - old)
    return deltas


def to_json_entry(result: SkillResult) -> dict[str, Any]:
    if result.score is None:
        return {"skill": result.source.name, "path": result.source.path, "error": result.error}
    entry: dict[str, Any] = {"skill": result.source.name, "path": result.source.path}
    entry.update(result.score.to_dict())
    entry["gate_failures"] = list(result.gate_failures)
    if result.base_score is not None:
        entry["base"] = {
            "path": result.base_path,
            "total": result.base_score.total,
            "deterministic_subtotal": result.base_score.deterministic_subtotal,
            "delta_total": round1(result.score.total - result.base_score.total),
            "delta_dims": dim_deltas(result),
        }
    elif result.is_new:
        entry["base"] = None
    return entry


def write_json(results: list[SkillResult], status: int, out: TextIO) -> None:
    document = {
        "skills": [to_json_entry(r) for r in results],
        "summary": summary(results, status),
    }
    out.write(json.dumps(document, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def summary(results: list[SkillResult], status: int) -> dict[str, Any]:
    return {
        "scored": sum(r.score is not None for r in results),
        "errors": sum(r.score is None for r in results),
        "violations": sum(len(r.score.violations) for r in results if r.score),
        "gate_failures": sum(len(r.gate_failures) for r in results),
        "exit_status": status,
    }


def summary_line(results: list[SkillResult], status: int) -> str:
    s = summary(results, status)
    verdict = {0: "passed", 1: "FAILED (gate)", 2: "FAILED (unscorable skill)"}[status]
    return (f"{s['scored']} scored, {s['errors']} unscorable, {s['violations']} violation(s), "
            f"{s['gate_failures']} gate failure(s): {verdict}")


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
                row.append(_delta_cell(deltas.get(dim.dim)))
            row.append(dim.reasons[0] if dim.reasons else "")
            table.add_row(*row)
        console.print(table)
        not_scored = [d for d in score.dims if d.score is None]
        if not_scored:
            names = ", ".join(d.dim for d in not_scored)
            console.print(f"  unscored ({sum(d.weight for d in not_scored)} points): {names} — {not_scored[0].reasons[0]}")
        for violation in score.violations:
            where = f"{result.source.path}:{violation.line}" if violation.line else result.source.path
            console.print(f"  [yellow]{where}[/] {violation.kind}: {violation.message}", highlight=False)
        if result.is_new:
            console.print("  new skill: nothing at the base revision to compare with")
        for failure in result.gate_failures:
            console.print(f"  [bold red]gate:[/] {failure}")
    console.print(summary_line(results, status))


def _delta_cell(delta: float | None) -> str:
    if delta is None:
        return ""
    if delta > 0:
        return f"[green]+{delta:g}[/]"
    return f"[red]{delta:g}[/]" if delta < 0 else "0"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(results: list[SkillResult], status: int, out: TextIO) -> None:
    """Workflow-command annotations on stdout, and a Markdown table in the step summary."""
    for result in results:
        file = _escape_property(result.source.path)
        if result.score is None:
            out.write(f"::error file={file}::{_escape_data(result.error or 'could not be scored')}\n")
            continue
        for v in result.score.violations:
            level = "error" if v.kind in _ERROR_KINDS else "warning"
            line = f",line={v.line}" if v.line else ""
            out.write(f"::{level} file={file}{line},title={v.kind}::{_escape_data(v.message)}\n")
        for failure in result.gate_failures:
            out.write(f"::error file={file},title=luban gate::{_escape_data(failure)}\n")
    out.write(summary_line(results, status) + "\n")
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(markdown_summary(results, status))


def markdown_summary(results: list[SkillResult], status: int) -> str:
    lines = ["## Luban skill scores", "", "| skill | total | deterministic /31 | violations | gate |", "|---|---:|---:|---:|---|"]
    for r in results:
        if r.score is None:
            lines.append(f"| {r.source.name} | — | — | — | ❌ {(r.error or '').replace('|', '∣')} |")
            continue
        gate = "❌ " + "; ".join(r.gate_failures) if r.gate_failures else "✅"
        lines.append(f"| {r.score.skill} | {r.score.total} | {r.score.deterministic_subtotal} | {len(r.score.violations)} | {gate} |")
    lines += ["", summary_line(results, status), ""]
    return "\n".join(lines)

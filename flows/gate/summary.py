"""What a gate run comes to, in words and numbers: the summary line, per-skill deltas, the step summary."""

from __future__ import annotations

from typing import Any

from flows.gate.check import EXIT_OK, SkillResult
from scoring import WEIGHTS, round1


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
    entry["ignored"] = [{"rule": i.rule, "line": i.line, "message": i.message, "ignored_by": i.why} for i in result.ignored]
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


def summary(results: list[SkillResult], status: int) -> dict[str, Any]:
    return {
        "scored": sum(r.score is not None for r in results),
        "errors": sum(r.score is None for r in results),
        "violations": sum(len(r.score.violations) for r in results if r.score),
        "ignored": sum(len(r.ignored) for r in results),
        "gate_failures": sum(len(r.gate_failures) for r in results),
        "exit_status": status,
    }


def summary_line(results: list[SkillResult], status: int) -> str:
    s = summary(results, status)
    verdict = {0: "passed", 1: "FAILED (gate)", 2: "FAILED (unscorable skill)"}[status]
    ignored = f", {s['ignored']} ignored" if s["ignored"] else ""
    return (f"{s['scored']} scored, {s['errors']} unscorable, {s['violations']} violation(s){ignored}, "
            f"{s['gate_failures']} gate failure(s): {verdict}")


def delta_cell(delta: float | None) -> str:
    if delta is None:
        return ""
    if delta > 0:
        return f"[green]+{delta:g}[/]"
    return f"[red]{delta:g}[/]" if delta < 0 else "0"


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


def changed_summary(results: list[SkillResult], status: int, base: str | None) -> str:
    """--changed in a pull request: one row per skill — total before → after, the dimensions that moved, the checks
    that flipped, the gate — readable at a glance."""

    lines = [f"## Luban: skills changed since {base}", "",
             "| skill | total | dimensions that moved | checks flipped | gate |", "|---|---|---|---|---|"]
    for r in results:
        gate = "❌ " + "; ".join(r.gate_failures) if r.gate_failures else "✅"
        if r.score is None:
            lines.append(f"| {r.source.name} | — | — | — | ❌ {_cell(r.error or '')} |")
            continue
        if r.base_score is None:
            lines.append(f"| {r.score.skill} | new: {r.score.total} | — | — | {_cell(gate)} |")
            continue
        moved = [f"{d} {_num(r.base_score.dim(d).score)} → {_num(r.score.dim(d).score)}" for d in WEIGHTS
                 if r.base_score.dim(d).score != r.score.dim(d).score]
        before = {c.name: c.passed for c in r.base_score.dim("dim1").checks}
        flipped = [("✅ " if c.passed else "❌ ") + c.name for c in r.score.dim("dim1").checks
                   if c.name in before and before[c.name] != c.passed]
        delta = round(r.score.total - r.base_score.total, 1)
        total = f"{r.base_score.total} → {r.score.total} ({delta:+g})"
        lines.append(f"| {r.score.skill} | {total} | {', '.join(moved) or 'none'} | {', '.join(flipped) or 'none'} "
                     f"| {_cell(gate)} |")
    lines += ["", summary_line(results, status) + ("" if status == EXIT_OK else " — see the annotations"), ""]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "unscored" if value is None else f"{value:g}"


def _cell(text: str) -> str:
    return text.replace("|", "∣").replace("\n", " ")

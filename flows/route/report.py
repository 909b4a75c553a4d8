"""What a routing run says: one JSON document (stdout), and the same as Markdown tables (the report, the artifact)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flows.route.library import Library
from flows.route.measure import Routing
from flows.route.queries import QueryPlan
from scoring.route_figures import LibraryFigures, Rate

WORST_SHOWN = 15  # rows of the per-skill table in the Markdown; the JSON has every skill


def rate(r: Rate) -> dict[str, Any]:
    low_high = r.interval
    return {"value": None if r.value is None else round(r.value, 4), "hits": r.hits, "out_of": r.out_of,
            "ci95": None if low_high is None else [round(low_high[0], 4), round(low_high[1], 4)]}


def figures_doc(f: LibraryFigures) -> dict[str, Any]:
    return {
        "top1_accuracy": rate(f.top1), "none_accuracy": rate(f.none_accuracy),
        "macro_f1": None if f.macro_f1 is None else round(f.macro_f1, 4),
        "macro_f1_ci95": None if f.macro_f1_interval is None else [round(x, 4) for x in f.macro_f1_interval],
        "runs": f.runs, "missing": f.missing, "unknown_names": f.unknown_names,
        "never_chosen": [s.skill for s in f.skills if s.never_chosen],
        "skills": {s.skill: {"recall": rate(s.recall), "near_miss_triggers": rate(s.near_miss_triggers),
                             "precision": rate(s.precision), "steals": rate(s.steals), "chosen": s.chosen}
                   for s in f.skills},
        "confusions": [{"asked": c.asked, "took": c.took, **rate(c.rate)} for c in f.confusions],
    }


def listing_doc(library: Library) -> dict[str, Any]:
    """What the router sees, and, per client and window, the skills cut before their trigger words or left out."""
    where = {}
    for listing in library.every_listing:
        where[f"{listing.client}@{listing.window}"] = {
            "budget": listing.budget, "characters": len(listing.text),
            "dropped": [s.name for s in listing.shown if not s.listed],
            "trigger_words_lost": [s.name for s in listing.shown if s.listed and s.cues_lost]}
    shown = library.listing
    per_skill = {s.name: {"characters": s.kept, "of": s.length, "listed": s.listed, "trigger_cues": s.cues,
                          "trigger_cues_shown": s.cues_kept} for s in shown.shown}
    return {"routed_with": {"client": shown.client, "window": shown.window, "budget": shown.budget,
                            "characters": len(shown.text), "skills": per_skill}, "by_client": where}


def document(library: Library, plan: QueryPlan, routed: int, sealed: int, routing: Routing | None,
             per_model: Sequence[LibraryFigures], needs: str = "") -> dict[str, Any]:
    """The run's summary. ``needs``: why nothing was routed (offline: a model is needed)."""
    doc: dict[str, Any] = {
        "skills": len(library.skills),
        "unroutable": [{"path": p, "why": w} for p, w in library.unroutable],
        "listing": listing_doc(library),
        "queries": {"routed": routing.queries if routing else 0, "planned": routed, "sealed_test": sealed,
                    "source": plan.source, "problems": list(plan.problems)},
    }
    if routing is None:
        doc["queries"]["ready"] = routed  # queries there are, that a model would route
        return doc | {"routing": f"not measured: {needs}"}
    worst = min(per_model, key=lambda f: (f.top1.value if f.top1.value is not None else 2.0), default=None)
    return doc | {
        "models": {f.model: figures_doc(f) for f in per_model},
        "worst_model": worst.model if worst else None,
        "answers": routing.channels, "cost": routing.cost.as_dict(),
        "partial": routing.stopped or None,
    }


def markdown(doc: dict[str, Any], per_model: Sequence[LibraryFigures], heatmaps: dict[str, str]) -> str:
    lines = ["# Luban routing report", "",
             f"{doc['skills']} skills routed; {_routed(doc['queries'])} queries (train and validation), "
             f"{doc['queries']['sealed_test']} sealed for a routing run's final check.", ""]
    lines += _listing_lines(doc["listing"]) + _unroutable_lines(doc)
    if "models" not in doc:
        return "\n".join([*lines, f"**Routing not measured:** {doc['routing'].removeprefix('not measured: ')}", ""])
    if doc.get("partial"):
        lines += [f"**Partial:** {doc['partial']}", ""]
    for figures in per_model:
        lines += _model_lines(figures, heatmaps.get(figures.model))
    cost = doc["cost"]
    lines += ["## Cost", "", "| calls | tokens in | of them cached | tokens out | call time (s) | wall time (s) |",
              "|---:|---:|---:|---:|---:|---:|",
              f"| {cost['calls']} | {cost['tokens_in']} | {cost['tokens_cached']} ({100 * cost['cached_share']:.0f} %) | "
              f"{cost['tokens_out']} | {cost['call_seconds']} | {cost['wall_seconds']} |", ""]
    return "\n".join(lines)


def _listing_lines(listing: dict[str, Any]) -> list[str]:
    used = listing["routed_with"]
    lines = ["## What the router sees", "",
             f"Routed with {used['client']}'s listing at the {used['window']} window ({used['budget']}, "
             f"{used['characters']} characters).", "",
             "| client @ window | budget | dropped | trigger words cut off |", "|---|---|---|---|"]
    for where, seen in listing["by_client"].items():
        lines.append(f"| {where} | {seen['budget']} | {_names(seen['dropped'])} | {_names(seen['trigger_words_lost'])} |")
    return [*lines, ""]


def _unroutable_lines(doc: dict[str, Any]) -> list[str]:
    if not doc["unroutable"]:
        return []
    return ["## Not routed", "", *[f"- {u['path']}: {u['why']}" for u in doc["unroutable"]], ""]


def _model_lines(f: LibraryFigures, heatmap: str | None) -> list[str]:
    worst = sorted(f.skills, key=lambda s: (s.recall.value if s.recall.value is not None else 2.0, s.skill))
    lines = [f"## Router {f.model}", "",
             f"- top-1 accuracy: {f.top1.said()}", f"- none of these, when none fits: {f.none_accuracy.said()}",
             f"- macro-F1 over the skills and none: {_f1(f)}",
             f"- runs answered: {f.runs}; missing (no answer, left out of every figure): {f.missing}"
             + (f"; names of no skill given: {f.unknown_names}" if f.unknown_names else ""),
             f"- never chosen: {_names([s.skill for s in f.skills if s.never_chosen])}", "",
             "| skill | recall | false triggers on near-misses | precision | steals others' queries |",
             "|---|---|---|---|---|"]
    lines += [f"| {s.skill} | {s.recall.said()} | {s.near_miss_triggers.said()} | {s.precision.said()} | "
              f"{s.steals.said()} |" for s in worst[:WORST_SHOWN]]
    if len(worst) > WORST_SHOWN:
        lines.append(f"| … {len(worst) - WORST_SHOWN} more in the JSON | | | | |")
    if f.confusions:
        lines += ["", "| asked for | took instead (or as well) | share of its runs |", "|---|---|---|"]
        lines += [f"| {c.asked} | {c.took} | {c.rate.said()} |" for c in f.confusions[:WORST_SHOWN]]
    if heatmap:
        lines += ["", f"![confusion, {f.model}]({heatmap})"]
    return [*lines, ""]


def _f1(f: LibraryFigures) -> str:
    if f.macro_f1 is None:
        return "— (no labelled runs)"
    ci = f" [{f.macro_f1_interval[0]:.3f}, {f.macro_f1_interval[1]:.3f}]" if f.macro_f1_interval else ""
    return f"{f.macro_f1:.3f}{ci}"


def _names(names: list[str]) -> str:
    return ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "") if names else "—"


def rounds_markdown(doc: dict[str, Any]) -> str:
    """`luban route --optimize`'s artifact: each round, the validation's choice, the sealed check, the branch."""
    lines = ["# Luban routing rounds", "", "| round | skill | problem | outcome | why |", "|---:|---|---|---|---|"]
    lines += [f"| {r['round']} | {r.get('skill', '—')} | {r.get('problem', '—')} | {r['status']} | {r['why'][:160]} |"
              for r in doc["rounds"]]
    sealed = doc["sealed_test"]
    lines += ["", f"- validation chose: {doc['validation'].get('chosen')}",
              f"- sealed test: {'read once' if sealed.get('read') else 'not read'}"
              + (" — the original restored" if sealed.get("restored_original") else ""),
              f"- branch: {doc['branch'] or 'none (nothing kept)'}", *[f"  - {line}" for line in doc["handoff"]]]
    return "\n".join(lines) + "\n"


def gate_markdown(doc: dict[str, Any]) -> str:
    """`luban route --changed`'s artifact: the verdict, and each model's evidence."""
    lines = [f"# Luban routing gate: {doc['gate']}", "", doc["why"], ""]
    for model, decision in doc.get("models", {}).items():
        right = decision["right_routing"]
        lines += [f"- {model}: right routing {right['mean_change']:+.3f} a query (p={right['p']}), "
                  f"{decision['guards']} guards asked, worse: {', '.join(w['name'] for w in decision['worse']) or 'none'}"]
    return "\n".join(lines) + "\n"


def _routed(queries: dict[str, Any]) -> str:
    """'188', or '120 of 188' when the routing was cut short."""
    planned = queries.get("planned", queries["routed"])
    return str(queries["routed"]) if queries["routed"] == planned else f"{queries['routed']} of {planned}"

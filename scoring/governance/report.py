"""The Phase 5 report, built from records alone (so `luban report` can rebuild it at any time).

Input: the latest run's results.tsv rows for each skill (a pandas frame) and
the run facts the records cannot hold (branch, backups, LLM usage). Output:
Markdown text, and a PNG chart of the total per round per skill.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scoring.model import DIM_NAMES
from scoring.notes import parse_note


@dataclass(frozen=True)
class RunFacts:
    mode: str
    branch: str | None = None
    backups: str | None = None
    manifest: str | None = None
    consumer_baseline: str = "not tested"
    usage: dict = field(default_factory=dict)
    alerts: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    totals: tuple[str, ...] = ()  # "skill: total … from rules … + model …", as luban score explains its own
    fallbacks: tuple[str, ...] = ()  # "kind: count", every fallback the run took (judges unscored, prompts offline …)
    server: dict = field(default_factory=dict)  # how the run talked to its model server (dialects, slots, caps)
    handoff: tuple[str, ...] = ()  # the run's branch for review: base, files changed, how to merge (full mode)
    guards: tuple[str, ...] = ()  # oscillation guards in force after the run: "dim: skill (N run(s) left)"


def latest_runs(frame):
    """Only each skill's most recent run (from its last baseline row on)."""
    import pandas as pd

    parts = []
    for _, group in frame.groupby("skill", sort=True):
        group = group.reset_index(drop=True)
        starts = group.index[group["status"] == "baseline"]
        parts.append(group.loc[starts[-1]:] if len(starts) else group)
    return pd.concat(parts, ignore_index=True) if parts else frame


def _undoes(row) -> str | None:
    """Which kept edits a revert row takes back: all of the run's ("all"), the last one ("last"), or none."""
    if row["status"] != "revert":
        return None
    if str(row.get("stop", "")) == "user_rejected":
        return "all"  # a person restored the original at the skill's checkpoint
    return "last" if parse_note(str(row["note"]))[0].get("step") == "B" else None  # held-out Step B


def standing(run):
    """Each skill's rows of its latest run without the keeps a later row took back: what the skill ends with."""
    import pandas as pd

    undone: list[int] = []
    for _, group in run.groupby("skill", sort=False):
        keeps: list[int] = []
        for index, row in group.iterrows():
            if row["status"] == "keep":
                keeps.append(index)
            elif (what := _undoes(row)) == "all":
                undone += keeps
                keeps = []
            elif what == "last" and keeps:
                undone.append(keeps.pop())
    return run.drop(index=pd.Index(undone))


def before_after(run) -> tuple[float | None, float | None]:
    baseline = run[run["status"] == "baseline"]["new_score"]
    before = float(baseline.iloc[0]) if len(baseline) else None
    final = run[(run["status"] == "keep") | run.apply(lambda r: _undoes(r) is not None, axis=1)]["new_score"]
    after = float(final.iloc[-1]) if len(final) else before
    return before, after


def render(frame, facts: RunFacts) -> str:
    run = latest_runs(frame)
    attempts = run[run["status"].isin(["keep", "revert"])]
    lines = _overview(run, attempts, facts) + _scores(run, facts) + _improvements(attempts)
    lines += ["## Keep decisions", "",
              "Each edit is kept only when a dimension gained beyond the judges' noise (one-sided 95 %, over all",
              "dimensions and looks), none got worse beyond it, and the total of the means rose. *bound*: the deciding",
              "dimension's one-sided bound, in total points; *samples*: its candidate/incumbent measurements.", ""]
    lines += decision_lines(attempts.to_dict(orient="records"), with_skill=True)
    lines += ["", *noise_lines(attempts.to_dict(orient="records")), ""]
    lines += [
        *_health(run, attempts, facts),
        "",
        "## Audit trail",
        "",
        f"- Branch: {facts.branch or ('— (nothing kept: no branch left)' if facts.handoff else '— (quick mode: no git branch)')}",
        f"- Backups: {facts.backups or '—'}",
        f"- Manifest: {facts.manifest or '—'}",
        "",
    ]
    if facts.handoff:
        lines += ["## Hand-off", "", *[f"- {line}" for line in facts.handoff], ""]
    return "\n".join(lines)


def _overview(run, attempts, facts: RunFacts) -> list[str]:
    kept = int((standing(attempts)["status"] == "keep").sum())  # a keep a person or the held-out gate took back is not one
    total = len(attempts)
    dry = int(run["eval_mode"].isin(["dry_run", "fallback_dry"]).sum())
    full = int((run["eval_mode"] == "full_test").sum())
    lines = ["# Luban optimization report", "", "## Overview", "",
             f"- Mode: {facts.mode}", f"- Skills: {run['skill'].nunique()}", f"- Experiments: {total}",
             f"- Kept: {kept} ({(100 * kept / total if total else 0):.0f} %)", f"- Rollbacks: {total - kept}",
             f"- Full tests / dry runs: {full} / {dry}", f"- Consumer baseline: {facts.consumer_baseline}"]
    return lines + [f"- Notice: {n}" for n in group_notices(facts.notices, set(map(str, run["skill"])))]


SHOWN_NAMES = 8  # skills named in a grouped notice before "and N more"


def group_notices(notices: Iterable[str], skills: set[str]) -> list[str]:
    """Notices that say the same of several skills ("<skill>: never optimized: room high") as one line, the count
    first and the skills after; any other notice as it is, in the order given. A library of hundreds of skills gets
    a report that opens with what happened, not with a screen of one line per skill."""
    grouped: dict[str, list[str]] = {}  # what is said → the skills it is said of (none: a notice of the run)
    for notice in notices:
        skill, _, rest = notice.partition(": ")
        about_a_skill = skill in skills and bool(rest)
        grouped.setdefault(rest if about_a_skill else notice, [])
        if about_a_skill:
            grouped[rest].append(skill)
    lines = []
    for key, names in grouped.items():
        if len(names) <= 2:
            lines += [f"{name}: {key}" for name in names] or [key]
            continue
        shown = ", ".join(names[:SHOWN_NAMES]) + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")
        lines.append(f"{len(names)} skills: {key} ({shown})")
    return lines


def _scores(run, facts: RunFacts) -> list[str]:
    """Each skill's total before and after, and where each final total comes from."""
    lines = ["", "## Scores", "", "| skill | before | after | Δ |", "|---|---:|---:|---:|"]
    deltas = []
    for skill, group in run.groupby("skill", sort=True):
        before, after = before_after(group)
        if before is None or after is None:
            lines.append(f"| {skill} | — | — | — |")
            continue
        deltas.append(after - before)
        lines.append(f"| {skill} | {before:.1f} | {after:.1f} | {after - before:+.1f} |")
    if deltas:
        lines.append(f"| **mean** | | | {sum(deltas) / len(deltas):+.1f} |")
    if facts.totals:
        lines += ["", "Where each final total comes from (the same account `luban score` gives):", ""]
        lines += [f"- {t}" for t in facts.totals]
    return lines


def _improvements(attempts) -> list[str]:
    """The edits that stand, by dimension, each with the lines it changed."""
    lines = ["", "## Main improvements", ""]
    keeps = standing(attempts)
    keeps = keeps[keeps["status"] == "keep"]
    if keeps.empty:
        lines.append("No edit was kept.")
    for dim, group in keeps.groupby("dim_changed", sort=True):
        lines.append(f"### {dim} {DIM_NAMES.get(str(dim), '')}")
        for _, row in group.iterrows():
            facts_, text = parse_note(str(row["note"]))
            lines.append(f"- [{row['skill']}] {facts_.get('strategy', '')} {row['delta']:+.1f}: {text}".rstrip(": "))
            lines += _kept_diff(row)
        lines.append("")
    return lines


def _kept_diff(row: Mapping[str, Any]) -> list[str]:
    """The lines a kept edit changed, and what decided it: a reviewer judges substance, not only points."""
    evidence = _evidence(row)
    diff = evidence.get("diff", "")
    if not diff:
        return []
    fence = "`" * max(3, 1 + max((len(run) for run in diff.split() if set(run) == {"`"}), default=0))
    basis = evidence.get("basis")
    decided = f"  decided by {basis}: {evidence.get('reason', '')}" if basis else ""
    return [decided, "", f"  {fence}diff", *("  " + line for line in diff.rstrip("\n").split("\n")), f"  {fence}"]


def _evidence(row: Mapping[str, Any]) -> dict:
    value = row.get("evidence")
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


def _cell(value: Any, spec: str = "") -> str:
    if value is None or value == "" or (isinstance(value, float) and value != value):
        return "—"
    return format(value, spec) if spec else str(value)


def decision_lines(rows: Iterable[Any], with_skill: bool = False) -> list[str]:
    """One table row per keep decision: verdict, what decided it, Δ, the bound, samples, calls, and why."""
    records = [r if isinstance(r, Mapping) else vars(r) for r in rows]
    records = [r for r in records if r.get("status") in ("keep", "revert") and _evidence(r)]
    if not records:
        return ["No keep decision with recorded evidence in this run."]
    head = ("| skill " if with_skill else "") + "| round | verdict | decided by | Δ total | bound | samples | calls | why |"
    lines = [head, "|" + "---|" * (9 if with_skill else 8)]
    for r in records:
        ev = _evidence(r)
        cells = ([str(r["skill"])] if with_skill else []) + [
            str(r["round"]), str(ev.get("verdict", r["status"])), _cell(ev.get("basis")), _cell(r.get("delta"), "+.1f"),
            _cell(r.get("bound"), "+.2f"), _cell(r.get("samples")), _cell(r.get("llm_calls"), "g"),
            str(ev.get("reason", "")).replace("|", "/")]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def noise_lines(rows: Iterable[Any]) -> list[str]:
    """The judges' noise per model and dimension, as the last decision of the run read it (pooled, with its df)."""
    latest: dict[str, dict] = {}
    for r in rows:
        ev = _evidence(r if isinstance(r, Mapping) else vars(r))
        for dim, values in ev.get("dims", {}).items():
            if "sd" in values:
                latest.setdefault(ev.get("judge_model", "?"), {})[dim] = (values["sd"], values.get("df"))
    if not latest:
        return ["Judge noise: none measured (no judged dimension, or the offline heuristics, which are exact)."]
    lines = ["Judge noise (σ of one reading, pooled within each text's null variants; degrees of freedom):", ""]
    for model, dims in latest.items():
        lines.append(f"- {model}: " + ", ".join(f"{d} σ {sd:.2f} (df {df})" for d, (sd, df) in sorted(dims.items())))
    return lines


def _health(run, attempts, facts: RunFacts) -> list[str]:
    reverts = int((attempts["status"] == "revert").sum())
    same_source = int(run["note"].astype(str).str.contains("same_source=true", regex=False).sum())
    usage = facts.usage or {}
    rows = [
        ("dry-run ratio", f"{run['eval_mode'].isin(['dry_run', 'fallback_dry']).mean():.0%}"),
        ("revert rate", f"{(reverts / len(attempts)) if len(attempts) else 0:.0%}"),
        ("same-context detections", str(same_source)),
        ("oscillation guards in force", str(len(facts.guards))),
        ("LLM calls", str(usage.get("calls", 0))),
        ("tokens in / out", f"{usage.get('tokens_in', 0)} / {usage.get('tokens_out', 0)}"),
    ]
    rows += [("failed / truncated calls", f"{usage.get('failed', 0)} / {usage.get('truncated', 0)}"),
             ("fallbacks taken", str(sum(int(f.rsplit(": ", 1)[1]) for f in facts.fallbacks)))]
    out = ["## Health dashboard", "", "| metric | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    if facts.alerts:
        out += ["", "Alerts:"] + [f"- {a}" for a in facts.alerts]
    if facts.guards:
        out += ["", "Oscillation guards (diagnosis skips the dimension in that skill):"] + [f"- {g}" for g in facts.guards]
    return out + _server(facts)


def _server(facts: RunFacts) -> list[str]:
    """The model server as the run found it, and every fallback it took: nothing fell back silently."""
    out: list[str] = []
    if facts.fallbacks:
        out += ["", "Fallbacks (each counted; a judged dimension that fell back is unscored, never a zero):"]
        out += [f"- {f}" for f in facts.fallbacks]
    server = facts.server or {}
    if server.get("backend") == "openai":
        dialects = ", ".join(f"{m}: {d}" for m, d in (server.get("dialects") or {}).items()) or "none negotiated"
        out += ["", f"Model server {server.get('base_url')}: structured output {dialects}; "
                    f"{server.get('slots') or 'unknown'} slot(s), {server.get('concurrency')} call(s) at once, "
                    f"read timeout {server.get('read_timeout_s')} s; reply caps "
                    + ", ".join(f"{role} {cap}" for role, cap in (server.get("reply_caps") or {}).items())]
        out += [f"- refused: {s}" for s in server.get("step_downs") or []]
    return out

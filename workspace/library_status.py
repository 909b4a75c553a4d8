"""The library at a glance, for the person who owns it: per skill, how its last runs went and what holds it back.

Read from the records alone — each skill's results.tsv, luban-profile.json, the git repository's run branches —
so ``luban status`` answers without a run, and every run's Prefect artifact shows the same table. Routing is beside
the rubric, never in it: its rounds come from the skill's routing.tsv (never counted as runs or kept edits), its
recall from the newest routing run's route.json.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from workspace import profile as profile_store
from workspace.git_repository import BRANCH_PREFIX, GitStateError, open_repository
from workspace.layout import Workspace
from workspace.manifest import run_order
from workspace.results_tsv import ResultRow, ResultsFile, Status, routing_rows

RECENT_RUNS = 5


@dataclass(frozen=True)
class RoutingStatus:
    """A skill's routing, as its records stand: its last routing round, the descriptions kept, and its recall in the
    newest routing run (of the model that routed worst), with that run's name."""

    last_round: str | None = None
    kept: int = 0
    tried: int = 0
    recall: float | None = None
    recall_run: str | None = None


@dataclass(frozen=True)
class SkillStatus:
    skill: str
    runs: int  # runs recorded (baselines)
    last_run: str | None  # when the last one started
    score: float | None  # the latest total: the last kept version's, or the last baseline's
    change: float | None  # that total minus the baseline RECENT_RUNS runs ago (or the first)
    kept: int  # edits kept over those runs
    state: str  # "ok", or what holds it: frozen / paused / resting, with why, since and until
    alerts: tuple[str, ...] = ()  # escalation counters above zero: "name ×count"
    guards: tuple[str, ...] = ()  # dimensions diagnosis skips here, with the runs left
    budget: str = "10%"
    routing: RoutingStatus = RoutingStatus()


@dataclass(frozen=True)
class LibraryStatus:
    skills: tuple[SkillStatus, ...]
    branches: tuple[str, ...] = ()  # auto-optimize/* branches still there
    library_alerts: tuple[str, ...] = ()  # the library's own counters above zero
    budget: str = "10%"
    recent: int = RECENT_RUNS  # the runs "change" and "kept" cover

    def to_json(self) -> dict:
        return asdict(self)


def _runs(rows: list[ResultRow]) -> list[list[ResultRow]]:
    runs: list[list[ResultRow]] = []
    for row in rows:
        if row.status == Status.BASELINE or not runs:
            runs.append([])
        runs[-1].append(row)
    return runs


def _score(run: list[ResultRow]) -> float | None:
    kept = [r.new_score for r in run if r.status in (Status.KEEP, Status.BASELINE) and r.new_score is not None]
    return kept[-1] if kept else None


def _state(p: profile_store.LubanProfile, skill: str, rows: list[ResultRow]) -> str:
    frozen, paused = p.frozen.get(skill), p.paused.get(skill)
    if frozen is not None:
        until = f"{frozen.runs_left} more run(s)" if frozen.runs_left is not None else f"'luban lift {skill}'"
        return f"frozen: {frozen.reason} (since {frozen.since[:10]}; until {until})"
    if paused is not None:
        return f"paused: {paused.reason} (since {paused.since[:10]}; measured only, {paused.runs_left} more run(s))"
    last = rows[-1] if rows else None
    if last is not None and last.status == Status.SKIP and last.stop == "roi":
        return "resting: the last three runs kept no edit (tried again after three runs)"
    return "ok"


def skill_status(p: profile_store.LubanProfile, skill: str, rows: list[ResultRow], recent: int,
                 routing: RoutingStatus = RoutingStatus()) -> SkillStatus:
    runs = _runs(rows)
    window = runs[-recent:]
    first = next((r.new_score for r in window[0] if r.status == Status.BASELINE), None) if window else None
    score = next((s for s in (_score(run) for run in reversed(runs)) if s is not None), None)
    alerts = tuple(f"{name.split('|')[0]} ×{state.get('count', 0)}" for name, state in sorted(p.alert_counters.items())
                   if name.endswith(f"|{skill}") and state.get("count", 0) > 0)
    guards = tuple(f"{g.dim} ({g.runs_left} run(s) left)" for g in p.oscillation_guard if skill in g.skills)
    budget = p.budget_for(skill)
    left = p.budget_runs_left.get(skill)
    return SkillStatus(skill, len(runs), runs[-1][0].timestamp if runs else None, score,
                       round(score - first, 1) if score is not None and first is not None else None,
                       sum(r.status == Status.KEEP for run in window for r in run), _state(p, skill, rows), alerts, guards,
                       f"{budget:.0%}" + (f" ({left} run(s) left)" if left else ""), routing)


def routing_status(workspace: Workspace, skill: str, recall: dict[str, float], run: str | None) -> RoutingStatus:
    routing_tsv = workspace.routing_tsv(skill)
    rounds = routing_rows(routing_tsv, routing_tsv.with_name("results.tsv"))  # and rows written before routing.tsv
    return RoutingStatus(rounds[-1].timestamp if rounds else None, sum(r.status == Status.KEEP for r in rounds),
                         sum(r.status in (Status.KEEP, Status.REVERT) for r in rounds), recall.get(skill),
                         run if skill in recall else None)


def newest_recall(workspace: Workspace) -> tuple[dict[str, float], str | None]:
    """Each skill's recall in the newest routing run that routed (the worst-routing model's), and that run's folder."""
    runs = workspace.root / "routing" / "runs"
    for folder in sorted((p for p in runs.iterdir() if p.is_dir()), key=run_order, reverse=True) if runs.is_dir() else ():
        try:
            doc = json.loads((folder / "route.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a run stopped before its document, or a damaged one: the one before says more
        model = (doc.get("models") or {}).get(doc.get("worst_model") or "")
        if model:
            skills = model.get("skills") or {}
            return {name: f["recall"]["value"] for name, f in skills.items() if f["recall"]["value"] is not None}, folder.name
    return {}, None


def library_status(workspace: Workspace, skills: list[str], recent: int = RECENT_RUNS) -> LibraryStatus:
    """Every skill of ``skills`` as its records stand, the run branches, the library's counters."""
    p = profile_store.load(workspace.profile)
    recall, run = newest_recall(workspace)
    statuses = tuple(skill_status(p, s, ResultsFile(workspace.results_tsv(s)).rows()
                                  if workspace.results_tsv(s).exists() else [], recent, routing_status(workspace, s, recall, run))
                     for s in skills)
    library = tuple(f"{name.split('|')[0]} ×{state.get('count', 0)}" for name, state in sorted(p.alert_counters.items())
                    if name.endswith("|*") and state.get("count", 0) > 0)
    left = p.budget_runs_left.get(profile_store.ALL_SKILLS)
    return LibraryStatus(statuses, run_branches(workspace.skills_dir), library,
                         f"{p.edit_budget:.0%}" + (f" ({left} run(s) left)" if left else ""), recent)


def run_branches(skills_dir: Path) -> tuple[str, ...]:
    try:
        repo = open_repository(skills_dir)
    except GitStateError:
        return ()
    return tuple(sorted(h.name for h in repo.heads if h.name.startswith(BRANCH_PREFIX)))


def rows_for_table(status: LibraryStatus) -> list[dict[str, str]]:
    """One flat row per skill, as the terminal table and the Prefect artifact show it."""
    return [{"skill": s.skill, "runs": str(s.runs), "last run": (s.last_run or "—")[:16].replace("T", " "),
             "score": "—" if s.score is None else f"{s.score:.1f}",
             f"Δ last {status.recent}": "—" if s.change is None else f"{s.change:+.1f}", "kept": str(s.kept),
             "state": s.state, "alerts": ", ".join(s.alerts) or "—", "guards": ", ".join(s.guards) or "—",
             "budget": s.budget, "routing": _routing_cell(s.routing)} for s in status.skills]


def _routing_cell(routing: RoutingStatus) -> str:
    """'recall 0.62 · 1 of 3 kept · 2026-12-07': what routing says of the skill, apart from its rubric score."""
    said = [f"recall {routing.recall:.2f}"] if routing.recall is not None else []
    if routing.tried:
        said.append(f"{routing.kept} of {routing.tried} kept")
    if routing.last_round:
        said.append(routing.last_round[:10])
    return " · ".join(said) or "—"


def narrow_rows(status: LibraryStatus) -> list[dict[str, str]]:
    """The table for 80 columns: each skill's state in one word; what holds it, its alerts and guards in
    ``held_lines`` below the table."""
    return [{"skill": row["skill"], "runs": row["runs"], "score": row["score"], f"Δ {status.recent}": row[f"Δ last {status.recent}"],
             "kept": row["kept"], "state": s.state.split(":", 1)[0], "routing": _short_routing(s.routing)}
            for row, s in zip(rows_for_table(status), status.skills, strict=True)]


def _short_routing(routing: RoutingStatus) -> str:
    if routing.recall is None and not routing.tried:
        return "—"
    recall = f"{routing.recall:.2f}" if routing.recall is not None else "—"
    return f"{recall} ({routing.kept}/{routing.tried})" if routing.tried else recall


def held_lines(status: LibraryStatus) -> list[str]:
    """What the narrow table leaves out, one line a skill that has any: why it is held, its alerts, its guards, an
    edit budget other than the default, its routing."""
    lines = []
    for s in status.skills:
        said = [] if s.state == "ok" else [s.state]
        said += [f"alerts {', '.join(s.alerts)}"] if s.alerts else []
        said += [f"guards {', '.join(s.guards)}"] if s.guards else []
        said += [f"budget {s.budget}"] if s.budget != status.budget else []
        said += [f"routing: {_routing_cell(s.routing)}"] if s.routing.tried else []
        if said:
            lines.append(f"{s.skill}: {'; '.join(said)}")
    return lines

"""Where the governance layer's results are kept: profile counters, meta-learnings, reports."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from scoring.governance.alerts import Alert
from scoring.governance.escalation import advance, key
from scoring.governance.library_alerts import LIBRARY
from scoring.governance.meta_review import MetaReview
from workspace import meta_learnings, profile
from workspace.atomic import atomic_write
from workspace.holds import LIBRARY_MARK
from workspace.layout import Workspace
from workspace.results_tsv import ResultsFile


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def mode_history(workspace: Workspace):
    """Every results.tsv row of this mode, all skills, as one pandas frame (repairing damaged files first)."""
    import pandas as pd

    frames = [ResultsFile(path).frame() for path in sorted(workspace.mode_dir.glob("*/results.tsv"))]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def apply_escalation(workspace: Workspace, alerts: list[Alert], skills: list[str]) -> list[tuple[str, str, str]]:
    """Advance each escalating (alert, skill) counter by the run it checked, once; pause or freeze as the ladder
    says — a library alert (``LIBRARY``) holds every one of ``skills``. A fired alert that does not escalate is
    returned as a note. Returns (alert, skill, action) for everything worth saying."""
    actions: list[tuple[str, str, str]] = []

    def change(p: profile.LubanProfile) -> None:
        for alert in alerts:
            if not alert.active:
                continue
            if not alert.escalates:
                if alert.fired:
                    actions.append((alert.name, alert.skill, "note"))
                continue
            counter = key(alert.name, alert.skill, str(workspace.mode))
            state = p.counter(alert.name, alert.skill, str(workspace.mode))
            if alert.run and state.seen == alert.run:
                continue  # this run was judged already: the same records must not count twice
            state, action = advance(state, alert.fired, alert.run, alert.history_until)
            p.alert_counters[counter] = state.to_dict()
            if action in ("record", "pause", "freeze", "recover", "false_recovery", "reset"):
                actions.append((alert.name, alert.skill, action))
            _hold(p, alert, action, skills if alert.skill == LIBRARY else [alert.skill])

    profile.update(workspace.profile, change)
    return actions


def _hold(p: profile.LubanProfile, alert: Alert, action: str, held: list[str]) -> None:
    """The profile's side of an escalation: a pause or a freeze put on, a pause lifted by the alert's recovery."""
    scope = f" {LIBRARY_MARK}" if alert.skill == LIBRARY else ""
    for skill in held:
        if action == "freeze":
            p.frozen[skill] = profile.FrozenSkill(reason=f"alert {alert.name}{scope} escalated 5 times", since=now_iso())
            p.paused.pop(skill, None)
        elif action == "pause" and skill not in p.frozen:
            p.paused[skill] = profile.PausedSkill(reason=f"alert {alert.name}{scope} fired 3 times", since=now_iso())
        elif action == "recover" and skill in p.paused and p.paused[skill].reason.startswith(f"alert {alert.name}{scope} "):
            del p.paused[skill]


def write_meta_review(workspace: Workspace, review: MetaReview, skills_optimized: int) -> list[str]:
    """The review's lessons, each marked with the mode that learned them (``meta_learnings.guidance`` reads them back
    for that mode only), and its oscillations as guards for the skills they were found in."""
    ids: list[str] = []
    today = datetime.now(UTC).date().isoformat()

    def change(meta: meta_learnings.MetaLearnings) -> None:
        for lesson in review.lessons:
            ids.append(meta.add(lesson.section, today, lesson.title, lesson.fields | {"mode": str(workspace.mode)}).id)
        meta.last_epoch_review = now_iso()
        meta.skills_optimized_since_last_review = 0 if skills_optimized >= 2 else meta.skills_optimized_since_last_review + skills_optimized

    meta_learnings.update(workspace.meta_learnings, change, created=now_iso())

    def guard(p: profile.LubanProfile) -> None:
        for dim, skills in review.oscillating_dims.items():
            for skill in skills:  # one guard a skill, each with its own length; one already there runs on as it is
                if dim not in p.guarded_dims(skill, str(workspace.mode)):
                    p.oscillation_guard.append(profile.OscillationGuard(dim=dim, since=now_iso(), skills=[skill],
                                                                        mode=str(workspace.mode)))

    profile.update(workspace.profile, guard)
    return ids


def write_report(workspace: Workspace, markdown: str, png: bytes, stamp: str) -> tuple[Path, Path | None]:
    """The report, and its chart beside it when there is one (a run stopped before any score has none)."""
    folder = workspace.mode_dir / "reports"
    md, chart = folder / f"report-{stamp}.md", folder / f"report-{stamp}.png"
    if not png:
        atomic_write(md, markdown)
        return md, None
    atomic_write(chart, png)
    atomic_write(md, markdown + f"\n![score per round]({chart.name})\n")
    return md, chart

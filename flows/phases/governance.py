"""Phase 0's governance: the mode the run takes (and what a person's override teaches the router), the alerts on
the records before the run, and one run served of every hold with a length (workspace/holds.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flows.interaction.checkpoints import checkpoint
from flows.phases.preflight import Scope, routed
from flows.state.run import Run, RunOptions
from scoring.governance.alerts import check_alerts, run_metrics
from scoring.governance.library_alerts import LIBRARY, check_library
from scoring.governance.mode_router import record_override
from workspace import profile as profile_store
from workspace.governance_records import apply_escalation, mode_history
from workspace.holds import Ticked, tick


def choose_mode(options: RunOptions, skills_dir: Path, skills: list[str], records: int,
                workspace_root: Path | None = None) -> tuple[str, list[str]]:
    if options.mode in ("quick", "full"):
        return options.mode, [f"mode {options.mode} given explicitly"]
    profile_path = workspace_root / "luban-profile.json" if workspace_root else None
    exemption = profile_store.load(profile_path).inference_exemptions.get("domain") if profile_path else None
    decision = routed(Scope(skills_dir, tuple(skills)), records, workspace_root, exemption.weight_factor if exemption else 1.0)
    reasons = [f"mode router: {decision.band} (M = {decision.m:.4f})", *decision.reasons]
    suggested = decision.mode or "quick"
    undecided = "\n\nThe router cannot decide on its own: choose." if decision.pause or decision.mode is None else ""
    summary = "\n".join(f"- {r}" for r in reasons) + f"\n\nSuggested: {suggested}.{undecided}"
    answer = checkpoint("mode", summary, options.approval, choices=("quick", "full"), default_choice=suggested,
                        timeout=options.approval_timeout)
    chosen = answer.choice if answer.choice in ("quick", "full") else suggested
    if profile_path is not None and decision.mode is not None and chosen != decision.mode:
        _remember_override(profile_path, decision.mode, chosen)
    return chosen, reasons + ([f"mode {chosen} chosen at the checkpoint ({answer.answered_by})"] if chosen != suggested else [])


def _remember_override(profile_path: Path, suggested: str, chosen: str) -> None:
    """A person chose against the router: twice the same way in a row halves the domain weight (the design's
    mis-routing correction), kept in the profile's inference exemptions."""

    def change(p: profile_store.LubanProfile) -> None:
        held = p.inference_exemptions.setdefault("domain", profile_store.InferenceExemption())
        held.overrides, held.weight_factor = record_override(held.overrides, suggested, chosen, held.weight_factor)

    profile_store.update(profile_path, change)


@dataclass(frozen=True)
class Governed:
    """What the records before this run decide of it: the alerts raised, the skills it takes (an alert's freeze takes
    one out), and those it measures without editing (a pause served)."""

    alerts: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    measure_only: frozenset[str] = frozenset()


def govern(run: Run, skills: list[str], readable: list[str]) -> Governed:
    """The alerts, then one run served of every hold (``skills``: those the run may take; ``readable``: every skill
    it can read, whose holds count down whether or not it takes them)."""
    alerts, skills = raise_alerts(run, skills)
    return Governed(tuple(alerts), tuple(skills), serve_holds(run, skills, readable))


def raise_alerts(run: Run, skills: list[str]) -> tuple[list[str], list[str]]:
    """The alerts on the records before this run: each skill's own and the library's; a freeze takes the skill out
    of this run, a pause is served by ``serve_holds``; a fixed check that fired is noted, never escalated. The alerts
    raised, and the skills still taken."""
    history = mode_history(run.workspace)
    if history.empty:
        return [], skills
    metrics = run_metrics(history)
    counters = {name: run.profile.counter(name, LIBRARY, str(run.workspace.mode)) for name in ("edit_outcomes", "score_shift")}
    alerts = [a for a in check_alerts(metrics) if a.skill in skills] + check_library(metrics, counters)
    raised, taken = [], list(skills)
    for name, skill, action in apply_escalation(run.workspace, alerts, list(skills)):
        detail = next(a.message for a in alerts if a.name == name and a.skill == skill)
        raised.append(f"{name} for {'the library' if skill == LIBRARY else skill}: {action} ({detail})")
        run.effects.emit("luban.alert", skill, {"event_type": name, "severity": action, "detail": detail})
        for held in (list(taken) if skill == LIBRARY else [skill]):
            if action == "freeze" and held in taken:
                taken.remove(held)
                run.effects.notice(f"{held}: alert {name} escalated to a freeze; skipped until 'luban lift {held}'")
    return raised, taken


def serve_holds(run: Run, skills: list[str], readable: list[str]) -> frozenset[str]:
    """One run served of every hold with a length (workspace/holds.py): a paused skill is measured, not edited — the
    skills of ``skills`` to measure only. A resumed run continues one that was served already: its paused skills stay
    paused, nothing counts down."""
    if run.options.resume:
        paused = run.profile.paused
        measure_only = frozenset(s for s in skills if s in paused)
        run.effects.notice(*[f"{s}: paused ({paused[s].reason}): measured, not edited" for s in sorted(measure_only)])
        return measure_only
    ticked: list[Ticked] = []
    run.effects.update_profile(run.workspace.profile, lambda p: ticked.append(tick(p, readable)))
    run.effects.notice(*ticked[0].ended)
    measure_only = frozenset(s for s in ticked[0].measure_only if s in skills)
    run.effects.notice(*[f"{s}: {why}" for s, why in ticked[0].measure_only.items() if s in measure_only])
    return measure_only

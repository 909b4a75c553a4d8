"""What holds a skill back between runs — a pause, a freeze, an oscillation guard, a tightened edit budget — counted
down run by run, and lifted by a person.

Each Phase 0 calls ``tick`` once for the skills it takes: a hold with a length loses one run, and one at zero ends
(said in the run's notices). A freeze without a length (an alert's, a Safety red line's) waits for a person:
``lift`` ends any hold, resets the alert counters that would otherwise put it back at the next Phase 0, and says
what it lifted. Pure functions of the profile: ``profile.update`` runs them under the profile's lock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workspace.profile import ALL_SKILLS, DEFAULT_BUDGET, GUARD_RUNS, LubanProfile

LIBRARY_MARK = "(library)"  # in the reason of a hold the library's alert put on a skill


@dataclass
class Ticked:
    """What one run's tick found: the skills it measures without editing (paused), and what ended."""

    measure_only: dict[str, str] = field(default_factory=dict)  # skill → why, and for how many more runs
    ended: list[str] = field(default_factory=list)


def tick(profile: LubanProfile, skills: list[str]) -> Ticked:
    """One run of ``skills`` served: pauses, freezes with a length, guards and budget tightenings count down."""
    found = Ticked()
    for skill in skills:
        pause = profile.paused.get(skill)
        if pause is not None:
            if pause.runs_left <= 0:
                del profile.paused[skill]
                found.ended.append(f"{skill}: pause over ({pause.reason}, since {pause.since}); edited again this run")
            else:
                pause.runs_left -= 1
                found.measure_only[skill] = (f"paused ({pause.reason}, since {pause.since}): measured, not edited; "
                                             f"{pause.runs_left} more run(s) after this one")
        frozen = profile.frozen.get(skill)
        if frozen is not None and frozen.runs_left is not None:
            frozen.runs_left -= 1
            if frozen.runs_left <= 0:
                del profile.frozen[skill]
                found.ended.append(f"{skill}: freeze over ({frozen.reason}); optimized again from the next run")
    _tick_guards(profile, skills, found)
    _tick_budgets(profile, skills, found)
    return found


def _tick_guards(profile: LubanProfile, skills: list[str], found: Ticked) -> None:
    kept = []
    for guard in profile.oscillation_guard:
        if guard.skills and not set(guard.skills) & set(skills):
            kept.append(guard)  # none of its skills ran: it has served nothing
            continue
        left = (guard.runs_left if guard.runs_left is not None else GUARD_RUNS) - 1
        if left <= 0:
            found.ended.append(f"oscillation guard on {guard.dim} ({', '.join(guard.skills) or 'every skill'}) expired")
        else:
            kept.append(guard.model_copy(update={"runs_left": left}))
    profile.oscillation_guard = kept


def _tick_budgets(profile: LubanProfile, skills: list[str], found: Ticked) -> None:
    for key in list(profile.budget_runs_left):
        if key != ALL_SKILLS and key not in skills:
            continue
        profile.budget_runs_left[key] -= 1
        if profile.budget_runs_left[key] <= 0:
            found.ended.append(_restore_budget(profile, key) + " (its runs are over)")


def _restore_budget(profile: LubanProfile, key: str) -> str:
    profile.budget_runs_left.pop(key, None)
    if key == ALL_SKILLS:
        before, profile.edit_budget = profile.edit_budget, DEFAULT_BUDGET
        return f"edit budget back to {DEFAULT_BUDGET:.0%} from {before:.0%}"
    before = profile.skill_edit_budget.pop(key, DEFAULT_BUDGET)
    return f"{key}: edit budget back to {DEFAULT_BUDGET:.0%} from {before:.0%}"


def held_skills(profile: LubanProfile) -> list[str]:
    """Every skill something holds: a freeze, a pause, its own budget, a guard."""
    guarded = {name for guard in profile.oscillation_guard for name in guard.skills}
    return sorted(set(profile.frozen) | set(profile.paused) | set(profile.skill_edit_budget) | guarded)


def _library_held(profile: LubanProfile, skill: str) -> bool:
    return any(LIBRARY_MARK in entry.reason for entry in (profile.frozen.get(skill), profile.paused.get(skill)) if entry)


def _lift_skill(profile: LubanProfile, skill: str) -> list[str]:
    lifted, reasons = [], []
    for held, what in ((profile.frozen, "freeze"), (profile.paused, "pause")):
        entry = held.pop(skill, None)
        if entry is not None:
            lifted.append(f"{skill}: {what} ({entry.reason})")
            reasons.append(entry.reason)
    if skill in profile.skill_edit_budget or skill in profile.budget_runs_left:
        lifted.append(_restore_budget(profile, skill))
    # The counters go too, or the next Phase 0 would hold the skill again from the same count; the library's, when
    # it was the library's alert that held the skill (LIBRARY_MARK in the reason).
    counters = [k for k in profile.alert_counters
                if k.endswith(f"|{skill}") or (k.endswith("|*") and any(LIBRARY_MARK in r for r in reasons))]
    for name in counters:
        del profile.alert_counters[name]
    if counters:
        lifted.append(f"alert counters reset: {', '.join(sorted(counters))}")
    for guard in list(profile.oscillation_guard):
        if skill in guard.skills:
            guard.skills.remove(skill)
            lifted.append(f"{skill}: oscillation guard on {guard.dim}")
            if not guard.skills:  # a guard listing no skill would hold every skill
                profile.oscillation_guard.remove(guard)
    return lifted


def lift(profile: LubanProfile, skill: str | None = None, guard: str | None = None, budget: bool = False,
         every: bool = False) -> list[str]:
    """End what holds ``skill`` (its freeze, pause, budget, guards, and the alert counters that would bring them
    back), the guard on dimension ``guard``, (``budget``) every budget tightening, or (``every``) all of it for every
    skill; what was lifted, said. A hold the library's alert put on every skill is one hold: lifting it for one
    skill lifts it for each, and says so for each (its counter is reset with it)."""
    lifted: list[str] = []
    for name in held_skills(profile) if every else [skill] if skill is not None else []:
        lifted += _lift_skill(profile, name)
    if skill is not None and not every and any(LIBRARY_MARK in line for line in lifted):
        for other in sorted(o for o in held_skills(profile) if _library_held(profile, o)):
            lifted += [f"{line} — the library's hold, lifted with {skill}'s" for line in _lift_skill(profile, other)]
    if guard is not None:
        before = len(profile.oscillation_guard)
        profile.oscillation_guard = [g for g in profile.oscillation_guard if g.dim != guard]
        if len(profile.oscillation_guard) < before:
            lifted.append(f"oscillation guard on {guard}")
    if budget:
        for key in sorted(set(profile.budget_runs_left) | set(profile.skill_edit_budget)
                          | ({ALL_SKILLS} if profile.edit_budget < DEFAULT_BUDGET else set())):
            lifted.append(_restore_budget(profile, key))
    return lifted

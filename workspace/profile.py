"""``luban-profile.json``: what Luban has learned about this workspace, global across runs.

A typed model (pydantic) so a hand-edited or corrupted profile fails with the
field that is wrong instead of steering a run with bad values. Every write is
read-change-write under an exclusive lock with a timeout.

Everything a run leaves here that holds a skill back has a length in runs and
ends by itself (``tick``), or names who ends it: a pause (``PAUSE_RUNS``), an
oscillation guard (``GUARD_RUNS``), a budget tightening (``TIGHTEN_RUNS``), a
freeze with ``runs_left``; an alert's freeze has none and waits for a person
(``luban lift``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from scoring.governance.escalation import Escalation, key
from scoring.governance.oscillation import WINDOW
from workspace.atomic import atomic_write
from workspace.lock import acquire_with_timeout

PROFILE_VERSION = "1.0.0"
PAUSE_RUNS = 2  # runs a paused skill is measured but not edited; the run after, it is edited again
GUARD_RUNS = WINDOW  # runs of a skill an oscillation guard keeps diagnosis off a dimension (= the runs it reads)
TIGHTEN_RUNS = 5  # runs a tightened edit budget lasts
DEFAULT_BUDGET = 0.10
ALL_SKILLS = "*"  # the key of a workspace-wide budget tightening in ``budget_runs_left``


class OscillationGuard(BaseModel):
    """A dimension whose kept gains later kept edits undid, for the skills listed: diagnosis skips it there."""

    dim: str
    since: str
    skills: list[str] = Field(default_factory=list)
    runs_left: int | None = GUARD_RUNS  # None (a profile from before guards expired): ends after GUARD_RUNS from now
    mode: str | None = None  # the mode whose records showed it (None: written before guards named their mode)


class FrozenSkill(BaseModel):
    reason: str
    since: str
    expires: str | None = None  # ISO time; None means until a person unfreezes it
    # runs the freeze lasts (None: until a person lifts it); older profiles spelt it rounds_left
    runs_left: int | None = Field(default=None, validation_alias=AliasChoices("runs_left", "rounds_left"))


class PausedSkill(BaseModel):
    """A skill an alert paused: measured every run (its alerts see new evidence), edited again after ``runs_left``."""

    reason: str
    since: str
    runs_left: int = PAUSE_RUNS


class InferenceExemption(BaseModel):
    """The mode router's correction after repeated manual overrides (weight decays 50 %)."""

    weight_factor: float = 1.0
    overrides: list[str] = Field(default_factory=list)


class LubanProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str = PROFILE_VERSION
    changelog: list[str] = Field(default_factory=list)
    mode_preference: Literal["quick", "full"] | None = None
    oscillation_guard: list[OscillationGuard] = Field(default_factory=list)
    frozen: dict[str, FrozenSkill] = Field(default_factory=dict)
    paused: dict[str, PausedSkill] = Field(default_factory=dict)
    edit_budget: float = Field(default=DEFAULT_BUDGET, gt=0, le=DEFAULT_BUDGET)
    skill_edit_budget: dict[str, float] = Field(default_factory=dict)
    budget_runs_left: dict[str, int] = Field(default_factory=dict)  # skill (or ALL_SKILLS) → runs its tightening lasts
    inference_exemptions: dict[str, InferenceExemption] = Field(default_factory=dict)
    alert_counters: dict[str, dict] = Field(default_factory=dict)

    def counter(self, alert: str, skill: str, mode: str) -> Escalation:
        """An alert's escalation counter in ``mode`` (each mode counts on its own); a fresh one when it never fired."""
        return Escalation.from_dict(self.alert_counters.get(key(alert, skill, mode), {}))

    def budget_for(self, skill: str) -> float:
        return min(self.edit_budget, self.skill_edit_budget.get(skill, self.edit_budget))

    def guarded_dims(self, skill: str | None = None, mode: str | None = None) -> set[str]:
        """The dimensions under a guard (for ``skill``, a guard listing no skill holds them all; in ``mode``)."""
        return {g.dim for g in self.oscillation_guard if (skill is None or not g.skills or skill in g.skills)
                and (mode is None or g.mode in (None, mode))}


class ProfileError(ValueError):
    pass


def load(path: Path) -> LubanProfile:
    if not path.exists():
        return LubanProfile()
    try:
        return LubanProfile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as err:
        raise ProfileError(f"{path}:{err.lineno}: not valid JSON ({err.msg}); fix it, or move it aside to start a fresh profile") from None
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ProfileError(f"{path}: field '{where}': {first['msg']}; fix the value, or move the file aside") from None


def save(path: Path, profile: LubanProfile) -> None:
    atomic_write(path, profile.model_dump_json(indent=2) + "\n")


def update(path: Path, change: Callable[[LubanProfile], None], timeout: float = 10.0) -> LubanProfile:
    """Read, change and atomically rewrite under an exclusive lock (waits at most ``timeout``)."""
    with acquire_with_timeout(path.with_name(path.name + ".lock"), timeout):
        profile = load(path)
        change(profile)
        save(path, LubanProfile.model_validate(profile.model_dump()))  # re-validate what the change did
        return profile

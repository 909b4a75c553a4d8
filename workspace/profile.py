"""``luban-profile.json``: what Luban has learned about this workspace, global across runs.

A typed model (pydantic) so a hand-edited or corrupted profile fails with the
field that is wrong instead of steering a run with bad values. Every write is
read-change-write under an exclusive lock with a timeout.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workspace.atomic import atomic_write
from workspace.lock import acquire_with_timeout

PROFILE_VERSION = "1.0.0"


class OscillationGuard(BaseModel):
    """A dimension that rose and fell in two or more skills: diagnosis skips it."""

    dim: str
    since: str
    skills: list[str] = Field(default_factory=list)


class FrozenSkill(BaseModel):
    reason: str
    since: str
    expires: str | None = None  # ISO time; None means until a person unfreezes it
    rounds_left: int | None = None


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
    edit_budget: float = Field(default=0.10, gt=0, le=0.10)
    skill_edit_budget: dict[str, float] = Field(default_factory=dict)
    inference_exemptions: dict[str, InferenceExemption] = Field(default_factory=dict)
    alert_counters: dict[str, dict] = Field(default_factory=dict)

    def budget_for(self, skill: str) -> float:
        return min(self.edit_budget, self.skill_edit_budget.get(skill, self.edit_budget))

    def guarded_dims(self) -> set[str]:
        return {g.dim for g in self.oscillation_guard}


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

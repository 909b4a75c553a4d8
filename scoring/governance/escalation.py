"""Alert escalation per (alert, skill), with the design's recovery and cool-down rules.

Each round an alert either fires or stays quiet:
- the 1st and 2nd firing are recorded and annotated; the 3rd pauses the skill
  with a structured report; the 5th freezes it until a person unfreezes it;
- 10 quiet rounds reset a counter below 3;
- after a pause (3–4), 5 quiet rounds bring the counter back to 1 and lift the
  pause, then a 5-round cool-down starts; after a freeze (≥ 5), 10 quiet rounds
  bring it back to 2 (the freeze stays until a person lifts it — the issue
  overrides the design's automatic thaw) with a 10-round cool-down;
- during a cool-down the counter does not fall; if the alert fires in at least
  half the cool-down rounds, the recovery was false: when the cool-down ends
  the counter is restored to its pre-downgrade value + 1.

A "round" here is one run's check of the alert: a counter observes each run
once (``seen``: the run it last observed), so an alert computed again on the
same records — a paused skill that added none — neither climbs nor rests.
A person's ``luban lift`` removes the counter with the hold (workspace/holds.py).
``advance`` is one run's observation as the flow records it; a library check reads its counter's ``last_fired``
and an open episode's ``reference`` (library_alerts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

RESET_AFTER = 10


@dataclass(frozen=True)
class Escalation:
    count: int = 0
    quiet: int = 0
    paused: bool = False
    frozen: bool = False
    cooldown_left: int = 0
    cooldown_length: int = 0
    cooldown_hits: int = 0
    before_downgrade: int = 0
    seen: str = ""  # the run this counter observed last
    last_fired: str = ""  # the run it last fired on (a window check starts after it: library_alerts)
    reference: str = ""  # an open episode's last run of history before it fired (library_alerts); "" once reset

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Escalation:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def _action(count: int) -> str:
    if count >= 5:
        return "freeze"
    if count >= 3:
        return "pause"
    return "record"


def observe(state: Escalation, fired: bool) -> tuple[Escalation, str]:
    """Advance one round. Returns the new state and the action: record, pause, freeze, recover, false_recovery, quiet."""
    in_cooldown = state.cooldown_left > 0
    if fired:
        count = state.count + 1
        action = _action(count)
        new = replace(state, count=count, quiet=0, paused=state.paused or action == "pause",
                      frozen=state.frozen or action == "freeze",
                      cooldown_hits=state.cooldown_hits + (1 if in_cooldown else 0))
    else:
        new, action = replace(state, quiet=state.quiet + 1), "quiet"
    if in_cooldown:
        new = replace(new, cooldown_left=new.cooldown_left - 1)
        if new.cooldown_left == 0:
            if new.cooldown_hits * 2 >= new.cooldown_length:
                new = replace(new, count=new.before_downgrade + 1, cooldown_hits=0, cooldown_length=0)
                return new, "false_recovery"
            new = replace(new, cooldown_hits=0, cooldown_length=0)
        return new, action
    if not fired:
        if new.count >= 5 and new.quiet >= 10:
            return replace(new, before_downgrade=new.count, count=2, quiet=0, cooldown_left=10, cooldown_length=10), "recover"
        if 3 <= new.count < 5 and new.quiet >= 5:
            return replace(new, before_downgrade=new.count, count=1, quiet=0, paused=False,
                           cooldown_left=5, cooldown_length=5), "recover"
        if 0 < new.count < 3 and new.quiet >= RESET_AFTER:
            return replace(new, count=0, quiet=0), "reset"
    return new, action


def key(alert: str, skill: str, mode: str = "full") -> str:
    """The profile's name for a counter. Each mode checks its own records (quick and full runs are measured
    differently), so each counts on its own: full mode's names are the older ``alert|skill``."""
    return f"{alert}|{skill}" if mode == "full" else f"{alert}@{mode}|{skill}"


def advance(state: Escalation, fired: bool, run: str, history_until: str = "") -> tuple[Escalation, str]:
    """One run's check observed: ``observe``, then the run it saw and last fired on, and — at an episode's first
    firing — its reference, the history it was judged against (kept while the counter is above 0)."""
    opening = fired and state.count == 0
    new, action = observe(state, fired)
    reference = (history_until if opening else new.reference) if new.count else ""
    return replace(new, seen=run, reference=reference, last_fired=run if fired else new.last_fired), action

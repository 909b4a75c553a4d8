"""What the phases produce and hand on: a skill's state (its prompts, cards, buffer, progress), the baselines of
Phase 1, the test prompts of Phase 0.5, and each skill's outcome of Phases 2 and 3.

A phase returns these; the flow puts them into the run (``Run.take``) before the next phase, so no phase writes
into state another phase or another skill's thread is reading.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from flows.state.config import GO_ON, PhaseEnd, RunStop
from judges.backend import Evaluation
from workspace.rejected_edits import Buffer
from workspace.results_tsv import Stop
from workspace.test_prompts import TestPrompt

Progress = tuple[float, int, Stop | None]  # (baseline total, last recorded round, why the rounds stopped or None)


@dataclass(frozen=True)
class SkillState:
    """One skill's part of a run, as a phase or a skill's thread leaves it; None: that part was not touched."""

    skill: str
    prompts: tuple[TestPrompt, ...] | None = None
    baseline: Evaluation | None = None
    best: Evaluation | None = None  # the kept version's score card
    buffer: Buffer | None = None  # rejected_edits.md as loaded and added to
    resumed: Progress | None = None  # how far a resumed run's rounds had got

    def merged(self, newer: SkillState) -> SkillState:
        """This state with every part ``newer`` has (a part it leaves None stays as it was)."""
        return replace(self, **{f.name: getattr(newer, f.name) for f in fields(self)
                                if f.name != "skill" and getattr(newer, f.name) is not None})


@dataclass(frozen=True)
class Designed:
    """Phase 0.5: every skill's test prompts (saved to its test-prompts.json), and whether a person let the run go on."""

    prompts: dict[str, tuple[TestPrompt, ...]]
    end: PhaseEnd = GO_ON


@dataclass(frozen=True)
class Baselines:
    """Phase 1: every skill's state as its baseline (or its recorded one, on --resume) left it, in the score card's
    order; the skills that go on to the rounds (the ROI precheck and the review gate hold some back); and the end."""

    states: tuple[SkillState, ...]
    going_on: tuple[str, ...]
    end: PhaseEnd = GO_ON


@dataclass(frozen=True)
class SkillOutcome:
    """How one skill's rounds ended: totals before and after (means of their samples), rounds, why they stopped,
    and — when what stopped them stops the whole run (the LLM budget, a checkpoint nobody answered) — why."""

    skill: str
    before: float
    after: float
    rounds: int
    stop: Stop  # why the skill's loop ended
    kept: int = 0
    reverted: int = 0
    held_out_fail: bool = False
    ends_run: RunStop | None = None

    def after_round(self, kept: bool, reverted: bool, total: float, rounds: int) -> SkillOutcome:
        """This outcome after one more round: its edit kept, reverted (or neither: abandoned unjudged)."""
        return replace(self, after=total, rounds=rounds, kept=self.kept + kept, reverted=self.reverted + reverted)


@dataclass(frozen=True)
class Optimized:
    """What Phases 2 and 3 hand on: each skill's outcome, in the order its rounds ran, and how the phases ended."""

    outcomes: dict[str, SkillOutcome] = field(default_factory=dict)
    end: PhaseEnd = GO_ON

    @classmethod
    def of(cls, outcomes: dict[str, SkillOutcome], end: PhaseEnd = GO_ON) -> Optimized:
        """The outcomes, ended by the first that stops the run, if any did and nothing stopped it before."""
        first = next((o.ends_run for o in outcomes.values() if o.ends_run), None)
        return cls(dict(outcomes), end if not end.goes_on or first is None else PhaseEnd(first))



"""One run's state, built once in Phase 0 and passed explicitly to every phase (no globals)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from flows.interaction.approvals import Decision
from flows.interaction.progress import NO_DISPLAY, Display
from flows.server.limits import close_batch_budget
from flows.state.config import Quality, RunConfig, RunOptions
from flows.state.effects import Effects
from flows.state.inserted import InsertedBlocks
from flows.state.ledger import Ledger
from flows.state.measurements import Measurements
from flows.state.products import Baselines, Designed, Progress, SkillState
from judges.backend import Backend, Evaluation
from scoring.keep_decision import KeepPolicy, Measured
from scoring.skill_view import sources_digest
from workspace import run_marker
from workspace.layout import Mode, Workspace
from workspace.lock import WorkspaceLock
from workspace.manifest import ManifestWriter
from workspace.profile import LubanProfile
from workspace.ratchet import Ratchet
from workspace.rejected_edits import Buffer
from workspace.results_tsv import ResultsFile, Status, now_stamp
from workspace.skill_source import list_files, read_sources
from workspace.test_prompts import TestPrompt

T = TypeVar("T")

__all__ = ["Run", "RunOptions"]  # RunOptions lives in flows/state/config.py; imported from here too


@dataclass
class Run:
    """The run under way: its configuration (frozen), the handles it works through (workspace, ratchet, backend),
    and what it has measured and recorded so far, per skill."""

    config: RunConfig
    workspace: Workspace
    ratchet: Ratchet | None
    backend: Backend
    run_dir: Path
    started: datetime
    effects: Effects  # rows, events, checkpoints, warnings: everything the run does beyond its skill files
    measurements: Measurements  # what it asks of the backend: evaluations, more judge calls, held-out grades, edits
    manifest: ManifestWriter | None = None
    skills: list[str] = field(default_factory=list)
    # each skill's part — prompts, baseline and kept score cards, rejected edits, how far a resumed run had got — as a
    # frozen value, replaced whole when a phase or a skill's thread hands on a new one (``take``), never changed in place
    states: dict[str, SkillState] = field(default_factory=dict)
    alerts: list[str] = field(default_factory=list)
    preferred_dims: frozenset[str] = frozenset()  # dims with high-yield patterns from meta_learnings
    meta_hints: tuple[str, ...] = ()  # the epoch reviews' lessons of this mode, for the proposer's prompt
    measure_only: frozenset[str] = frozenset()  # paused skills: a baseline this run, no edit (workspace/holds.py)
    flow_run_id: str | None = None  # the root Prefect flow run: the key of its marker in the workspace
    display: Display = NO_DISPLAY  # the terminal's progress bar while Phase 2 runs, paused for every question
    ledger: Ledger = field(default_factory=Ledger)  # every sample this run took, per skill and text
    inserted: InsertedBlocks = field(default_factory=InsertedBlocks)  # shared by every skill's rounds: thread-safe
    policy: KeepPolicy = field(default_factory=KeepPolicy)
    repository_lock: WorkspaceLock | None = None  # full mode: held from before the branch is made to the run's end
    budget_id: str | None = None  # a fanned-out batch's LLM budget on the Prefect server (flows/server/limits.py)

    def for_skill(self, **changes: Any) -> Run:
        """A run for one skill's work in a thread of its own (--parallel, Phase 1's baselines): the run-wide parts
        shared, each of them thread-safe (ledger, inserted lines, effects, backend); the skills' states a copy of the
        map (its values are frozen), so what the thread hands on reaches this run only through ``join``."""
        return replace(self, states=dict(self.states), alerts=list(self.alerts), **changes)

    def state(self, skill: str) -> SkillState:
        """The skill's part of this run, as it stands."""
        return self.states.get(skill) or SkillState(skill)

    def take(self, state: SkillState) -> None:
        """A skill's state as a phase or a skill's thread produced it, put into the run: what it leaves None stays as
        it was, and the skill's entry is replaced by the merged value."""
        self.states[state.skill] = self.state(state.skill).merged(state)

    def join(self, child: Run, skill: str) -> None:
        """What ``child`` (``for_skill``) produced for ``skill``, taken back (nothing of another skill's)."""
        self.take(child.state(skill))

    def take_prompts(self, designed: Designed) -> None:
        """Phase 0.5's prompts, which every later measurement of a skill is made on."""
        for skill, prompts in designed.prompts.items():
            self.take(SkillState(skill, prompts=prompts))

    def take_baselines(self, measured: Baselines) -> None:
        """Phase 1's baselines, in the score card's order (the skills it measured first), and the skills that go on to
        the rounds; a skill it did not measure has no baseline in this run."""
        order = [s.skill for s in measured.states] + [s for s in self.states if s not in {m.skill for m in measured.states}]
        self.states = {skill: replace(self.state(skill), baseline=None) for skill in order}
        for state in measured.states:
            self.take(state)
        self.skills = list(measured.going_on)

    def prompts(self, skill: str) -> list[TestPrompt]:
        """The skill's test prompts (none before Phase 0.5)."""
        return list(self.state(skill).prompts or ())

    def baseline(self, skill: str) -> Evaluation:
        return _given(self.state(skill).baseline, skill, "baseline score card")

    def best(self, skill: str) -> Evaluation:
        """The kept version's score card."""
        return _given(self.state(skill).best, skill, "kept version's score card")

    def buffer(self, skill: str) -> Buffer:
        """rejected_edits.md as loaded in Phase 0 and added to since."""
        return _given(self.state(skill).buffer, skill, "rejected edits")

    def resumed(self, skill: str) -> Progress | None:
        """How far the records say a resumed skill's rounds had got (None: not resumed)."""
        return self.state(skill).resumed

    def measured(self) -> list[str]:
        """The skills with a baseline in this run, in the score card's order."""
        return [skill for skill, state in self.states.items() if state.baseline is not None]

    def release(self) -> None:
        if self.repository_lock is not None:
            self.repository_lock.release()
        if self.budget_id is not None:
            close_batch_budget(self.budget_id)

    def fallbacks(self) -> dict[str, int]:
        """Every fallback the run took, counted: its measurements' (judges unscored, answers cut, prompts designed
        offline) and the server's (structured output below json_schema, once per model)."""
        counts = self.ledger.fallback_totals()
        for line in self.backend.server_facts().get("fallbacks", ()):
            counts[line] = counts.get(line, 0) + 1
        return counts

    def reference(self, skill: str, text: str) -> tuple[str, str]:
        """What a re-measured baseline must share with an earlier one to count as the same text read again: SKILL.md
        with the skill's files (one hash), and the models that judge it. A change of either is a new reference for
        the drift check, not a shift."""
        folder = self.workspace.skill_file(skill).parent
        files = sources_digest(read_sources(folder, list_files(folder)))
        key = hashlib.sha256(text.encode("utf-8") + b"\0" + files.encode()).hexdigest()[:12]
        settings = self.backend.settings
        models = f"{settings.judge_model}/{settings.target_model}" if settings is not None else "offline"
        return key, models

    def incumbent(self, skill: str) -> Measured:
        """The kept text's samples so far (they accumulate across rounds: it is re-measured every round); a keep decision
        reads ``ledger.comparable`` instead."""
        folder = self.workspace.skill_file(skill).parent
        text = (folder / "SKILL.md").read_text(encoding="utf-8")  # with its files: a reference edit is another version
        return self.ledger.of(skill, self.ledger.version(skill, text, sources_digest(read_sources(folder, list_files(folder)))))

    def incumbent_total(self, skill: str) -> float:
        measured = self.incumbent(skill)
        return measured.total() if measured.dims else self.best(skill).score.total

    @property
    def editor(self) -> Ratchet:
        """The ratchet edits go through; an evaluate-only run has none and never edits."""
        if self.ratchet is None:
            raise RuntimeError("this run only evaluates (Phases 0–1): it has no ratchet to edit through")
        return self.ratchet

    @property
    def options(self) -> RunOptions:
        return self.config.options

    @property
    def mode(self) -> Mode:
        return self.config.mode

    @property
    def quality(self) -> Quality:
        return self.config.quality

    @property
    def max_rounds(self) -> int:
        return self.config.max_rounds

    def ask(self, name: str, summary: str, **kwargs) -> Decision:
        """A 🔴 checkpoint under a key unique in this run (the same path gives the same keys on a re-execution)."""
        key = self.effects.checkpoint_key(name)
        kwargs.setdefault("timeout", self.options.approval_timeout)
        with self.display.paused():  # a prompt is never drawn under the progress bar
            answer = self.effects.ask(key, summary, self.options.approval, self._suspending, **kwargs)
        if self.manifest is not None:  # the audit trail holds every answer, and who gave it
            self.manifest.approved(key, answer.approved, str(answer.answered_by), answer.choice, answer.comment)
        return answer

    def _suspending(self, key: str) -> None:
        run_marker.save(self.workspace.root, self.flow_run_id, state="suspended", checkpoint=key, since=now_stamp(),
                        answer=f"the Prefect UI, or 'luban approve {self.flow_run_id}' (--reject, --comment)")

    def results(self, skill: str) -> ResultsFile:
        return ResultsFile(self.workspace.results_tsv(skill))

    def next_round(self, skill: str) -> int:
        """The number after the last round this run recorded for the skill: read from the records, so a resumed
        run numbers its rounds as the unbroken run would have."""
        rows = self.results(skill).rows()
        start = max((i for i, r in enumerate(rows) if r.status == Status.BASELINE), default=0)
        return max((r.round for r in rows[start:]), default=0) + 1

    def branch(self) -> str | None:
        """The run's git branch (full mode), or None."""
        git = self.ratchet.git if self.ratchet is not None else None
        return git.branch if git is not None else None

    def commit(self) -> str:
        return self.ratchet.head_sha()[:12] if self.ratchet is not None else ""

    def budget_for(self, skill: str) -> float:
        return min(self.config.budget, self.profile.budget_for(skill))

    @property
    def profile(self) -> LubanProfile:
        """luban-profile.json as it stands, read through the effects each time: a freeze in a skill's thread, a hold
        ticked in Phase 0 or a child flow run's guard is seen at once, with no copy to keep in step."""
        return self.effects.read_profile(self.workspace.profile)

    def repaired(self, skill: str, repair) -> None:
        if repair:
            self.effects.notice(repair.message(self.workspace.results_tsv(skill)))


def _given(value: T | None, skill: str, what: str) -> T:
    """``value``, which the phase that reads it needs an earlier phase to have made: its absence is a bug, said plainly."""
    if value is None:
        raise LookupError(f"{skill}: no {what} in this run yet (an earlier phase makes it)")
    return value

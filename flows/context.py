"""One run's state, built once in Phase 0 and passed explicitly to every phase (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from flows.checkpoints import Approval, Decision, checkpoint
from judges.backend import Backend, Evaluation
from scoring.notes import format_note
from workspace.file_ratchet import FileRatchet
from workspace.git_ratchet import GitRatchet
from workspace.layout import Mode, Workspace
from workspace.manifest import ManifestWriter
from workspace import run_marker
from workspace.profile import LubanProfile
from workspace.rejected_edits import Buffer
from workspace.results_tsv import ResultRow, ResultsFile, now_stamp
from workspace.test_prompts import TestPrompt


@dataclass(frozen=True)
class RunOptions:
    """The flow's parameters: the whole run configuration (never a secret: keys come from the environment)."""

    skills_dir: str
    skills: tuple[str, ...] = ()
    mode: str = "auto"  # quick | full | auto
    approval: Approval = "auto"
    max_rounds: int | None = None  # default: 3 quick, 5 full
    budget: float = 0.10
    workspace: str | None = None
    init_git: bool = False
    resume: bool = False
    approval_timeout: int = 3600
    seed: int = 20261202
    llm: dict[str, Any] = field(default_factory=dict)  # model names, limits; never the API key
    evaluate_only: bool = False  # Phases 0–1: no branch, no snapshot, nothing edited


@dataclass
class SkillOutcome:
    skill: str
    before: float
    after: float
    rounds: int
    stop: str  # why the skill's loop ended
    kept: int = 0
    reverted: int = 0
    held_out_fail: bool = False


@dataclass
class Run:
    options: RunOptions
    workspace: Workspace
    mode: Mode
    ratchet: GitRatchet | FileRatchet | None
    backend: Backend
    profile: LubanProfile
    run_dir: Path
    started: datetime
    manifest: ManifestWriter | None = None
    skills: list[str] = field(default_factory=list)
    prompts: dict[str, list[TestPrompt]] = field(default_factory=dict)
    baselines: dict[str, Evaluation] = field(default_factory=dict)
    buffers: dict[str, Buffer] = field(default_factory=dict)
    outcomes: dict[str, SkillOutcome] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    consumer_baseline: str = "not tested"
    mode_quality: str = "normal"  # normal | quick | lite: what the consumer baseline allowed
    stopped: str | None = None  # a run-wide stop (budget, lock, consumer baseline block)
    best: dict[str, Evaluation] = field(default_factory=dict)  # the kept version's score card, per skill
    kept_edits: dict[str, list] = field(default_factory=dict)  # the edits kept this run, in order, per skill
    resumed: dict[str, tuple] = field(default_factory=dict)  # skill → (baseline total, last round, stop) on --resume
    preferred_dims: frozenset[str] = frozenset()  # dims with high-yield patterns from meta_learnings
    flow_run_id: str | None = None  # the root Prefect flow run: the key of its marker in the workspace
    asked: dict[str, int] = field(default_factory=dict)  # checkpoint name → times asked (keys must be unique)

    @property
    def max_rounds(self) -> int:
        return self.options.max_rounds or (5 if self.mode == "full" else 3)

    def ask(self, name: str, summary: str, **kwargs) -> Decision:
        """A 🔴 checkpoint under a key unique in this run (the same path gives the same keys on a re-execution)."""
        self.asked[name] = self.asked.get(name, 0) + 1
        key = name if self.asked[name] == 1 else f"{name}#{self.asked[name]}"
        kwargs.setdefault("timeout", self.options.approval_timeout)
        return checkpoint(key, summary, self.options.approval, on_suspend=self._suspending, **kwargs)

    def _suspending(self, key: str) -> None:
        run_marker.save(self.workspace.root, self.flow_run_id, state="suspended", checkpoint=key, since=now_stamp(),
                        answer=f"the Prefect UI, or 'luban approve {self.flow_run_id}' (--reject, --comment)")

    def results(self, skill: str) -> ResultsFile:
        return ResultsFile(self.workspace.results_tsv(skill))

    def commit(self) -> str:
        return self.ratchet.repo.head.commit.hexsha[:12] if isinstance(self.ratchet, GitRatchet) else ""

    def budget_for(self, skill: str) -> float:
        return min(self.options.budget, self.profile.budget_for(skill))

    def record(self, skill: str, round_no: int, status: str, evaluation: Evaluation | None, **fields: Any) -> ResultRow:
        """Append one results.tsv row (one atomic write) and return it."""
        row = self.result_row(skill, round_no, status, evaluation, **fields)
        self.repaired(skill, self.results(skill).append(row))
        return row

    def repaired(self, skill: str, repair) -> None:
        if repair:
            self.notices.append(repair.message(self.workspace.results_tsv(skill)))

    def result_row(self, skill: str, round_no: int, status: str, evaluation: Evaluation | None, *, old: float | None = None,
                   dim: str = "", facts: dict[str, Any] | None = None, text: str = "", edit_pct: float | None = None,
                   held_out: float | None = None) -> ResultRow:
        facts = dict(facts or {})
        if self.backend.name != "offline" and getattr(self.backend, "settings", None) and self.backend.settings.same_source:
            facts["same_source"] = "true"
        if evaluation is not None:
            facts.update(_unscored_facts(evaluation, skill))
        new = evaluation.score.total if evaluation else None
        row = ResultRow(
            timestamp=now_stamp(), skill=skill, round=round_no, status=status, mode=self.mode, commit=self.commit(),
            old_score=old, new_score=new, dim_changed=dim,
            delta=(round(new - old, 1) if new is not None and old is not None else None),
            note=format_note(facts, text), eval_mode=evaluation.eval_mode if evaluation else "",
            judge_count=evaluation.judge_count if evaluation else None, edit_pct=edit_pct,
            scores={d.dim: d.score for d in evaluation.score.dims} if evaluation else None, held_out_score=held_out,
        )
        return row


def _unscored_facts(evaluation: Evaluation, skill: str) -> dict[str, str]:
    """Dimensions that could not be scored, named in the row with the first reason, and said in the log:
    the total of such a row covers only the scored dimensions."""
    missing = [d for d in evaluation.score.dims if d.score is None]
    if not missing:
        return {}
    reason = (missing[0].reasons[0] if missing[0].reasons else "no reason given")[:160]
    from prefect.logging import get_run_logger

    get_run_logger().warning("%s: %s unscored (%s); the total covers the scored dimensions only", skill,
                             ", ".join(d.dim for d in missing), reason)
    return {"unscored": ",".join(d.dim for d in missing), "unscored_reason": reason}

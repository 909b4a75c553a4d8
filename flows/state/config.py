"""A run's configuration, decided once in Phase 0 and never changed, and the typed ends of the phases.

Everything a phase may read about *how* the run goes — the flow's parameters,
the mode the router or a person chose, and what the target model's bare
capability allows (the consumer baseline) — is fixed before the first skill
is touched, so a resumed run, a suspended run executed again, and a child
flow run on another worker all rebuild the same one from the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from flows.interaction.approvals import Approval
from workspace.layout import MODES, Mode

LITE_BUDGET = 0.03  # a lite run edits at most 3 % of a file, one round


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
    allow_rename: bool = False  # a person's opt-in: an edit may change the frontmatter name (runtimes invoke by it)
    parallel: int = 1  # skills whose rounds run at once (flows/scale/fan_out.py); more than 1 needs approval auto
    lock_wait: int = 0  # seconds to queue behind a run holding the workspace or repository (0: refuse, naming it)
    start_branch: str | None = None  # the branch checked out when the run was asked for: a queued run starts there
    fan_out_to: str | None = None  # a deployment of optimize-skill: each skill's rounds as a child flow run on its pool


class Quality(StrEnum):
    """What the consumer baseline allows: the normal evaluation, quick evaluation inside a full-mode run (a dry-run
    dim8, one judge), or lite (format fixes only, one round, at most 3 % of a file)."""

    NORMAL = "normal"
    QUICK = "quick"
    LITE = "lite"


class Response(StrEnum):
    """The design's response to the target model's bare capability (judges/performance.py thresholds)."""

    CONTINUE = "continue"
    QUICK = "quick"
    LITE = "lite"
    BLOCK = "block"


@dataclass(frozen=True)
class ConsumerVerdict:
    """The consumer baseline: the target model's capability without any skill (None: not measured) and the
    response it calls for; ``untested`` says why it was not measured (quick mode, the offline backend)."""

    capability: float | None = None
    response: Response = Response.CONTINUE
    untested: str = ""

    def __post_init__(self) -> None:
        # a verdict handed to a child flow run arrives as JSON: its response is a plain string until made one here
        object.__setattr__(self, "response", Response(self.response))

    @classmethod
    def not_tested(cls, why: str) -> ConsumerVerdict:
        return cls(untested=why)

    def record(self, models: dict[str, Any]) -> dict[str, Any]:
        """What the run's marker keeps: the verdict and the models it was measured with."""
        return {"capability": self.capability, "response": self.response.value, "untested": self.untested,
                "models": models}

    @classmethod
    def from_record(cls, record: dict[str, Any], models: dict[str, Any]) -> ConsumerVerdict | None:
        """The recorded verdict, when it was measured with these same models (else None: measure again)."""
        if record.get("models") != models or record.get("response") not in {r.value for r in Response}:
            return None
        return cls(record.get("capability"), Response(record["response"]), str(record.get("untested", "")))

    @property
    def quality(self) -> Quality:
        return {Response.QUICK: Quality.QUICK, Response.LITE: Quality.LITE}.get(self.response, Quality.NORMAL)

    @property
    def blocks(self) -> bool:
        return self.response is Response.BLOCK

    def describe(self) -> str:
        """The report's line: ``5.0/10 → quick``, or why it was not tested."""
        if self.untested:
            return f"not tested ({self.untested})"
        if self.capability is None:
            return "could not be measured → continue"
        return f"{self.capability}/10 → {self.response.value}"

    def notice(self) -> str | None:
        """What the run's summary says about a degradation or a block (None: the run goes on as asked)."""
        return {
            Response.QUICK: "consumer baseline below the full threshold: degraded to quick evaluation (dry-run dim8, "
                            "one judge)",
            Response.LITE: "consumer baseline below the quick threshold: degraded to lite (format fixes only, ≤ 3 % "
                           "budget)",
            Response.BLOCK: f"consumer capability insufficient ({self.capability}/10): fine-tune or use a stronger "
                            "target model, or run in quick mode",
        }.get(self.response)


@dataclass(frozen=True)
class RunConfig:
    """How this run goes, fixed in Phase 0: the flow's parameters as the run resolved them (a suspension executed
    again is a resume; a resume with nothing recorded is a fresh start), the mode, and the consumer verdict."""

    options: RunOptions
    mode: Mode
    consumer: ConsumerVerdict = ConsumerVerdict(untested="quick mode")
    keep_runs: int = 20  # runs whose backups stay (the settings' LUBAN_KEEP_RUNS); Phase 6 prunes older ones

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"a run's mode is quick or full, not {self.mode!r} (auto is decided in Phase 0)")
        object.__setattr__(self, "mode", Mode(self.mode))  # a flow parameter arrives as its string

    @property
    def quality(self) -> Quality:
        """How the run evaluates and edits, as the consumer verdict allows. An evaluation only reports the verdict:
        it scores as asked, and neither degrades nor stops (that gate is for the optimizing that would follow)."""
        return Quality.NORMAL if self.options.evaluate_only else self.consumer.quality

    @property
    def blocks(self) -> bool:
        return self.consumer.blocks and not self.options.evaluate_only

    def consumer_notice(self) -> str | None:
        notice = self.consumer.notice()
        if notice and self.options.evaluate_only:
            return f"{notice} (an optimize run would act on it; this evaluation only reports it)"
        return notice

    @property
    def max_rounds(self) -> int:
        if self.quality is Quality.LITE:
            return 1
        return self.options.max_rounds or (5 if self.mode == "full" else 3)

    @property
    def budget(self) -> float:
        """The largest share of a file one edit may change, before the profile's own per-skill budget."""
        return min(self.options.budget, LITE_BUDGET) if self.quality is Quality.LITE else self.options.budget


class StopKind(StrEnum):
    """Why a run stopped before its end."""

    BUDGET = "budget"  # the hard LLM budget is spent (the run's own, or the batch's on the Prefect server)
    NO_ANSWER = "no-answer"  # a checkpoint nobody answered in time: resumable
    DECLINED = "declined"  # a person stopped it at a checkpoint
    CONSUMER_GATE = "consumer-gate"  # the target model is below the consumer baseline's thresholds


@dataclass(frozen=True)
class RunStop:
    kind: StopKind
    detail: str  # what a person reads: which budget, which checkpoint, what to do next

    def __str__(self) -> str:
        return f"budget: {self.detail}" if self.kind is StopKind.BUDGET else self.detail


@dataclass(frozen=True)
class PhaseEnd:
    """How a phase ended: the run goes on (``stop`` None), or stops here, and why."""

    stop: RunStop | None = None

    @property
    def goes_on(self) -> bool:
        return self.stop is None


GO_ON = PhaseEnd()

"""Measuring texts for the keep decision: every sample a run takes, and the cache keys that make them its own.

Each measurement (a full evaluation, more judge calls, a held-out grade) is a
Prefect task whose cache key is everything that could change its answer: the
text, the skill's files, the test prompts, the mode, the whole model settings
(both judge models, structured output), the code that scores (a hash of
``scoring/`` and ``judges/``), the root flow run, and the sample's index for
that text. So a suspended run that Prefect executes again from the top gets its
own answers back without paying for them twice, while a later run, another
code version or the next sample of the same text always asks afresh — a cached
sample would be the same noise twice, not a new measurement.

The ``Ledger`` holds every sample of every text the run measured, keyed by
the text's hash: the incumbent's samples accumulate across rounds, and the
judges' noise is pooled over all of them (``scoring.keep_decision.pooled_noise``).
A kept candidate's deciding samples count for its totals and the noise, but its
next comparisons read only the samples taken after its keep (``Ledger.comparable``:
samples read until they looked good enough lean high). A version is SKILL.md's text
with the skill's other files (``Version``): an edit of a referenced file leaves the
text as it was, so the ledger names such a version by its text and its files' digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from flows.state.config import Quality
from flows.state.ledger import text_id
from flows.state.measurements import Pending
from judges.backend import Evaluation, Resample, readings
from judges.sampling import evaluation_samples, resample_samples
from scoring.edits import SKILL_FILE
from scoring.keep_decision import Measured, Noise, SamplePlan
from scoring.skill_view import SourceFile, sources_digest
from workspace import void_replies
from workspace.layout import Mode
from workspace.skill_source import list_files, read_sources

if TYPE_CHECKING:
    from flows.state.run import Run

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
HELD_OUT_SAMPLES = 3  # graded calls per held-out prompt and version: the gate compares means, not one call each
BASELINE_JUDGE_SAMPLES = 4  # a kept text's first measurement: enough judge calls that its own spread says something
M = TypeVar("M", Evaluation, Resample)
OFFLINE_NOISE = Noise(0.0, 10**6)  # the offline stand-ins are deterministic: their noise is known to be none


@lru_cache(maxsize=4)
def code_version(root: Path = PACKAGE_ROOT) -> str:
    """A hash of the code that turns a text into scores: a change to it makes every cached measurement stale."""
    digest = hashlib.sha256()
    for package in ("scoring", "judges"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def settings_fingerprint(run: Run) -> dict:
    """Every model setting that can change an answer (never the key: ``describe`` shows only whether one is set)."""
    settings = run.backend.settings
    if settings is None:
        return {"backend": "offline"}
    return {k: v for k, v in settings.describe().items() if k not in ("api_key", "max_llm_calls", "max_tokens",
                                                                    "max_concurrency", "timeout_seconds", "max_retries",
                                                                    "llm_limit", "llm_rate_limit", "server_slots")}


def measurement_key(run: Run, kind: str, skill: str, text: str, index: int,
                    sources: tuple[SourceFile, ...] | None = None, **detail) -> str:
    """``sources``: the skill's files as the measurement reads them (read here when not given)."""
    sources = skill_sources(run, skill) if sources is None else sources
    parts = {"kind": kind, "skill": skill, "text": hashlib.sha256(text.encode("utf-8")).hexdigest(), "index": index,
             "files": sorted(skill_files(run, skill)), "sources": sources_digest(sources),
             "prompts": [p.model_dump() for p in run.prompts(skill)],
             "mode": evaluation_mode(run), "settings": settings_fingerprint(run), "code": code_version(),
             "run": run.flow_run_id or "no-flow-run", "detail": detail}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def skill_files(run: Run, skill: str) -> frozenset[str]:
    return list_files(run.workspace.skill_file(skill).parent)


def skill_sources(run: Run, skill: str) -> tuple[SourceFile, ...]:
    """The skill's files other than SKILL.md as its judges may read them (``workspace.skill_source.read_sources``)."""
    folder = run.workspace.skill_file(skill).parent
    return read_sources(folder, list_files(folder))


def evaluation_mode(run: Run) -> Mode:
    return Mode.QUICK if run.quality is Quality.QUICK else run.mode  # a weak target model: quick evaluation only


def version(run: Run, skill: str, text: str, sources: tuple[SourceFile, ...] | None = None) -> str:
    """The ledger's name for SKILL.md's ``text`` with ``sources`` (the skill's other files; as on disk when not given)."""
    return run.ledger.version(skill, text, sources_digest(skill_sources(run, skill) if sources is None else sources))


def evaluate(run: Run, skill: str, text: str, ever_reverted: bool = False) -> Evaluation:
    """A full evaluation (the score card, the gates, dim8), its samples added to the ledger."""
    return recorded(run, evaluate_ahead(run, skill, text, ever_reverted))


@dataclass(frozen=True)
class Taking(Generic[M]):
    """A measurement under way, and what its samples are added to when it is read: the skill, the version the ledger
    names, the text (for its void replies), and how its value becomes samples."""

    skill: str
    text: str
    version: str
    pending: Pending[M]
    samples: Callable[[M], Measured]


def recorded(run: Run, *takings: Taking[M] | None) -> M:
    """Wait for each measurement, then add its samples to the ledger and keep its fallbacks and void replies: the one
    place a measurement joins the run's evidence. The first one's value."""
    values = []
    for taking in takings:
        if taking is None:  # nothing was asked for
            continue
        value = taking.pending.result()
        run.ledger.add(taking.skill, taking.version, taking.samples(value))
        run.ledger.note_fallbacks(taking.skill, value.fallbacks)
        about = {"skill": taking.skill, "text": text_id(taking.text)}
        void_replies.append(run.workspace.void_replies(taking.skill), [about | entry for entry in value.void_replies()])
        values.append(value)
    return values[0]


def evaluate_ahead(run: Run, skill: str, text: str, ever_reverted: bool = False, diff: str = "",
                   sources: tuple[SourceFile, ...] | None = None) -> Taking[Evaluation]:
    """``evaluate`` started (in the background where the run's measurements run so); ``recorded`` reads it.
    ``diff``: what changed since the kept version, for the review gate to see; ``sources``: the skill's other files
    as this version has them (as on disk when not given)."""
    sources = skill_sources(run, skill) if sources is None else sources
    name = version(run, skill, text, sources)
    first = run.ledger.reserve_readings(skill, name, readings(evaluation_mode(run), evaluation=True))
    key = measurement_key(run, "evaluate", skill, text, run.ledger.next_index("evaluate", skill, name), sources,
                          ever_reverted=ever_reverted, diff=hashlib.sha256(diff.encode()).hexdigest(), first_reading=first)
    pending = run.measurements.evaluate(run.backend, key, text, skill, tuple(sorted(skill_files(run, skill))),
                                        evaluation_mode(run), run.prompts(skill), ever_reverted, diff, first, sources)
    return Taking(skill, text, name, pending, evaluation_samples)


def resample_ahead(run: Run, skill: str, text: str, judges: int, dim8: bool,
                   sources: tuple[SourceFile, ...] | None = None) -> Taking[Resample] | None:
    """More judge calls (and dim8 once more) on ``text`` (with ``sources``, as ``evaluate_ahead``); None when that is
    nothing."""
    if not judges and not dim8:
        return None
    sources = skill_sources(run, skill) if sources is None else sources
    name = version(run, skill, text, sources)
    first = run.ledger.reserve_readings(skill, name, readings(evaluation_mode(run), judges, dim8))
    key = measurement_key(run, "resample", skill, text, run.ledger.next_index("resample", skill, name), sources,
                          judges=judges, dim8=dim8, first_reading=first)
    pending = run.measurements.resample(run.backend, key, text, skill, tuple(sorted(skill_files(run, skill))),
                                        evaluation_mode(run), run.prompts(skill), judges, dim8, first, sources)
    return Taking(skill, text, name, pending, resample_samples)


@dataclass(frozen=True)
class Version:
    """A skill as a keep decision weighs it: SKILL.md's text and the skill's other files (an edit of a referenced
    file changes one of those and leaves the text alone)."""

    text: str
    sources: tuple[SourceFile, ...]

    @classmethod
    def on_disk(cls, run: Run, skill: str) -> Version:
        return cls(run.workspace.skill_file(skill).read_text(encoding="utf-8"), skill_sources(run, skill))

    def name(self, run: Run, skill: str) -> str:
        return version(run, skill, self.text, self.sources)

    def samples(self, run: Run, skill: str) -> Measured:
        return run.ledger.of(skill, self.name(run, skill))

    def comparable(self, run: Run, skill: str) -> Measured:
        return run.ledger.comparable(skill, self.name(run, skill))

    def kept(self, run: Run, skill: str) -> None:
        """This version was just kept: compared from now on on samples its keep did not choose (``Ledger.kept``)."""
        run.ledger.kept(skill, self.name(run, skill))

    def with_file(self, file: str, text: str) -> Version:
        """This version with one of its files' text replaced."""
        if file == SKILL_FILE:
            return Version(text, self.sources)
        return Version(self.text, tuple(SourceFile(s.path, text) if s.path == file else s for s in self.sources))

    def file_text(self, file: str) -> str:
        """The text of one of its files: SKILL.md's, or one of the sources'."""
        return self.text if file == SKILL_FILE else next((s.text or "" for s in self.sources if s.path == file), "")


def measure_both(run: Run, skill: str, incumbent: Version, candidate: Version, plan: SamplePlan) -> tuple[Measured, Measured]:
    """One more look: both versions measured side by side, as ``plan`` asks; their samples so far."""
    first = resample_ahead(run, skill, candidate.text, plan.candidate_judges, plan.candidate_dim8, candidate.sources)
    second = resample_ahead(run, skill, incumbent.text, plan.incumbent_judges, plan.incumbent_dim8, incumbent.sources)
    if first is not None or second is not None:
        recorded(run, first, second)
    return incumbent.comparable(run, skill), candidate.samples(run, skill)


def dim8_gone(run: Run, skill: str, kept: Version) -> bool:
    """The kept version has dim8 samples, but none a keep decision may read (they decided its keep): measure it anew."""
    return kept.samples(run, skill).n("dim8") > 0 and kept.comparable(run, skill).n("dim8") == 0


def baseline(run: Run, skill: str, text: str, sources: tuple[SourceFile, ...] | None = None) -> Evaluation:
    """The kept text's first measurement in a run: a full evaluation plus judge calls up to four samples and dim8
    once more, so the judges' noise is known (pooled degrees of freedom) before the first edit is decided. An
    evaluate-only run takes the evaluation alone: a score card, with no edit to weigh against the noise."""
    judges_in_evaluation = 1 if evaluation_mode(run) == "quick" else 2
    evaluation = evaluate_ahead(run, skill, text, sources=sources)
    if run.options.evaluate_only:  # a score card, not the start of a ratchet: no edit's noise to weigh against
        return recorded(run, evaluation)
    more = resample_ahead(run, skill, text, BASELINE_JUDGE_SAMPLES - judges_in_evaluation, True, sources)
    card = recorded(run, evaluation)
    recorded(run, more)
    return card


def held_out(run: Run, skill: str, text: str) -> tuple[float, ...]:
    """Fresh held-out grades of ``text`` (HELD_OUT_SAMPLES of them; one offline, where they are exact).

    They join the text's earlier grades in the ledger (for the noise), but the gate compares these: the same
    text graded now against its baseline grades is how a drifting grader shows."""
    count = 1 if run.backend.exact or run.options.evaluate_only else HELD_OUT_SAMPLES
    files = skill_files(run, skill)
    sources = skill_sources(run, skill)
    name = version(run, skill, text, sources)
    first = run.ledger.reserve_readings(skill, name, count)
    futures = [run.measurements.held_out(run.backend, measurement_key(run, "held-out", skill, text,
                                                                      run.ledger.next_index("held-out", skill, name),
                                                                      first_reading=first + i, sources=sources),
                                         text, skill, files, run.prompts(skill), first + i, sources)
               for i in range(count)]
    graded = [f.result() for f in futures]
    values = tuple(v for v in graded if v is not None)
    run.ledger.note_fallbacks(skill, ["held-out grade unscored"] * (len(graded) - len(values)))
    run.ledger.add_held_out(skill, name, values)
    return values


def total(run: Run, skill: str, version: Version) -> float:
    """The version's total: the mean over all its samples, or its score card's before it has any."""
    measured = version.samples(run, skill)
    return measured.total() if measured.dims else run.best(skill).score.total


def noise(run: Run) -> dict[str, Noise]:
    return run.ledger.noise()


def held_out_noise(run: Run) -> Noise | None:
    return OFFLINE_NOISE if run.backend.exact else run.ledger.held_out_noise()


class CallCounter:
    """LLM calls made since it was created: what a decision (or a baseline) cost, recorded with it."""

    def __init__(self, run: Run):
        self.usage = run.backend.usage
        self.start = self.usage.calls if self.usage else 0

    def spent(self) -> int:
        return (self.usage.calls - self.start) if self.usage else 0

"""Every fallback a measurement took, named so a run can count them: read from the answers, never guessed.

A judge whose reply was cut at its cap, made up a quote or held no JSON; a
grade that could not be read; a target answer that stopped at its cap and was
graded as it stood, or that was given the skill's files inline because the model
makes no tool calls; a reviewer who gave nothing usable. Each is one string, the
same for the same kind, so ``collections.Counter`` over them is the count that
run.json, results.tsv and the report show.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from judges.structure_judge import Verdict

if TYPE_CHECKING:
    from judges.performance import Measurement, PairResult
    from judges.review import Review

TARGET_CUT = "target answer stopped at its cap (graded as it stood)"
DESIGN_OFFLINE = "test prompts designed offline"
TARGET_INLINE = "target given the skill's files inline (it makes no tool calls)"


def of_verdicts(verdicts: Iterable[Verdict]) -> list[str]:
    return [f"judge unscored: {v.unscored_kind or 'no reply'}" for v in verdicts if v.unscored_reason is not None]


def of_pairs(pairs: Iterable[PairResult]) -> list[str]:
    found: list[str] = []
    for pair in pairs:
        if pair.unscored_reason is not None and pair.unscored_kind is not None:
            found.append(f"grader unscored: {pair.unscored_kind}")
        found += [TARGET_CUT] * pair.answers_cut
        found += [TARGET_INLINE] * (pair.access == "inline")
    return found


def of_measurement(measurement: Measurement | None) -> list[str]:
    if measurement is None:
        return []
    if not measurement.pairs and measurement.dim8.score is None and measurement.eval_mode == "dry_run":
        return ["grader unscored: dry run"]
    return of_pairs(measurement.pairs)


def of_review(review: Review | None) -> list[str]:
    return [f"reviewer gave nothing usable: {role}" for role in review.failed_roles] if review else []


def void_replies(verdicts: Iterable[Verdict], pairs: Iterable[PairResult], review: Review | None = None) -> list[dict[str, str]]:
    """Each reply that gave no score, with who gave it, its kind, why and the reply as received (nothing when the
    call itself failed: there is no reply to keep)."""
    found = [{"who": v.judge, "kind": str(v.unscored_kind), "reason": v.unscored_reason or "", "raw": v.raw}
             for v in verdicts if v.unscored_reason is not None and v.raw]
    found += [{"who": f"grader, prompt {p.prompt_id}", "kind": str(p.unscored_kind), "reason": p.unscored_reason or "",
               "raw": p.raw} for p in pairs if p.unscored_reason is not None and p.raw]
    found += [{"who": f"reviewer: {role}", "kind": "unparseable or truncated", "reason": "no usable findings", "raw": raw}
              for role, raw in (review.void if review else ())]
    return found


def design(how: str) -> list[str]:
    """Phase 0.5's own account of how the prompts were made ('llm', or 'offline fallback: why')."""
    return [f"{DESIGN_OFFLINE}: {how.split(':', 1)[1].strip()}"] if how.startswith("offline fallback") else []

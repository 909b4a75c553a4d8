"""The author's assertions, graded one by one: pass or fail, with a quote of the answer as evidence.

When a test prompt carries assertions (the skill's ``evals/evals.json``), RUBRIC.md's dim8 takes Accuracy as 10 ×
the share of them that pass, and grades the baseline on the same assertions. The grader says, per assertion and per
answer, "pass", "fail" or "unsure"; a pass must quote the answer, and a quote that is not in it leaves the assertion
unscored, as does "unsure" or an assertion the grader skipped — unscored, never failed (``AssertionGrade``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from judges.rubric_text import RATIONALE_CHARS

ASSERTIONS_SYSTEM = """
The request also lists numbered assertions: the skill author's checks. For each assertion and each answer say "pass",
"fail" or "unsure", with evidence: for a pass, a short exact quote of that answer that shows it holds; for a fail,
what is missing or wrong. Add to the JSON object: "assertions": [{"n": 1, "with_skill": "pass", "with_evidence": "...",
"baseline": "fail", "baseline_evidence": "..."}], one entry per assertion."""

_VERDICT = {"type": "string", "enum": ["pass", "fail", "unsure"]}
_EVIDENCE = {"type": "string", "maxLength": RATIONALE_CHARS}
ASSERTIONS_SCHEMA = {"type": "array", "items": {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 1}, "with_skill": _VERDICT, "with_evidence": _EVIDENCE,
                   "baseline": _VERDICT, "baseline_evidence": _EVIDENCE},
    "required": ["n", "with_skill", "with_evidence", "baseline", "baseline_evidence"],
}}


@dataclass(frozen=True)
class AssertionGrade:
    """One assertion on both answers: True pass, False fail, None unscored (``why_*`` says why)."""

    text: str
    with_skill: bool | None
    with_evidence: str = ""
    baseline: bool | None = None
    baseline_evidence: str = ""
    why_with: str = ""
    why_baseline: str = ""


def listed(assertions: tuple[str, ...]) -> str:
    """The assertions as the grader reads them, numbered from 1."""
    return "\n".join(f"{n}. {text}" for n, text in enumerate(assertions, 1))


def parse_assertions(reply: dict[str, Any], assertions: tuple[str, ...], with_answer: str,
                     baseline_answer: str) -> tuple[AssertionGrade, ...]:
    """Each assertion's grade from the grader's JSON (the last entry for a number wins, as the last verdict does)."""
    entries = reply.get("assertions")
    by_number: dict[int, dict] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("n"), int) and not isinstance(entry.get("n"), bool):
            by_number[entry["n"]] = entry
    grades = []
    for n, text in enumerate(assertions, 1):
        entry = by_number.get(n)
        if entry is None:
            grades.append(AssertionGrade(text, None, why_with="the grader did not grade it",
                                         why_baseline="the grader did not grade it"))
            continue
        passed_with, why_with = _side(entry.get("with_skill"), entry.get("with_evidence"), with_answer)
        passed_base, why_base = _side(entry.get("baseline"), entry.get("baseline_evidence"), baseline_answer)
        grades.append(AssertionGrade(text, passed_with, str(entry.get("with_evidence") or ""), passed_base,
                                     str(entry.get("baseline_evidence") or ""), why_with, why_base))
    return tuple(grades)


def _side(verdict: Any, evidence: Any, answer: str) -> tuple[bool | None, str]:
    if verdict == "fail":
        return False, ""
    if verdict != "pass":
        return None, "the grader could not say" if verdict == "unsure" else f"no verdict ({verdict!r})"
    if not isinstance(evidence, str) or not _folded(evidence).strip(" .\"'…"):
        return None, "a pass without a quote of the answer"
    if _folded(evidence).strip(" .\"'…") not in _folded(answer):
        return None, "its quote is not in the answer"
    return True, ""


def _folded(text: str) -> str:
    return re.sub(r"\s+", " ", text).casefold()


def pass_share(grades: tuple[AssertionGrade, ...], baseline: bool = False) -> float | None:
    """10 × the share of decided assertions that pass on one side (None when none was decided)."""
    decided = [g.baseline if baseline else g.with_skill for g in grades]
    known = [d for d in decided if d is not None]
    return round(10 * sum(known) / len(known), 2) if known else None

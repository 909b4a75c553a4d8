"""Frozen result objects of the rubric, and the weights they are read against.

Everything a score says about itself travels with it: the weight, how it was
obtained, and the reasons a person needs to act on it. Nothing here does IO.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from scoring.formula import explain_total, total_of
from scoring.formula import points_covered as points_of

Source = Literal["rules", "formula", "llm", "heuristic", "unscored"]

# RUBRIC.md "Weights and total". Order matters: it is the order dims are shown in.
WEIGHTS: dict[str, int] = {
    "dim1": 7,
    "dim2": 11,
    "dim3": 11,
    "dim4": 6,
    "dim5": 18,
    "dim6": 4,
    "dim7": 12,
    "dim8": 20,
    "dim9": 6,
    "dim10": 5,
}
DIM_NAMES: dict[str, str] = {
    "dim1": "Frontmatter quality",
    "dim2": "Workflow clarity",
    "dim3": "Failure-mode encoding",
    "dim4": "Checkpoint design",
    "dim5": "Executable specificity",
    "dim6": "Resource integration",
    "dim7": "Overall architecture",
    "dim8": "Measured performance",
    "dim9": "Counter-examples and blacklist",
    "dim10": "Review gate",
}
DETERMINISTIC_DIMS: tuple[str, ...] = ("dim1", "dim4", "dim7", "dim9")
LLM_DIMS: tuple[str, ...] = ("dim2", "dim3", "dim5", "dim6", "dim8")


@dataclass(frozen=True)
class Check:
    """One named pass/fail check (dim1 reports each of its seven this way)."""

    name: str
    passed: bool
    reason: str


@dataclass(frozen=True)
class DimensionScore:
    """A dimension's score in [0, 10], or None when it could not be computed.

    ``score is None`` always goes with ``source == "unscored"`` and a reason: a
    score that could not be computed is never silently a zero.
    """

    dim: str
    score: float | None
    source: Source
    reasons: tuple[str, ...]
    checks: tuple[Check, ...] = ()
    details: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.dim not in WEIGHTS:
            raise ValueError(f"unknown dimension {self.dim!r}; expected one of {', '.join(WEIGHTS)}")
        if (self.score is None) != (self.source == "unscored"):
            raise ValueError(f"{self.dim}: score {self.score!r} does not fit source {self.source!r}")
        if self.score is not None and not 0 <= self.score <= 10:
            raise ValueError(f"{self.dim}: score {self.score} is outside [0, 10]")

    @property
    def weight(self) -> int:
        return WEIGHTS[self.dim]

    @property
    def name(self) -> str:
        return DIM_NAMES[self.dim]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "score": self.score,
            "weight": self.weight,
            "source": self.source,
            "reasons": list(self.reasons),
        }
        if self.checks:
            out["checks"] = {c.name: c.passed for c in self.checks}
            out["check_reasons"] = {c.name: c.reason for c in self.checks}
        if self.details:
            out["details"] = dict(self.details)
        return out


def unscored(dim: str, reason: str, raw: tuple[str, ...] = ()) -> DimensionScore:
    """A dimension that could not be scored, with why and, when a model answered, its replies as received."""
    details: tuple[tuple[str, Any], ...] = (("raw", raw),) if raw else ()
    return DimensionScore(dim=dim, score=None, source="unscored", reasons=(reason,), details=details)


ViolationKind = Literal[
    "merge_marker",
    "frontmatter_invalid",
    "missing_reference",
    "escaping_reference",
    "smuggled_text",
    "hidden_instruction",
    "bidi_control",
    "zero_width",
    "invisible_character",
    "secret",
    "field_invalid",
    "unknown_key",
    "body_too_long",
    "reserved_name",
    "duplicate_key",
    "deep_reference",
    "duplicate_name",
    "similar_description",
    "name_convention",
    "listing_cut",
    "listing_dropped",
]


@dataclass(frozen=True)
class Violation:
    """A validation finding that does not change the score (RUBRIC.md "Validation").

    ``line`` is 1-based in the file as decoded (CRLF and CR count as one line
    break, so it matches what an editor shows), or None when no line applies.
    """

    kind: ViolationKind
    line: int | None
    message: str
    related: tuple[str, int | None] | None = None  # the other place a finding across skills is about (path, line)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "line": self.line, "message": self.message}
        if self.related is not None:
            out["related"] = {"path": self.related[0], "line": self.related[1]}
        return out


@dataclass(frozen=True)
class Reference:
    """A path the skill points at, and what the reachability scan found."""

    target: str
    line: int
    status: Literal["exists", "missing", "escapes"]


@dataclass(frozen=True)
class SkillScore:
    skill: str
    dims: tuple[DimensionScore, ...]
    violations: tuple[Violation, ...]
    references: tuple[Reference, ...] = ()
    warnings: tuple[str, ...] = ()
    total: float = field(init=False)
    points_covered: int = field(init=False)
    deterministic_subtotal: float = field(init=False)

    def __post_init__(self) -> None:
        by_dim = {d.dim: d for d in self.dims}
        if sorted(by_dim) != sorted(WEIGHTS):
            raise ValueError(f"a SkillScore needs exactly the ten dimensions, got {sorted(by_dim)}")
        object.__setattr__(self, "dims", tuple(by_dim[d] for d in WEIGHTS))
        object.__setattr__(self, "total", total_of(self.dims))
        object.__setattr__(self, "points_covered", points_of(self.dims))
        det = [by_dim[d] for d in DETERMINISTIC_DIMS]
        object.__setattr__(self, "deterministic_subtotal", total_of(det))

    def with_violations(self, violations: tuple[Violation, ...]) -> SkillScore:
        """The same score with these findings (findings never change a score: nothing is recomputed)."""
        new = copy.copy(self)
        object.__setattr__(new, "violations", violations)
        return new

    def dim(self, dim: str) -> DimensionScore:
        for d in self.dims:
            if d.dim == dim:
                return d
        raise KeyError(dim)

    @property
    def llm_scored(self) -> bool:
        """True when any LLM-judged dimension carries a score (then gates use the total)."""
        return any(self.dim(d).score is not None for d in LLM_DIMS)

    @property
    def explained(self) -> str:
        """The total with where its points come from (rules, formula, model, offline estimate) and what is unscored."""
        return explain_total(self.dims)

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "total": self.total,
            "points_covered": self.points_covered,
            "explained": self.explained,
            "deterministic_subtotal": self.deterministic_subtotal,
            "dims": {d.dim: d.to_dict() for d in self.dims},
            "violations": [v.to_dict() for v in self.violations],
            "references": [
                {"target": r.target, "line": r.line, "status": r.status} for r in self.references
            ],
            "warnings": list(self.warnings),
        }

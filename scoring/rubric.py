"""Score one skill: bytes (or text) in, a frozen SkillScore out.

This is the only entry point callers need. LLM-judged dimensions arrive as
already-computed DimensionScores (from ``judges/``); without them they are
``unscored`` and the total says how many of the 100 points it covers.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from enum import StrEnum

from scoring.document import SkillDocument, decode, normalize_text, parse
from scoring.formula import dim10_score
from scoring.frontmatter_rules import score_dim1
from scoring.hidden_text import hidden_text_violations
from scoring.model import LLM_DIMS, DimensionScore, SkillScore, unscored
from scoring.spec_rules import spec_violations
from scoring.structure_rules import score_dim4, score_dim7, score_dim9
from scoring.validation import (
    frontmatter_violations,
    merge_markers,
    reference_violations,
    scan_references,
)


class Mode(StrEnum):
    """How a skill is scored: quick (one judge, dry-run dim8, no dim10) or full (two judges, test prompts run)."""

    QUICK = "quick"
    FULL = "full"


# Frozen, so these serve every score an LLM judge did not see, rather than five new objects per file.
_NO_JUDGE = {d: unscored(d, "LLM-judged dimension; no judge ran") for d in LLM_DIMS}


def review_dim10(mode: Mode, findings: tuple[int, int] | None) -> DimensionScore:
    """dim10 from the review gate's open (P0, P1) counts; 10 when no review applies."""
    if mode == "quick":
        return DimensionScore("dim10", 10, "formula", ("quick mode: no review gate, dim10 = 10",))
    if findings is None:
        return DimensionScore("dim10", 10, "formula", ("no review ran: dim10 = 10 by default",))
    p0, p1 = findings
    score = dim10_score(p0, p1)
    return DimensionScore("dim10", score, "formula", (f"review found {p0} open P0 and {p1} open P1",),
                          details=(("p0", p0), ("p1", p1)))


def score_document(
    doc: SkillDocument,
    skill_name: str,
    files: AbstractSet[str],
    *,
    mode: Mode = Mode.QUICK,
    llm_dims: Mapping[str, DimensionScore] | None = None,
    review_findings: tuple[int, int] | None = None,
    dim10: DimensionScore | None = None,
    warnings: tuple[str, ...] = (),
) -> SkillScore:
    llm_dims = dict(llm_dims or {})
    unknown = set(llm_dims) - set(LLM_DIMS)
    if unknown:
        raise ValueError(f"llm_dims may only hold {', '.join(LLM_DIMS)}; got {', '.join(sorted(unknown))}")
    refs = scan_references(doc, files)
    dims = [
        score_dim1(doc, skill_name),
        score_dim4(doc),
        score_dim7(doc),
        score_dim9(doc),
        dim10 if dim10 is not None else review_dim10(mode, review_findings),
    ]
    dims += [llm_dims.get(d) or _NO_JUDGE[d] for d in LLM_DIMS]
    violations = (merge_markers(doc.text) + frontmatter_violations(doc) + reference_violations(refs)
                  + hidden_text_violations(doc.text, doc.html_comments, doc.comment_definitions) + spec_violations(doc))
    violations.sort(key=lambda v: (v.line or 0, v.kind))
    return SkillScore(skill_name, tuple(dims), tuple(violations), tuple(refs), warnings)


def score_skill(
    data: bytes | str,
    skill_name: str,
    files: AbstractSet[str] = frozenset(),
    **options,
) -> SkillScore:
    """Decode (raising UnreadableSkill), parse once, and score.

    ``skill_name`` is the skill directory's name; ``files`` the POSIX paths of
    the files under that directory, relative to it, for the reference scan.
    """
    text = normalize_text(data) if isinstance(data, str) else decode(data)
    return score_document(parse(text), skill_name, files, **options)

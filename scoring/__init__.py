"""Pure rubric logic: text in, frozen dataclasses out. No file, git or network IO."""

from scoring.document import UnreadableSkill
from scoring.formula import is_improvement, round1
from scoring.model import DETERMINISTIC_DIMS, LLM_DIMS, WEIGHTS, DimensionScore, SkillScore, Violation
from scoring.rubric import score_document, score_skill

__all__ = [
    "DETERMINISTIC_DIMS",
    "LLM_DIMS",
    "WEIGHTS",
    "DimensionScore",
    "SkillScore",
    "UnreadableSkill",
    "Violation",
    "is_improvement",
    "round1",
    "score_document",
    "score_skill",
]

"""Deterministic stand-ins for the LLM judges, used when no model is configured.

They say plainly what they are: every score is ``source="heuristic"`` and
dim8 is ``eval_mode="fallback_dry"`` (no model ran, no independent judge), so
its Accuracy counts × 0.3 and the whole × 0.5. The rules, with their inputs:

dim2 workflow: numbered steps (ordered-list items, "Step N"/"第N步" headings)
  → 2 + min(steps, 5); +2 when at least half the steps name an input or output
  ("input", "output", "→", "->", "输入", "输出", "产出"); +1 for a workflow chapter.
dim3 failure modes: if-then recovery lines ("if … fail", "fallback", "retry",
  "如果…失败", "兜底", "回退", "降级") → 2 + 2 per line (up to +6); +2 for a
  three-column "trigger / first fix / still failing" table.
dim5 specificity: concrete markers (code spans and fences, numbers with units,
  file paths, flags) per 1,000 characters raise it; soft words ("consider",
  "as appropriate", "if needed", "建议", "可以考虑", "根据情况", "适当") lower it.
dim6 resources: the reachability scan. No references → 8; otherwise
  10 × existing / all, at least 1; −3 when wording or install paths are bound
  to one runtime (the design's P0 runtime-binding gate).
"""

from __future__ import annotations

import re

from scoring.dim8 import SubScores, dim8_score
from scoring.document import SkillDocument
from scoring.model import DimensionScore, Reference
from scoring.structure_rules import chapter_groups

HEURISTIC_NOTE = "offline heuristic (no model configured; set OPENAI_API_KEY or OPENAI_BASE_URL for LLM judges)"
_STEP_HEADING = re.compile(r"^(step|phase)\s*\d+|^第[一二三四五六七八九十\d]+步", re.IGNORECASE)
_ORDERED_ITEM = re.compile(r"^\s{0,3}\d+[.)]\s+\S")
_IO_WORDS = re.compile(r"\binput\b|\boutput\b|→|->|输入|输出|产出", re.IGNORECASE)
_RECOVERY = re.compile(
    r"\bif\b.{0,60}\b(fail|fails|failed|error|missing|empty|invalid)\b|\bfallback\b|\bretry\b|\botherwise\b"
    r"|如果.{0,30}(失败|出错|为空|不存在|无法)|兜底|回退|降级|否则",
    re.IGNORECASE,
)
_FALLBACK_TABLE = re.compile(r"\|[^|\n]*(trigger|触发)[^|\n]*\|[^|\n]*(fix|修复)[^|\n]*\|[^|\n]*(fail|兜底)", re.IGNORECASE)
_CONCRETE = re.compile(
    r"`[^`\n]+`|\b\d+(\.\d+)?\s?(ms|s|px|kb|mb|gb|%|rows|chars|tokens|字|秒|行)\b"
    r"|--[a-z][\w-]+|\b[\w-]+\.(md|py|sh|json|yaml|yml|sql|ts|js)\b",
    re.IGNORECASE,
)
_SOFT = re.compile(
    r"\bconsider\b|\bas appropriate\b|\bif needed\b|\bmaybe\b|\bpossibly\b|\bshould probably\b"
    r"|建议|可以考虑|根据情况|适当|尽量",
    re.IGNORECASE,
)
RUNTIME_BOUND = re.compile(r"\bin Claude Code\b|~/\.claude/skills/[\w./-]*|在 ?Claude Code ?(里|中)", re.IGNORECASE)
_DANGER = re.compile(r"rm -rf|drop table|drop database|force[- ]push|--force\b|删除所有|格式化磁盘", re.IGNORECASE)


def runtime_bound(doc: SkillDocument, skill_name: str) -> bool:
    """Wording or install paths tied to one runtime (the design's P0 gate), unless the skill's name binds it there
    or it names the other runtimes too."""
    if re.search(r"claude", skill_name, re.IGNORECASE):
        return False
    mentions_other = re.search(r"\bcodex\b|\bcursor\b", doc.body, re.IGNORECASE)
    return bool(RUNTIME_BOUND.search(doc.body)) and not mentions_other


def _clamp(value: float) -> float:
    return float(max(1, min(10, round(value))))


def heuristic_dim2(doc: SkillDocument) -> DimensionScore:
    lines = doc.body.split("\n")
    steps = [line for line in lines if _ORDERED_ITEM.match(line)] + [h.text for h in doc.headings if _STEP_HEADING.match(h.text)]
    with_io = sum(bool(_IO_WORDS.search(s)) for s in steps)
    score = 2 + min(len(steps), 5) + (2 if steps and with_io * 2 >= len(steps) else 0)
    score += 1 if "workflow" in chapter_groups(doc.headings) else 0
    reasons = (f"{len(steps)} numbered step(s), {with_io} naming an input or output", HEURISTIC_NOTE)
    return DimensionScore("dim2", _clamp(score), "heuristic", reasons)


def heuristic_dim3(doc: SkillDocument) -> DimensionScore:
    recovery = {line.strip() for line in doc.body.split("\n") if _RECOVERY.search(line)}
    table = bool(_FALLBACK_TABLE.search(doc.body))
    score = 2 + min(2 * len(recovery), 6) + (2 if table else 0)
    reasons = (f"{len(recovery)} if-then/fallback line(s); three-column fallback table: {'yes' if table else 'no'}", HEURISTIC_NOTE)
    return DimensionScore("dim3", _clamp(score), "heuristic", reasons)


def heuristic_dim5(doc: SkillDocument) -> DimensionScore:
    size = max(1, len(doc.body))
    concrete = len(_CONCRETE.findall(doc.body)) * 1000 / size
    soft = len(_SOFT.findall(doc.body)) * 1000 / size
    score = 3 + min(concrete, 6) - min(3 * soft, 4)
    reasons = (f"{concrete:.1f} concrete marker(s) and {soft:.1f} soft word(s) per 1,000 characters", HEURISTIC_NOTE)
    return DimensionScore("dim5", _clamp(score), "heuristic", reasons)


def heuristic_dim6(refs: tuple[Reference, ...], runtime_bound: bool = False) -> DimensionScore:
    penalty = 3 if runtime_bound else 0
    note = ("wording or install paths bound to one runtime (design P0): −3",) if runtime_bound else ()
    if not refs:
        return DimensionScore(
            "dim6", _clamp(8 - penalty), "heuristic", ("no referenced files (nothing to integrate)", *note, HEURISTIC_NOTE)
        )
    existing = sum(r.status == "exists" for r in refs)
    bad = [f"{r.target} ({r.status})" for r in refs if r.status != "exists"]
    reasons = (f"{existing}/{len(refs)} references reachable" + (f"; not: {', '.join(bad[:5])}" if bad else ""), *note, HEURISTIC_NOTE)
    return DimensionScore("dim6", _clamp(10 * existing / len(refs) - penalty), "heuristic", reasons)


def heuristic_structure(doc: SkillDocument, refs: tuple[Reference, ...], runtime_bound: bool = False) -> dict[str, DimensionScore]:
    return {"dim2": heuristic_dim2(doc), "dim3": heuristic_dim3(doc), "dim5": heuristic_dim5(doc),
            "dim6": heuristic_dim6(refs, runtime_bound)}


def heuristic_dim8(doc: SkillDocument, structure: dict[str, DimensionScore], dim1: float) -> DimensionScore:
    """No model ran: estimate from the structure, labelled fallback_dry (× 0.3 Accuracy, × 0.5 overall)."""
    parts = [structure[d].score or 0 for d in ("dim2", "dim3", "dim5")]
    accuracy = sum(parts) / len(parts)
    danger = _DANGER.search(doc.body)
    stop = re.search(r"\bSTOP\b|🛑|⛔", doc.body)
    safety = 4.0 if danger and not stop else 10.0
    compliance = 8.0 + (1.0 if dim1 == 10 else 0.0) + (1.0 if doc.headings else 0.0)
    sub = SubScores(round(accuracy, 2), safety, compliance, None, False)
    score = dim8_score(sub, "fallback_dry", 0)
    note = f"dangerous step without a STOP: '{danger.group(0)}'" if danger and not stop else "no dangerous step found"
    return DimensionScore("dim8", score.score, "heuristic", (*score.reasons, note, HEURISTIC_NOTE), details=score.details)

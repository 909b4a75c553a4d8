"""LLM judges for dim2, dim3, dim5 and dim6: build prompt → one call → parse.

Each judge is a separate call with no shared context. Its answer is void when
any quote is not in the skill (the design's anti-hallucination rule): it is
asked once more, then its dimensions are ``unscored`` with the reason and the
raw reply kept — never a zero. Two judges make a panel: the dimension score is
their median (the mean of two), a gap over 3 points is a ``disagreement``, and
either judge flagging a Safety red line is a veto.
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from judges.llm import SKILL_MARKERS, LLMClient, call_markers
from judges.replies import Unscored, fold, last_json_object, quote_in_text, substantive
from judges.rubric_text import SAFETY_RED_LINE, STRUCTURE_DIMS, STRUCTURE_SCHEMA, STRUCTURE_SYSTEM
from judges.settings import Role
from judges.usage import LLMError
from scoring.model import DimensionScore, Reference, unscored
from scoring.skill_view import SKILL_FILE, SkillView

DISAGREEMENT_GAP = 3
QUOTE_NOT_FOUND = "quote not found"


@dataclass(frozen=True)
class Verdict:
    """One judge's answer (or why it has none). ``raw`` is always the reply as received."""

    judge: str
    model: str
    scores: dict[str, float] = field(default_factory=dict)
    rationales: dict[str, str] = field(default_factory=dict)
    quotes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    safety_red_line: bool = False
    safety_reason: str = ""
    unscored_reason: str | None = None
    raw: str = ""
    attempts: int = 0
    unscored_kind: Unscored | None = None  # what kind of fallback an unscored verdict is (counted per run)


def reference_evidence(refs: tuple[Reference, ...]) -> str:
    if not refs:
        return "Reachability scan: the skill references no files."
    lines = [f"- {r.target} (line {r.line}): {r.status}" for r in refs]
    return "Reachability scan of the skill's references (existing / missing / escaping):\n" + "\n".join(lines)


FILE_MARKERS = ('<file-{nonce} path="…"> … </file-{nonce}>',)


def shown_files(view: SkillView, nonce: str) -> str:
    """The files given with SKILL.md, each whole in its own block, and those that were not, named."""
    blocks = [f'<file-{nonce} path="{path}">\n{text.rstrip(chr(10))}\n</file-{nonce}>\n\n' for path, text in view.files]
    unseen = "".join(f"- {path}: {why}\n" for path, why in view.left_out)
    return "".join(blocks) + (f"Files of the skill not shown to you (named only):\n{unseen}\n" if unseen else "")


def build_messages(view: SkillView | str, refs: tuple[Reference, ...], nonce: str) -> list[dict[str, str]]:
    """The rubric and instructions in the system message; the skill — SKILL.md, then the files it references —
    fenced as data, in the user message."""
    view = as_view(view)
    rubric = "\n".join(f"- {dim}: {text}" for dim, text in STRUCTURE_DIMS.items())
    system = STRUCTURE_SYSTEM.format(rubric=rubric, safety=SAFETY_RED_LINE) + call_markers(nonce, *SKILL_MARKERS,
                                                                                         *FILE_MARKERS)
    user = (f"{reference_evidence(refs)}\n\n<skill-{nonce}>\n{view.skill}\n</skill-{nonce}>\n\n"
            f"{shown_files(view, nonce)}Score the skill above. Reply with the JSON object only.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def as_view(skill: SkillView | str) -> SkillView:
    """A SKILL.md text alone is a view of a skill with no other file."""
    return skill if isinstance(skill, SkillView) else SkillView(skill)


def _quote_source(quote: str, texts: dict[str, str]) -> tuple[str, str]:
    """(the file a quote names, the quote's text): ``path: text`` for a file other than SKILL.md."""
    path, sep, rest = quote.partition(": ")
    if sep and path in texts and path != SKILL_FILE:
        return path, rest
    return SKILL_FILE, quote


def parse_verdict(text: str, skill: SkillView | str) -> tuple[dict[str, Any] | None, str | None]:
    """(parsed answer, None) or (None, why it is void); ``void_kind`` names the kind of a reason. A quote must be in
    the file it names (SKILL.md unless it starts with another shown file's path)."""
    answer = last_json_object(text)
    if answer is None:
        return None, "reply holds no JSON object"
    dims = answer.get("dims")
    if not isinstance(dims, dict):
        return None, "reply has no 'dims' object"
    texts = as_view(skill).texts()
    folded = {path: fold(body) for path, body in texts.items()}
    parsed: dict[str, Any] = {"scores": {}, "rationales": {}, "quotes": {}}
    for dim in STRUCTURE_DIMS:
        entry = dims.get(dim)
        if not isinstance(entry, dict):
            return None, f"reply has no entry for {dim}"
        score = entry.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 1 <= score <= 10:
            return None, f"{dim} score {score!r} is not a number from 1 to 10"
        quotes = entry.get("quotes")
        if not isinstance(quotes, list) or not 1 <= len(quotes) <= 3 or not all(isinstance(q, str) for q in quotes):
            return None, f"{dim} needs 1 to 3 quotes from the skill"
        for quote in quotes:
            path, said = _quote_source(quote, texts)
            if not substantive(said):
                return None, f"{dim} {QUOTE_NOT_FOUND}: {quote[:80]!r} is too short to be evidence"
            if not quote_in_text(said, folded[path]):
                return None, (f"{dim} {QUOTE_NOT_FOUND} in {'the skill' if path == SKILL_FILE else path} (fabricated "
                              f"evidence voids the answer): {quote[:80]!r}")
        parsed["scores"][dim] = round(float(score), 2)  # as given: rounding 6.7 to 7 would add noise of its own
        parsed["rationales"][dim] = str(entry.get("rationale", ""))
        parsed["quotes"][dim] = tuple(quotes)
    parsed["safety_red_line"] = answer.get("safety_red_line") is True
    parsed["safety_reason"] = str(answer.get("safety_reason", ""))
    return parsed, None


def void_kind(problem: str) -> Unscored:
    """A void answer's kind: evidence made up, or a reply that does not hold the answer."""
    return Unscored.FABRICATED if problem.startswith(QUOTE_NOT_FOUND, problem.find(" ") + 1) else Unscored.UNPARSEABLE


MAX_QUOTABLE = 200  # lines a schema offers as quotes: enough for any skill under the spec's 500 lines of body
MAX_FILE_QUOTABLE = 100  # and lines of the files shown with it, path-prefixed
QUOTABLE_CHARS = 120


def quotable(skill_text: str) -> list[str]:
    """The skill's lines that can serve as evidence, as the quotes' enum: a server that enforces the schema with a
    grammar (llama.cpp, vLLM, Ollama) then cannot emit a quote that is not in the skill, so a small model that would
    copy the prompt's ``"..."`` picks real text instead. The quote check in code still applies to every reply."""
    lines: list[str] = []
    for line in skill_text.splitlines():
        text = line.strip()[:QUOTABLE_CHARS].strip()
        if substantive(text) and text not in lines and _plain(text):
            lines.append(text)
    return lines[:MAX_QUOTABLE]


def _plain(text: str) -> bool:
    """No quote, backslash or control character: llama-cpp-python escapes those wrongly in a grammar's literals, and
    a grammar it cannot parse brings its whole server down (seen with 0.3.36)."""
    return text.isprintable() and '"' not in text and "\\" not in text


def structure_schema(skill: SkillView | str) -> dict[str, Any]:
    """STRUCTURE_SCHEMA with each quote one of the skill's own lines — SKILL.md's, then the shown files' prefixed
    with their path (when there are any)."""
    view = as_view(skill)
    lines = quotable(view.skill)
    lines += [f"{path}: {line}" for path, text in view.files for line in quotable(text)][:MAX_FILE_QUOTABLE]
    if not lines:
        return STRUCTURE_SCHEMA
    schema = copy.deepcopy(STRUCTURE_SCHEMA)
    for entry in schema["properties"]["dims"]["properties"].values():
        entry["properties"]["quotes"]["items"] = {"type": "string", "enum": lines}
    return schema


def judge_once(client: LLMClient, model: str, judge: str, skill: SkillView | str, refs: tuple[Reference, ...]) -> Verdict:
    """One independent judge of ``skill`` (SKILL.md and the files shown with it): up to two attempts, each a fresh
    call with a fresh nonce.

    A reply cut at its cap is not asked again: at temperature 0 the same model rambles the same way."""
    problem = ""
    raw = ""
    for attempt in (1, 2):
        nonce = secrets.token_hex(8)
        try:
            reply = client.chat(f"judge:{judge}", model, build_messages(skill, refs, nonce), role=Role.JUDGE,
                                schema=structure_schema(skill))
        except LLMError as err:
            return Verdict(judge, model, unscored_reason=f"{judge}: no reply ({err.kind}): {err}", raw=raw, attempts=attempt,
                           unscored_kind=Unscored.NO_REPLY)
        raw = reply.text or ""
        if reply.truncated:
            return Verdict(judge, model, unscored_reason=f"{judge}: {reply.cut_note()}", raw=raw, attempts=attempt,
                           unscored_kind=Unscored.TRUNCATED)
        parsed, found = parse_verdict(raw, skill)
        if parsed is not None:
            return Verdict(judge, model, parsed["scores"], parsed["rationales"], parsed["quotes"],
                           parsed["safety_red_line"], parsed["safety_reason"], None, raw, attempt)
        problem = found or "unreadable reply"
    return Verdict(judge, model, unscored_reason=f"{judge}: {problem} (asked twice)", raw=raw, attempts=2,
                   unscored_kind=void_kind(problem))


@dataclass(frozen=True)
class Panel:
    dims: dict[str, DimensionScore]
    verdicts: tuple[Verdict, ...]
    disagreements: tuple[str, ...]
    safety_veto: bool
    judge_count: int
    warnings: tuple[str, ...] = ()
    unseen: str = ""  # the skill's files the judges were not shown, and why (SkillView.unseen)


def combine(verdicts: list[Verdict], warnings: tuple[str, ...] = (), unseen: str = "") -> Panel:
    """The panel's score per dimension from its judges' verdicts; ``unseen``: what of the skill they were not shown,
    said in every dimension's reasons and kept for the row."""
    if unseen:
        warnings = (*warnings, f"not shown to the judges: {unseen}")
    scored = [v for v in verdicts if v.unscored_reason is None]
    dims: dict[str, DimensionScore] = {}
    disagreements = []
    for dim in STRUCTURE_DIMS:
        if not scored:
            dims[dim] = unscored(dim, "; ".join(v.unscored_reason or "" for v in verdicts) or "no judge ran",
                                 tuple(v.raw for v in verdicts if v.raw))
            continue
        values = [v.scores[dim] for v in scored]
        gap = max(values) - min(values)
        if gap > DISAGREEMENT_GAP:
            disagreements.append(dim)
        reasons = [f"{v.judge}: {v.scores[dim]} — {v.rationales[dim]}" for v in scored]
        if len(scored) < len(verdicts):
            reasons += [v.unscored_reason or "" for v in verdicts if v.unscored_reason]
        reasons += list(warnings)
        details = (("judges", [{"judge": v.judge, "model": v.model, "score": v.scores[dim], "quotes": list(v.quotes[dim])}
                               for v in scored]),
                   ("judge_count", len(scored)), ("disagreement", gap > DISAGREEMENT_GAP))
        dims[dim] = DimensionScore(dim, float(median(values)), "llm", tuple(reasons), details=details)
    veto = any(v.safety_red_line for v in scored)
    return Panel(dims, tuple(verdicts), tuple(disagreements), veto, len(scored), warnings, unseen)

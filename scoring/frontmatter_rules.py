"""dim1 — Frontmatter quality: seven named checks, 10 when all pass, else 0.

Readings where RUBRIC.md is silent:
- A description of only white space is empty.
- A quoted trigger phrase must hold a non-space character; the symmetric
  quotes (``"`` and backtick) are paired left to right, so the closing quote of
  one phrase never opens the next.
"""

from __future__ import annotations

import re

from scoring.document import SkillDocument
from scoring.model import Check, DimensionScore

NAME_PATTERN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
WHEN_CUE = re.compile(
    r"\buse (this( skill)? |it )?(when|whenever|for|if)\b|\bwhen (the )?(user|you)|trigger|invoke"
    r"|适用|当.{0,30}时|时使用|触发|用户(说|提到|要求|需要)|使用场景"
)  # matched against str.lower() of the description (RUBRIC.md: "case-insensitive"), never re.IGNORECASE:
# the two differ (re.IGNORECASE lets "ſ" match "s" and "K", the Kelvin sign, match "k")
TRIGGER_WORDS = re.compile(
    r"触发词|关键词|trigger word|trigger phrase|triggers include|triggers:|keyword|mentions|says|asks for|提到|说"
)
_SENTENCE_SPLIT = re.compile(r"[.。!！?？;；\n]")
PAIRED_QUOTES = (("“", "”"), ("「", "」"), ("『", "』"), ("‘", "’"))
SYMMETRIC_QUOTES = ('"', "`")
_FILLER_ENDINGS = ("等等", "等", "之类", "以及更多", "etc", "and more", "and so on", "and others")
_TRAILING_PUNCT = " .。!！;；,，"


def score_dim1(doc: SkillDocument, skill_name: str) -> DimensionScore:
    fm = doc.frontmatter
    checks = [_check_frontmatter(doc), _check_name(fm, skill_name)]
    description = fm.get("description") if fm is not None else None
    if isinstance(description, str) and description.strip() and len(description) <= 1024:
        checks.append(Check("description", True, f"{len(description)} characters"))
    else:
        checks.append(Check("description", False, _description_problem(fm, description)))
    if isinstance(description, str) and description.strip():
        checks += [
            _check_what(description),
            _check_when(description),
            _check_triggers(description),
            _check_no_filler(description),
        ]
    else:
        why = "no description to check"
        checks += [Check(n, False, why) for n in ("what", "when", "triggers", "no_filler")]
    failed = [c for c in checks if not c.passed]
    score = 0 if failed else 10
    reasons = tuple(f"{c.name}: {c.reason}" for c in failed) or ("all 7 frontmatter checks pass",)
    return DimensionScore("dim1", score, "rules", reasons, tuple(checks))


def _check_frontmatter(doc: SkillDocument) -> Check:
    if doc.frontmatter is not None:
        return Check("frontmatter", True, "YAML mapping")
    if not doc.frontmatter_present:
        return Check("frontmatter", False, "no frontmatter: the first line must be exactly '---'")
    assert doc.frontmatter_error is not None
    return Check("frontmatter", False, f"line {doc.frontmatter_error.line}: {doc.frontmatter_error.message}")


def _check_name(fm: dict | None, skill_name: str) -> Check:
    if fm is None:
        return Check("name", False, "no frontmatter mapping to read 'name' from")
    name = fm.get("name")
    if not isinstance(name, str):
        return Check("name", False, "'name' is missing or not a string")
    if not 1 <= len(name) <= 64 or not NAME_PATTERN.fullmatch(name):
        return Check("name", False, f"'{name[:80]}' is not 1-64 lowercase letters, digits and single hyphens")
    if name != skill_name:
        return Check("name", False, f"'{name}' differs from the directory name '{skill_name}'")
    return Check("name", True, f"'{name}' matches the directory")


def _description_problem(fm: dict | None, description: object) -> str:
    if fm is None:
        return "no frontmatter mapping to read 'description' from"
    if not isinstance(description, str):
        return "'description' is missing or not a string"
    if not description.strip():
        return "'description' is empty"
    return f"'description' is {len(description)} characters, over 1024"


def _check_what(description: str) -> Check:
    for sentence in _SENTENCE_SPLIT.split(description):
        if WHEN_CUE.search(sentence.lower()):
            continue
        if len("".join(sentence.split())) >= 8:
            return Check("what", True, f"says what it does: '{sentence.strip()[:60]}'")
    return Check("what", False, "no sentence says what the skill does (8+ characters without a when-cue)")


def _check_when(description: str) -> Check:
    cue = WHEN_CUE.search(description.lower())
    if cue:
        return Check("when", True, f"when-cue '{cue.group(0)}'")
    return Check("when", False, "no when-cue; add e.g. 'Use when the user …' / '当用户…时使用'")


def quoted_phrases(description: str) -> list[str]:
    phrases: list[str] = []
    for quote in SYMMETRIC_QUOTES:
        phrases += description.split(quote)[1:-1:2]  # odd pieces lie between a pair
    for opening, closing in PAIRED_QUOTES:
        phrases += re.findall(f"{opening}([^{opening}{closing}]*){closing}", description)
    return [p for p in phrases if 1 <= len(p) <= 40 and p.strip()]


def _check_triggers(description: str) -> Check:
    phrases = quoted_phrases(description)
    if phrases:
        return Check("triggers", True, f"quoted trigger phrase '{phrases[0]}'")
    word = TRIGGER_WORDS.search(description.lower())
    if word:
        return Check("triggers", True, f"trigger word '{word.group(0)}'")
    return Check("triggers", False, 'no trigger words; quote what the user says, e.g. "review my PR"')


def _check_no_filler(description: str) -> Check:
    d = description.rstrip()
    if d.endswith(("...", "…")):
        return Check("no_filler", False, "ends with an ellipsis; finish the sentence")
    core = d.rstrip(_TRAILING_PUNCT).lower()
    for filler in _FILLER_ENDINGS:
        if core.endswith(filler):
            return Check("no_filler", False, f"ends with filler '{filler}'; name the cases instead")
    return Check("no_filler", True, "ends on content")

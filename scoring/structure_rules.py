"""dim4 (checkpoints), dim7 (architecture) and dim9 (counter-examples), by rule.

Readings where RUBRIC.md is silent:
- A heading's parent is the nearest earlier heading of a lower level; headings
  with no such heading share the document root as parent.
- Paragraphs are every CommonMark paragraph, those inside list items and block
  quotes included (tight lists hide the tag in HTML, not the paragraph).
- "Letter, digit or CJK character" is Python's ``str.isalnum`` (CJK ideographs
  are letters there); everything else — emoji, punctuation, marks, space — goes.
"""

from __future__ import annotations

import bisect
import itertools
import re

from scoring.document import Heading, SkillDocument
from scoring.model import DimensionScore

STOP_LITERALS = ("⛔", "🛑")
STOP_WORD = "STOP"  # whole word, case-sensitive
CHECKPOINT_LITERALS = ("CHECKPOINT", "🔴")
COUNTER_EXAMPLE_CUES = ("不要", "禁止", "不允许", "反例", "不得", "切勿", "严禁", "anti-pattern")
COUNTER_EXAMPLE_WORDS = ("do not", "don't", "don’t", "never", "must not", "avoid", "forbidden")  # whole words only


def _is_word_char(text: str, index: int) -> bool:
    """Regex ``\\w`` at ``index`` (False outside the text)."""
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def find_cues(text: str, literals: tuple[str, ...] = (), words: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """(offset, cue) of every literal, and every whole-word occurrence of ``words``, sorted.

    ``str.find`` instead of one alternation regex: the regex engine tries the
    whole alternation at every position, which cost a third of the Markdown
    parse; ``find`` skips to candidates in C (benchmarks/score_throughput.py).
    """
    found = []
    for cue in literals + words:
        whole_word = cue in words
        at = text.find(cue)
        while at != -1:
            if not whole_word or not (_is_word_char(text, at - 1) or _is_word_char(text, at + len(cue))):
                found.append((at, cue))
            at = text.find(cue, at + 1)
    return sorted(found)


CHAPTER_GROUPS: dict[str, tuple[str, ...]] = {
    "philosophy": ("设计哲学", "设计理念", "核心理念", "原则", "理念", "概述", "简介", "philosophy", "principle", "overview", "about"),
    "workflow": (
        "执行流程",
        "工作流",
        "流程",
        "步骤",
        "使用方式",
        "用法",
        "workflow",
        "process",
        "steps",
        "instructions",
        "usage",
        "how to use",
        "procedure",
    ),
    "constraints": (
        "约束",
        "规则",
        "限制",
        "红线",
        "注意事项",
        "constraint",
        "rule",
        "guideline",
        "limitation",
        "requirement",
        "best practice",
    ),
    "evaluation": (
        "评估",
        "评分",
        "验收",
        "检查清单",
        "验证",
        "rubric",
        "checklist",
        "evaluation",
        "quality",
        "success criteria",
        "verification",
        "testing",
    ),
}
_CHAPTER_PATTERNS = {group: re.compile("|".join(map(re.escape, words))) for group, words in CHAPTER_GROUPS.items()}
LEADING_NUMBERING = re.compile(
    r"^(\d+(\.\d+)*[.)、:：]?|[一二三四五六七八九十百]+[、.．:：]|(step|phase)\s*\d+(\.\d+)?\s*[:：.)-]?"
    r"|第[一二三四五六七八九十百\d]+[步章节部分阶段]\s*[:：、]?)\s*"
)  # applied to lower-cased text (RUBRIC.md: case-insensitive is str.lower(), not re.IGNORECASE)
_MIN_DUPLICATE_PARAGRAPH = 40
_NOT_ALNUM = re.compile(r"[\W_]+")  # \w is exactly str.isalnum() plus "_" (a test checks every code point)
_NUMBERING_FIRST = frozenset("一二三四五六七八九十百第sp")  # what LEADING_NUMBERING can start with, besides \d
_ASCII_NOT_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())
_NOT_WORD = re.compile(r"\W+")  # _NOT_ALNUM where "_" is gone already


def score_dim4(doc: SkillDocument) -> DimensionScore:
    stop = find_cues(doc.body, STOP_LITERALS, (STOP_WORD,))
    if stop:
        offset, cue = stop[0]
        return DimensionScore("dim4", 10, "rules", (f"STOP-level checkpoint '{cue}' on line {_line(doc, offset)}",))
    checkpoint = find_cues(doc.body, CHECKPOINT_LITERALS)
    if checkpoint:
        offset, cue = checkpoint[0]
        return DimensionScore("dim4", 5, "rules", (
            f"only CHECKPOINT level ('{cue}' on line {_line(doc, offset)}); "
            "add a STOP / 🛑 before the irreversible step",
        ))
    return DimensionScore("dim4", 0, "rules", ("no checkpoint: add '🔴 CHECKPOINT' or '🛑 STOP' where the user must confirm",))


def _line(doc: SkillDocument, offset: int) -> int:
    return doc.body_first_line + doc.body.count("\n", 0, offset)


def normalize(text: str) -> str:
    """Lower-case, drop leading numbering, keep only letters, digits and CJK."""
    stripped = text.lower()
    if stripped[:1].isdecimal() or stripped[:1] in _NUMBERING_FIRST:  # skip the regex for the usual unnumbered text
        stripped = LEADING_NUMBERING.sub("", stripped, count=1)
    if stripped.isascii():  # most text: a byte table deletes in C, ~20x faster than the regex
        return stripped.encode("ascii").translate(None, _ASCII_NOT_ALNUM).decode("ascii")
    # Else the same table deletes the ASCII punctuation and spaces from the UTF-8 (no other character's bytes are
    # ASCII), and the regex, slower per character, only sees what is left: a third less time on typical prose.
    fewer = stripped.encode("utf-8", "surrogatepass").translate(None, _ASCII_NOT_ALNUM).decode("utf-8", "surrogatepass")
    return _NOT_WORD.sub("", fewer)


def heading_jumps(headings: tuple[Heading, ...]) -> list[tuple[Heading, Heading]]:
    return [(a, b) for a, b in itertools.pairwise(headings) if b.level > a.level + 1]


def chapter_groups(headings: tuple[Heading, ...]) -> dict[str, Heading]:
    """For each required chapter group found, the first heading that names it."""
    texts = [heading.text.lower() for heading in headings]
    starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
    joined = "\n".join(texts)  # no word holds a line break, so no match spans two headings
    found: dict[str, Heading] = {}
    for group, pattern in _CHAPTER_PATTERNS.items():
        match = pattern.search(joined)  # the leftmost match lies in the first heading naming the group
        if match:
            found[group] = headings[bisect.bisect_right(starts, match.start()) - 1]
    return found


def duplicate_headings(headings: tuple[Heading, ...]) -> list[Heading]:
    seen: set[tuple[int, int, str]] = set()
    stack: list[tuple[int, int]] = []  # (level, index) of the open ancestors
    duplicates: list[Heading] = []
    for index, heading in enumerate(headings):
        while stack and stack[-1][0] >= heading.level:
            stack.pop()
        parent = stack[-1][1] if stack else -1
        stack.append((heading.level, index))
        key = (parent, heading.level, normalize(heading.text))
        if not key[2]:
            continue
        if key in seen:
            duplicates.append(heading)
        seen.add(key)
    return duplicates


def duplicate_paragraphs(doc: SkillDocument) -> list[tuple[int, int]]:
    """(line of the repeat, line of the first occurrence) for each repeated paragraph."""
    first_seen: dict[str, int] = {}
    repeats: list[tuple[int, int]] = []
    for paragraph in doc.paragraphs:
        if len(paragraph.text) < _MIN_DUPLICATE_PARAGRAPH:
            continue  # normalizing only shortens text, so it could not reach the minimum
        key = normalize(paragraph.text)
        if len(key) < _MIN_DUPLICATE_PARAGRAPH:
            continue
        if key in first_seen:
            repeats.append((paragraph.line, first_seen[key]))
        else:
            first_seen[key] = paragraph.line
    return repeats


def score_dim7(doc: SkillDocument) -> DimensionScore:
    jumps = heading_jumps(doc.headings)
    groups = chapter_groups(doc.headings)
    dup_heads = duplicate_headings(doc.headings)
    dup_paras = duplicate_paragraphs(doc)
    duplicates = len(dup_heads) + len(dup_paras)
    raw = 10 - 2 * len(jumps) - 3 * max(0, 3 - len(groups)) - 2 * duplicates
    reasons = [f"heading jump H{a.level}→H{b.level} at line {b.line} ('{b.text[:40]}')" for a, b in jumps]
    missing = [g for g in CHAPTER_GROUPS if g not in groups]
    if len(groups) < 3:
        reasons.append(f"{len(groups)}/4 required chapters; missing: {', '.join(missing)} (3 needed)")
    reasons += [f"duplicate sibling heading '{h.text[:40]}' at line {h.line}" for h in dup_heads]
    reasons += [f"paragraph at line {line} repeats the one at line {first}" for line, first in dup_paras]
    if not reasons:
        reasons.append(f"headings continuous, {len(groups)}/4 chapters, no duplicates")
    details = (
        ("jumps", len(jumps)),
        ("groups", sorted(groups)),
        ("duplicates", duplicates),
    )
    return DimensionScore("dim7", max(0, min(10, raw)), "rules", tuple(reasons), details=details)


def counter_example_lines(doc: SkillDocument) -> dict[str, int]:
    """Each distinct (stripped) line holding a counter-example cue, with its first line number."""
    lowered = doc.body.lower()  # lower() never adds or removes a line break, so line numbers hold
    cues = find_cues(lowered, COUNTER_EXAMPLE_CUES, COUNTER_EXAMPLE_WORDS)
    lines = doc.body.split("\n") if cues else []
    hits: dict[str, int] = {}
    index, counted_to = 0, 0
    for offset, _cue in cues:  # sorted, so counting line breaks picks up where it stopped
        index += lowered.count("\n", counted_to, offset)
        counted_to = offset
        hits.setdefault(lines[index].strip(), doc.body_first_line + index)
    return hits


def score_dim9(doc: SkillDocument) -> DimensionScore:
    hits = counter_example_lines(doc)
    count = len(hits)
    score = 10 if count >= 3 else {2: 7, 1: 3, 0: 0}[count]
    if count:
        lines = ", ".join(str(n) for n in list(hits.values())[:5])
        reasons: tuple[str, ...] = (f"{count} distinct counter-example line(s) (lines {lines})",)
    else:
        reasons = ("no counter-examples; add lines such as 'Do not …' / '不要…' for the known failure cases",)
    if 0 < count < 3:
        reasons += (f"{3 - count} more distinct line(s) needed for full marks",)
    return DimensionScore("dim9", score, "rules", reasons, details=(("distinct_lines", count),))

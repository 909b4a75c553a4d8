"""The offline proposer's fixes: only what is right without understanding the text.

With no model, Luban cannot know what a skill's trigger words are, which step
is irreversible, what can go wrong or which rules hold — any STOP, rule,
heading, table or trigger phrase it wrote would be invented, and would raise a
keyword-counting dimension without making the skill better. So offline it
proposes four mechanical fixes and nothing else:

- **filler ending** (dim1): a description that trails off in "etc." / "…" /
  "等" loses the filler words, and nothing is added in their place;
- **heading-level jump** (dim7): a heading two levels deeper than the one
  before it moves up, with the headings under it, so no new jump appears;
- **exact duplicate paragraph** (dim7): the later of two identical paragraphs goes;
- **moved reference** (dim6): a path to a file that is not there, when exactly one
  file of the skill has that name, points at that file.

The dimensions these cannot touch need a model; the report says which
(``dims_needing_a_model``). Each candidate is still checked by the proposer's
budget and structural guards, and by the offline scores.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from pathlib import PurePosixPath

from scoring.document import SkillDocument
from scoring.edits import Edit
from scoring.structure_rules import duplicate_paragraphs, heading_jumps

MECHANICAL = ("filler-ending", "heading-jump", "duplicate-paragraph", "moved-reference")
OFFLINE_DIMS = ("dim1", "dim6", "dim7")  # the only dimensions a mechanical fix can raise
_FILLER = re.compile(r"(等等|等|之类|以及更多|etc|and more|and so on|and others)$", re.IGNORECASE)
_TRAILING = " .。!！;；,，"


def _lines(doc: SkillDocument) -> list[str]:
    return doc.text.split("\n")


def candidates(doc: SkillDocument, target_dim: str, missing: list[str], files: AbstractSet[str]) -> list[Edit]:
    """The mechanical fixes for one dimension (none for a dimension that needs a model)."""
    by_dim = {"dim1": lambda: remove_filler_ending(doc),
              "dim6": lambda: fix_moved_references(doc, missing, files),
              "dim7": lambda: fix_heading_jump(doc) + remove_duplicate_paragraph(doc)}
    return by_dim[target_dim]() if target_dim in by_dim else []


def without_filler(description: str) -> str | None:
    """The description with its filler ending removed (RUBRIC dim1 check 7), or None when it has none."""
    d = description.rstrip()
    stripped = d
    if stripped.endswith(("...", "…")):
        stripped = stripped.rstrip(".…").rstrip()
    core = stripped.rstrip(_TRAILING)
    tail = _FILLER.search(core)
    if tail:
        core = core[: tail.start()].rstrip(_TRAILING + " ")
    elif stripped == d:
        return None
    if not core:
        return None
    return core + ("。" if re.search(r"[\u4e00-\u9fff]$", core) else ".")


def remove_filler_ending(doc: SkillDocument) -> list[Edit]:
    """The description's last raw line without its filler words (its quote, if any, kept)."""
    description = (doc.frontmatter or {}).get("description")
    if not isinstance(description, str) or without_filler(description) is None:
        return []
    span = _description_span(_lines(doc))
    if not span or doc.text.count(span[-1]) != 1:
        return []
    last = span[-1].rstrip()
    quote = last[-1] if last[-1:] in "\"'" else ""
    fixed = without_filler(last[: len(last) - len(quote)])
    if fixed is None:
        return []
    return [Edit("dim1", span[-1], fixed + quote, "drop the filler ending of the description", 1.0, strategy="filler-ending")]


def _description_span(lines: list[str]) -> list[str]:
    """The frontmatter lines of the ``description`` key (its continuation lines included)."""
    end = next((i for i in range(1, len(lines)) if lines[i] in ("---", "...")), len(lines))
    for i in range(1, end):
        if lines[i].startswith("description:"):
            j = i + 1
            while j < end and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
                j += 1
            return [line for line in lines[i:j] if line.strip()]
    return []


def fix_heading_jump(doc: SkillDocument) -> list[Edit]:
    """Move the first jumped heading up to one level below the one before it, with every heading under it."""
    jumps = heading_jumps(doc.headings)
    if not jumps:
        return []
    before, heading = jumps[0]
    shift = heading.level - before.level - 1
    lines = _lines(doc)
    subtree = [heading]
    for h in doc.headings[doc.headings.index(heading) + 1:]:
        if h.level <= heading.level:
            break
        subtree.append(h)
    first, last = heading.line, subtree[-1].line
    old = "\n".join(lines[first - 1:last])
    new_lines = lines[first - 1:last]
    for h in subtree:
        new_lines[h.line - first] = new_lines[h.line - first][shift:]
    if doc.text.count(old) != 1 or any(not line.startswith("#" * (shift + 1)) for line in (lines[h.line - 1] for h in subtree)):
        return []
    return [Edit("dim7", old, "\n".join(new_lines), f"heading jump H{before.level}→H{heading.level}: move the heading "
                 f"{'and the ones under it ' if len(subtree) > 1 else ''}up {shift} level(s)", 2.0, strategy="heading-jump")]


def remove_duplicate_paragraph(doc: SkillDocument) -> list[Edit]:
    """The later of two paragraphs that are the same text, character for character."""
    lines = _lines(doc)
    for repeat, first in duplicate_paragraphs(doc):
        later = next(p for p in doc.paragraphs if p.line == repeat)
        earlier = next(p for p in doc.paragraphs if p.line == first)
        block = "\n".join(lines[later.line - 1:later.end_line])
        if block != "\n".join(lines[earlier.line - 1:earlier.end_line]):
            continue  # alike once normalized, not identical: which words to keep is not mechanical
        for start in range(later.line - 1, max(0, later.line - 6), -1):  # widen upwards until it occurs once
            lead = "\n".join(lines[start - 1:later.line - 1])
            if lead.strip() and doc.text.count(lead + "\n" + block) == 1:
                kept = lead.rstrip("\n")
                return [Edit("dim7", lead + "\n" + block, kept, "remove the exact repeat of the paragraph at line "
                             f"{earlier.line}", 2.0, strategy="duplicate-paragraph")]
    return []


def fix_moved_references(doc: SkillDocument, missing: list[str], files: AbstractSet[str]) -> list[Edit]:
    """A missing path whose file name exactly one file of the skill has: point at that file."""
    for target in missing:
        name = PurePosixPath(target).name
        found = [f for f in files if PurePosixPath(f).name == name and f != "SKILL.md"]
        if len(found) != 1:
            continue  # none, or several: which one is meant cannot be known
        for wrapped in (f"({target})", f"`{target}`", f"(<{target}>)"):
            if doc.text.count(wrapped) == 1:
                return [Edit("dim6", wrapped, wrapped.replace(target, found[0]),
                             f"{target} is not there; {found[0]} is the skill's one file of that name", 1.0,
                             strategy="moved-reference")]
    return []


def dims_needing_a_model(remaining: Mapping[str, float | None]) -> list[str]:
    """The dimensions under full marks that no mechanical fix can raise, in rubric order."""
    return [d for d, score in remaining.items() if d not in OFFLINE_DIMS and score is not None and score < 10]

"""Findings across a library of skills loaded into one agent (pure): what no single file shows.

- ``duplicate_name`` (error): two skills with the same ``name`` — a client loads one of them, or refuses both.
- ``similar_description`` (warning): two descriptions so alike that a router choosing a skill by its description
  cannot tell them apart. Similarity is rapidfuzz's ``ratio`` (0–100) of the descriptions lowercased with
  punctuation removed, or of their sentences in sorted order if that is higher. ``SIMILAR_AT`` = 70 flags none of
  the 496 pairs of the 32 public skills we test on (their most alike pair: 51.4); of copies of those 32 descriptions, it flags 31–32 with
  10 % of their words changed, 30–32 with 20 %, all 32 with their sentences reordered or their last 30 % cut, 23
  with a sentence appended and 17–22 with 30 % of their words changed (seeds 5, 11, 23:
  benchmarks/description_collisions.py).
- ``name_convention`` (warning): a skill whose directory is not named as its skill, among at least two siblings
  (skills in the same folder) whose directories all are — the library's convention, which clients that find a
  skill by its folder rely on.

Each finding names the other skill, which is also its related location (SARIF ``relatedLocations``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.document import SkillDocument
from scoring.model import Violation
from scoring.spec_rules import key_lines

SIMILAR_AT = 70.0
COMPARED = 1024  # characters of a description compared: the specification's most (dim1 flags a longer one), and a
# bound on the comparison's cost, which grows with the product of two lengths (a hostile 2 MB description)
MOST_ALIKE_SHOWN = 3  # per skill: a library of near-copies gets three findings a skill, and the count of the rest
_PUNCTUATION = re.compile(r"[^\w\s]")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


@dataclass(frozen=True)
class LibraryEntry:
    """What the library findings read of one skill: where it is, and its name and description with their lines."""

    path: str  # its SKILL.md, as shown
    name: str | None
    description: str | None
    name_line: int | None = None
    description_line: int | None = None

    @property
    def directory(self) -> str:
        return self.path.replace("\\", "/").rsplit("/", 2)[-2] if "/" in self.path.replace("\\", "/") else ""

    @property
    def folder(self) -> str:
        parts = self.path.replace("\\", "/").rsplit("/", 2)
        return parts[0] if len(parts) == 3 else "."


def entry_of(doc: SkillDocument, path: str) -> LibraryEntry:
    fm = doc.frontmatter if isinstance(doc.frontmatter, dict) else {}
    name, description = fm.get("name"), fm.get("description")
    lines = key_lines(doc.text) if fm else {}
    return LibraryEntry(path, name if isinstance(name, str) else None,
                        description if isinstance(description, str) else None, lines.get("name"), lines.get("description"))


def library_violations(entries: Sequence[LibraryEntry]) -> dict[str, list[Violation]]:
    """SKILL.md path → its findings across ``entries`` (every skill scored together)."""
    found: dict[str, list[Violation]] = defaultdict(list)
    by_name: dict[str, list[LibraryEntry]] = defaultdict(list)
    for entry in entries:
        if entry.name:
            by_name[entry.name].append(entry)
    for same in (group for group in by_name.values() if len(group) > 1):
        for entry in same:
            others = [other for other in same if other is not entry]
            found[entry.path].append(_duplicate(entry, others[0], len(others) - 1))
    for one, matches in _alike(entries).items():  # each skill's, most alike first, none of its own name
        shown = matches[:MOST_ALIKE_SHOWN]
        more = len(matches) - len(shown)
        found[one.path] += [_similar(one, other, alike, more if i == len(shown) - 1 else 0)
                            for i, (other, alike) in enumerate(shown)]
    for entry in _off_convention(entries):
        found[entry.path].append(Violation(
            "name_convention", entry.name_line,
            f"its directory '{entry.directory}' is not named as the skill '{entry.name}', while every sibling's in "
            f"{entry.folder} is: rename the directory (or the skill) to match"))
    return {path: violations for path, violations in found.items() if violations}


def similarity(one: str, other: str) -> float:
    from rapidfuzz import fuzz

    return max(fuzz.ratio(_normal(one), _normal(other)), fuzz.ratio(_sentences_sorted(one), _sentences_sorted(other)))


def _normal(text: str) -> str:
    return " ".join(_PUNCTUATION.sub(" ", text[:COMPARED].lower()).split())


def _sentences_sorted(text: str) -> str:
    """The text's sentences in sorted order: the same sentences in another order read as the same description.
    (Sorting words instead would make any two descriptions written from a small vocabulary look alike.)"""
    return " ".join(sorted(n for n in (_normal(s) for s in _SENTENCE_END.split(text[:COMPARED])) if n))


def _alike(entries: Sequence[LibraryEntry]) -> dict[LibraryEntry, list[tuple[LibraryEntry, float]]]:
    """Each skill → the others whose descriptions are at least ``SIMILAR_AT`` alike, most alike first. Each distinct
    description is compared once with every other (rapidfuzz's extract, in C, cut off below the threshold), so a
    library of copies costs what its distinct descriptions do."""
    from rapidfuzz import fuzz, process

    by_text: dict[str, list[LibraryEntry]] = defaultdict(list)
    for entry in entries:
        if entry.description:
            by_text[_normal(entry.description)].append(entry)
    texts = list(by_text)
    in_order = [_sentences_sorted(by_text[text][0].description or "") for text in texts]
    out: dict[LibraryEntry, list[tuple[LibraryEntry, float]]] = defaultdict(list)
    for same in by_text.values():  # the very same description: 100 % alike (a copy of the same name is said above)
        if len({entry.name for entry in same}) > 1 or not same[0].name:
            for entry in same:
                out[entry] += [(other, 100.0) for other in same if other is not entry and _distinct(entry, other)]
    for i, text in enumerate(texts):
        scores: dict[int, float] = {}
        for query, choices in ((text, texts), (in_order[i], in_order)):
            for _, score, j in process.extract(query, choices, scorer=fuzz.ratio, score_cutoff=SIMILAR_AT, limit=None):
                if j != i:
                    scores[j] = max(score, scores.get(j, 0.0))
        for j, score in scores.items():
            for entry in by_text[text]:
                out[entry] += [(other, score) for other in by_text[texts[j]] if _distinct(entry, other)]
    return {entry: sorted(others, key=lambda pair: -pair[1]) for entry, others in out.items()}


def _distinct(entry: LibraryEntry, other: LibraryEntry) -> bool:
    """Two skills whose alike descriptions are a finding: not two of the same name (that is one already)."""
    return not entry.name or entry.name != other.name


def _duplicate(entry: LibraryEntry, other: LibraryEntry, more: int) -> Violation:
    also = f" (and of {more} more)" if more else ""
    return Violation("duplicate_name", entry.name_line,
                     f"'{entry.name}' is also the name of {other.path}{also}: a client loads one of them, or refuses "
                     "both; rename one", related=(other.path, other.name_line))


def _similar(entry: LibraryEntry, other: LibraryEntry, alike: float, more: int) -> Violation:
    also = f" (and {more} more skills' as alike)" if more else ""
    return Violation("similar_description", entry.description_line,
                     f"its description is {alike:.0f} % alike {other.name or other.path}'s ({other.path}){also}: a "
                     "router choosing by description cannot tell them apart; say what sets each apart, or merge them",
                     related=(other.path, other.description_line))


def _off_convention(entries: Sequence[LibraryEntry]) -> list[LibraryEntry]:
    by_folder: dict[str, list[LibraryEntry]] = defaultdict(list)
    for entry in entries:
        if entry.name:
            by_folder[entry.folder].append(entry)
    off = []
    for siblings in by_folder.values():
        differing = [e for e in siblings if e.directory != e.name]
        if len(differing) == 1 and len(siblings) >= 3:  # one against at least two that follow the convention
            off += differing
    return off

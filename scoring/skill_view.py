"""What a judge reads of a skill: SKILL.md and the text files it points to, within a token budget.

A skill is a directory. SKILL.md is the index; the substance lives in the files it tells the agent to open
(``references/``, ``scripts/``, ``assets/``). A judge given SKILL.md alone scores an index page whose steps say "see
references/…". A ``SkillView`` is what one judge call is given: SKILL.md whole, then the files SKILL.md references in
the order it first names them, then the skill's other text files, each whole, while the budget lasts. What did not
fit, and what is binary or too big to inline at all, is named — in the prompt and in the row — never silently
dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class SourceFile:
    """One file of a skill directory as read from disk: its text, or why it has none to inline."""

    path: str  # POSIX, relative to the skill directory
    text: str | None
    why_not: str = ""  # "binary", "over 64 KB": why ``text`` is None

    def __post_init__(self) -> None:
        if (self.text is None) == (not self.why_not):
            raise ValueError(f"{self.path}: a source file has either its text or the reason it has none")


@dataclass(frozen=True)
class SkillView:
    """SKILL.md and the files shown with it, in the order shown; ``left_out``: (path, why) for the rest."""

    skill: str
    files: tuple[tuple[str, str], ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()

    def texts(self) -> dict[str, str]:
        """Every text shown, by path: where a quote must be found."""
        return {SKILL_FILE: self.skill} | dict(self.files)

    def unseen(self) -> str:
        """The files a judge was not shown, for the row ("" when it saw them all)."""
        return ", ".join(f"{path} ({why})" for path, why in self.left_out)


def skill_view(skill: str, sources: tuple[SourceFile, ...], referenced: tuple[str, ...], budget: int,
               count: Callable[[str], int]) -> SkillView:
    """SKILL.md plus whole files while ``budget`` tokens (``count`` measures a text) last: those SKILL.md references
    first, in ``referenced`` order, then the rest by path. A file that does not fit is left out and the next is tried
    (a small one may still fit); evals/ is the author's test material, never the skill's content."""
    by_path = {s.path: s for s in sources if s.path != SKILL_FILE and not s.path.startswith("evals/")}
    named = [path for target in referenced for path in _under(_relative(target), by_path)]
    order = list(dict.fromkeys(named)) + sorted(p for p in by_path if p not in named)
    left = budget - count(skill)
    shown: list[tuple[str, str]] = []
    left_out: list[tuple[str, str]] = []
    for path in order:
        source = by_path[path]
        if source.text is None:
            left_out.append((path, source.why_not))
            continue
        cost = count(source.text)
        if cost > left:
            left_out.append((path, f"{cost} tokens, over what is left of the judges' budget of {budget}"))
            continue
        shown.append((path, source.text))
        left -= cost
    return SkillView(skill, tuple(shown), tuple(left_out))


def _relative(target: str) -> str:
    return "/".join(part for part in target.split("/") if part not in ("", "."))


def _under(target: str, paths: dict[str, SourceFile]) -> list[str]:
    """The files a reference names: the file itself, or every file below a folder it names."""
    if target in paths:
        return [target]
    return sorted(p for p in paths if target and p.startswith(target + "/"))


def sources_digest(sources: tuple[SourceFile, ...]) -> str:
    """What the judges read besides SKILL.md, in one hash: part of a measurement's cache key and of a version's name
    (a changed reference is a new measurement, and another version)."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(f"{source.path}\0{source.text if source.text is not None else source.why_not}\0".encode())
    return digest.hexdigest()

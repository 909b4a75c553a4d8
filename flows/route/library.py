"""The library a router chooses from: every skill's name and description, and the listing a client would show.

A skill the router cannot be offered (unreadable, no name or description, a name another skill already has) is
named with the reason and the fix; the rest are routed without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flows.gate.check import listing_formats
from scoring.document import parse
from scoring.library import entry_of
from scoring.listings import ListedSkill, Listing, listings, one_line, render
from workspace.git_revisions import skills_at
from workspace.skill_source import SkillSource, discover, read_skill, source_text

DEFAULT_CLIENT = "claude-code"  # the tightest listing of the common clients at an unknown window
DEFAULT_WINDOW = "unknown"


@dataclass(frozen=True)
class RoutedSkill:
    name: str  # the frontmatter name: what a router names
    description: str  # on one line, as a listing holds it
    path: str  # its SKILL.md
    description_line: int | None = None

    @property
    def directory(self) -> Path:
        return Path(self.path).parent


@dataclass(frozen=True)
class Library:
    skills: tuple[RoutedSkill, ...]
    unroutable: tuple[tuple[str, str], ...]  # (SKILL.md or path, why it cannot be offered to a router, and the fix)
    listing: Listing  # what the router is shown
    every_listing: tuple[Listing, ...]  # each client at each window: what survives where

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.skills)

    def skill(self, name: str) -> RoutedSkill:
        return next(s for s in self.skills if s.name == name)

    def listing_of(self, names: tuple[str, ...]) -> str:
        """The listing of only these skills, as the same client renders it at the same window (retrieve-then-choose)."""
        formats = listing_formats()
        client = next(c for c in formats.clients if c.name == self.listing.client)
        chosen = [ListedSkill(s.name, s.description, f"r0/{s.directory.name}/SKILL.md")
                  for s in self.skills if s.name in set(names)]
        return render(client, chosen, self.listing.window, formats).text


class LibraryError(ValueError):
    pass


def read_library(skills_dir: Path, client: str = DEFAULT_CLIENT, window: str = DEFAULT_WINDOW) -> Library:
    """Every skill under ``skills_dir``, and the listings of those that can be routed; LibraryError when none can."""
    sources = [item if isinstance(item, SkillSource) else read_skill(item) for item in discover([str(skills_dir)])]
    return library_of(sources, str(skills_dir), client, window)


def library_at(skills_dir: Path, revision: str, client: str = DEFAULT_CLIENT, window: str = DEFAULT_WINDOW) -> Library:
    """The library as it was at a git revision (what a change is compared against)."""
    return library_of(skills_at(skills_dir, revision), f"{skills_dir} at {revision}", client, window)


def library_of(sources: list[SkillSource], where: str, client: str = DEFAULT_CLIENT,
               window: str = DEFAULT_WINDOW) -> Library:
    formats = listing_formats()
    chosen = next((c for c in formats.clients if c.name == client), None)
    if chosen is None:
        raise LibraryError(f"no client {client!r}; choose one of {', '.join(c.name for c in formats.clients)}")
    if window not in formats.windows:
        raise LibraryError(f"no window {window!r}; choose one of {', '.join(formats.windows)}")
    skills, unroutable = _routable(sources)
    if not skills:
        said = "; ".join(f"{path}: {why}" for path, why in unroutable[:3])
        raise LibraryError(f"{where}: no skill can be offered to a router{': ' + said if said else ''}")
    listed = [ListedSkill(s.name, s.description, f"r0/{s.directory.name}/SKILL.md") for s in skills]
    return Library(tuple(skills), tuple(unroutable), render(chosen, listed, window, formats),
                   tuple(listings(formats, listed)))


def _routable(sources: list[SkillSource]) -> tuple[list[RoutedSkill], list[tuple[str, str]]]:
    skills: dict[str, RoutedSkill] = {}
    unroutable: list[tuple[str, str]] = []
    for source in sources:
        text, error = source_text(source)
        if text is None:
            unroutable.append((source.path, error or "could not be read"))
            continue
        entry = entry_of(parse(text), source.path)
        if not entry.name or not entry.description:
            missing = "name" if not entry.name else "description"
            unroutable.append((source.path, f"its frontmatter has no {missing}: a client cannot list it; add one"))
        elif entry.name in skills:
            unroutable.append((source.path, f"its name {entry.name!r} is also {skills[entry.name].path}'s: a router "
                                            "cannot tell them apart; rename one"))
        else:
            skills[entry.name] = RoutedSkill(entry.name, one_line(entry.description), source.path, entry.description_line)
    return sorted(skills.values(), key=lambda s: s.name), unroutable

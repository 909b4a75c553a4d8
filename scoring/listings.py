"""What a router sees of a library: each client's skill listing, rendered as that client renders it, at the budgets
of common context windows (pure: the formats and budgets come in as the text of scoring/skill_listings.json).

An agent picks a skill from a listing of names and descriptions, and clients cut that listing to a budget: Claude Code
drops descriptions, Codex shortens them round-robin and, past that, leaves skills out. A description's trigger words
past the cut do not exist for the router. Per skill and listing this says how many characters of its description
are shown, and how many of its trigger cues — the when-cues, trigger words and quoted phrases dim1 reads — lie
wholly inside them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from scoring.frontmatter_rules import PAIRED_QUOTES, SYMMETRIC_QUOTES, TRIGGER_WORDS, WHEN_CUE
from scoring.library import LibraryEntry
from scoring.model import Violation


@dataclass(frozen=True)
class Client:
    """One client's listing: its style (lines or XML), line templates, budget and where its numbers come from."""

    name: str
    style: str
    source: str
    header: str = ""
    line: str = ""
    bare_line: str = ""
    share_of_window: float | None = None
    unit: str | None = None  # what the budget counts when the window is known: characters or tokens
    unknown_window_budget: int | None = None
    unknown_window_unit: str | None = None
    entry_cap: int | None = None


@dataclass(frozen=True)
class Formats:
    version: str
    chars_per_token: int
    windows: dict[str, int | None]
    clients: tuple[Client, ...]


@dataclass(frozen=True)
class ListedSkill:
    name: str
    description: str
    path: str  # its SKILL.md, as the client shows it


@dataclass(frozen=True)
class Shown:
    """One skill in one listing: the characters of its description shown, and its trigger cues inside them."""

    name: str
    kept: int
    length: int
    listed: bool
    cues: int
    cues_kept: int

    @property
    def cues_lost(self) -> bool:
        """It has trigger cues, and the listing shows none of them (cut before them, or not listed at all)."""
        return self.cues > 0 and self.cues_kept == 0


@dataclass(frozen=True)
class Listing:
    client: str
    window: str
    budget: str  # as said: "8000 characters", "2560 tokens", "none"
    text: str
    shown: tuple[Shown, ...]


def formats_from(text: str) -> Formats:
    """scoring/skill_listings.json read; raises ValueError naming the client and key that is wrong."""
    data: dict[str, Any] = json.loads(text)
    clients = []
    for name, spec in data["clients"].items():
        try:
            clients.append(Client(name=name, **{k: v for k, v in spec.items() if k not in ("over_budget", "order")}))
        except TypeError as err:
            raise ValueError(f"skill_listings.json: client {name!r}: {err}") from None
    return Formats(data["version"], int(data["chars_per_token"]), dict(data["windows"]), tuple(clients))


def listings(formats: Formats, skills: Sequence[ListedSkill]) -> list[Listing]:
    """Every client's listing of ``skills`` at every window's budget."""
    ordered = sorted(skills, key=lambda s: s.name)
    cues = {s: trigger_cues(s.description) for s in ordered}  # read once, not once a listing
    return [render(client, ordered, window, formats, cues) for client in formats.clients for window in formats.windows]


def render(client: Client, skills: Sequence[ListedSkill], window: str, formats: Formats,
           cues: dict[ListedSkill, list[tuple[int, int]]] | None = None) -> Listing:
    """``client``'s listing of ``skills`` (in its order) at the budget of ``window``; ``cues``: each skill's trigger
    cues, when already read."""
    cues = cues if cues is not None else {s: trigger_cues(s.description) for s in skills}
    limit, unit = budget(client, formats.windows[window], formats.chars_per_token)
    said = f"{limit} {unit}" if limit is not None else "none"
    if client.style == "xml":
        return Listing(client.name, window, said, _xml(skills), tuple(_shown(s, len(s.description), cues[s]) for s in skills))
    capped = [ListedSkill(s.name, s.description[:client.entry_cap] if client.entry_cap else s.description, s.path)
              for s in skills]
    kept: list[int | None]
    if limit is None or _cost(unit, [_line(client, s, len(s.description)) for s in capped]) <= limit:
        kept = [len(s.description) for s in capped]
    elif client.name == "codex":
        kept = _round_robin(client, capped, limit, unit)
    else:
        kept = _drop_from_the_end(client, capped, limit, unit)
    lines = [_line(client, s, k) for s, k in zip(capped, kept, strict=True) if k is not None]
    text = "\n".join([client.header, *lines]) if client.header else "\n".join(lines)
    return Listing(client.name, window, said, text, tuple(_shown(s, k, cues[s]) for s, k in zip(skills, kept, strict=True)))


def budget(client: Client, window: int | None, chars_per_token: int) -> tuple[int | None, str]:
    """(the budget, what it counts) for a context window of ``window`` tokens (None: unknown)."""
    if client.share_of_window is None:
        return None, "none"
    if window is None:
        return client.unknown_window_budget, client.unknown_window_unit or client.unit or "characters"
    if client.unit == "tokens":
        return max(1, math.floor(window * client.share_of_window)), "tokens"
    return math.floor(window * client.share_of_window * chars_per_token), "characters"


def trigger_cues(description: str) -> list[tuple[int, int]]:
    """(start, end) of each trigger cue in the description: when-cues, trigger words, quoted phrases."""
    lower = description.lower()
    text = lower if len(lower) == len(description) else description  # lower() can change the length (İ)
    spans = [m.span() for pattern in (WHEN_CUE, TRIGGER_WORDS) for m in pattern.finditer(text)]
    return sorted(set(spans + _quoted(description)))


def _quoted(description: str) -> list[tuple[int, int]]:
    """Where each quoted phrase dim1 reads (``frontmatter_rules.quoted_phrases``) stands, its closing quote included."""
    spans = []
    for quote in SYMMETRIC_QUOTES:
        marks = [m.start() for m in re.finditer(re.escape(quote), description)]
        spans += [(a + 1, b + 1) for a, b in zip(marks[0::2], marks[1::2], strict=False)]
    for opening, closing in PAIRED_QUOTES:
        spans += [(m.start(1), m.end(1) + 1) for m in re.finditer(f"{opening}([^{opening}{closing}]*){closing}", description)]
    return [(a, b) for a, b in spans if 1 <= b - 1 - a <= 40 and description[a:b - 1].strip()]


def _shown(skill: ListedSkill, kept: int | None, cues: list[tuple[int, int]]) -> Shown:
    chars = kept or 0
    return Shown(skill.name, chars, len(skill.description), kept is not None, len(cues),
                 sum(1 for _, end in cues if end <= chars) if kept is not None else 0)


def _line(client: Client, skill: ListedSkill, chars: int) -> str:
    if chars == 0:
        return client.bare_line.format(name=skill.name, path=skill.path)
    return client.line.format(name=skill.name, description=skill.description[:chars], path=skill.path)


def _cost(unit: str, lines: Sequence[str]) -> int:
    """What ``lines`` cost against a budget: characters, or tokens at four bytes a token (Codex's estimate)."""
    if unit == "tokens":
        return sum(math.ceil(len((line + "\n").encode("utf-8")) / 4) for line in lines)
    return sum(len(line) + 1 for line in lines)


def _drop_from_the_end(client: Client, skills: Sequence[ListedSkill], limit: int, unit: str) -> list[int | None]:
    """Claude Code: whole descriptions dropped, the last listed first, until the listing fits; every name stays."""
    full = [_cost(unit, [_line(client, s, len(s.description))]) for s in skills]
    bare = [_cost(unit, [_line(client, s, 0)]) for s in skills]
    kept: list[int | None] = [len(s.description) for s in skills]
    total = sum(full)
    for index in reversed(range(len(skills))):
        if total <= limit:
            break
        total -= full[index] - bare[index]
        kept[index] = 0
    return kept


def _round_robin(client: Client, skills: Sequence[ListedSkill], limit: int, unit: str) -> list[int | None]:
    """Codex (render.rs): bare lines first; what the budget has left handed out one description character at a time
    to each skill in turn; when the bare lines alone do not fit, skills left out from the end of the order."""
    bare = [_cost(unit, [_line(client, s, 0)]) for s in skills]
    if sum(bare) > limit:
        kept: list[int | None] = []
        used = 0
        for cost in bare:
            fits = used + cost <= limit
            used += cost if fits else 0
            kept.append(0 if fits else None)
        return kept
    extra = [_extra_costs(client, s, unit, b) for s, b in zip(skills, bare, strict=True)]
    chars, spent, remaining = [0] * len(skills), [0] * len(skills), limit - sum(bare)
    changed = True
    while changed:
        changed = False
        for i, costs in enumerate(extra):
            if chars[i] < len(costs) - 1 and costs[chars[i] + 1] - spent[i] <= remaining:
                remaining -= costs[chars[i] + 1] - spent[i]
                chars[i], spent[i], changed = chars[i] + 1, costs[chars[i] + 1], True
    return list(chars)


def _extra_costs(client: Client, skill: ListedSkill, unit: str, bare: int) -> list[int]:
    """What the line costs over its bare form with 0, 1, 2 … characters of its description."""
    minimum = _line(client, skill, 0)
    chars, data = len(minimum) + 1, len(minimum.encode("utf-8")) + 1
    costs = [0]
    for ch in skill.description:
        chars, data = chars + 1, data + len(ch.encode("utf-8"))
        total = math.ceil((data + 1) / 4) if unit == "tokens" else chars + 1  # the space before the description
        costs.append(max(0, total - bare))
    return costs


def _xml(skills: Sequence[ListedSkill]) -> str:
    """The Agent Skills reference's ``to-prompt`` block."""
    entries = "".join(f"<skill>\n<name>\n{escape(s.name)}\n</name>\n<description>\n{escape(s.description)}\n"
                      f"</description>\n<location>\n{escape(s.path)}\n</location>\n</skill>\n" for s in skills)
    return f"<available_skills>\n{entries}</available_skills>"


_SPACES = re.compile(r"\s+")


def one_line(description: str) -> str:
    """A description as a listing line holds it: its white space runs as one space (a YAML block scalar's breaks)."""
    return _SPACES.sub(" ", description).strip()


def listing_violations(formats: Formats, entries: Sequence[LibraryEntry]) -> dict[str, list[Violation]]:
    """SKILL.md path → where the clients' listings of these skills, scored together as one library, lose it:
    ``listing_dropped`` (left out of a listing) and ``listing_cut`` (its description cut before every one of its
    trigger cues, or dropped), each naming the clients and windows, at the description's line."""
    listed = sorted((e for e in entries if e.name and e.description), key=lambda e: e.name or "")  # listing order
    # the path as Codex shortens it, under a skill root's alias: where the library is checked out changes nothing
    skills = [ListedSkill(e.name or "", one_line(e.description or ""), f"r0/{e.directory or e.name}/SKILL.md")
              for e in listed]
    lost: dict[str, dict[str, list[str]]] = {e.path: {"dropped": [], "cut": []} for e in listed}
    for listing in listings(formats, skills):
        for shown, entry in zip(listing.shown, listed, strict=True):  # the same order (two skills may share a name)
            where = f"{listing.client} at {listing.window} ({listing.budget})"
            path = entry.path
            if not shown.listed:
                lost[path]["dropped"].append(where)
            elif shown.cues_lost:
                kept = "its description dropped" if shown.kept == 0 else f"{shown.kept} of {shown.length} characters shown"
                lost[path]["cut"].append(f"{where}: {kept}")
    found: dict[str, list[Violation]] = {}
    for entry in listed:
        dropped, cut = lost[entry.path]["dropped"], lost[entry.path]["cut"]
        out = []
        if dropped:
            out.append(Violation("listing_dropped", entry.description_line,
                                 f"left out of the listing of these {len(listed)} skills by {_said(dropped)}: a router "
                                 "there cannot choose it; shorten the descriptions of the library, or split it"))
        if cut:
            advice = ("put when to use it and its trigger words first" if any("shown" in c for c in cut) else
                      "the whole listing is over that budget: shorter descriptions across the library leave room")
            out.append(Violation("listing_cut", entry.description_line,
                                 f"no trigger word of its description reaches the router in {_said(cut)}: {advice}"))
        if out:
            found[entry.path] = out
    return found


def _said(places: list[str]) -> str:
    return "; ".join(places[:3]) + (f"; and {len(places) - 3} more" if len(places) > 3 else "")

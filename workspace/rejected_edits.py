"""``rejected_edits.md``: every reverted edit, so the optimizer never tries it again.

The file is Markdown a person can read, and it parses back to exactly the
entries that were written (old and new text sit in fences longer than any run
of ``~`` inside them). An edit is "rejected" when its SHA-256 matches an
active or permanent entry exactly, or when its normalized old→new text is at
least 90 % similar (rapidfuzz ratio) to one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from rapidfuzz import fuzz

from workspace.atomic import atomic_write
from workspace.skill_source import SKILL_FILE

MAX_ENTRIES = 200
FRAGMENT_LIMIT = 500
SIMILARITY = 0.9


class RejectReason(StrEnum):
    """Why an edit was rolled back and remembered."""

    SCORE_REGRESSION = "score_regression"  # not better beyond noise: a dimension got worse, or nothing rose
    INCONCLUSIVE = "inconclusive"  # still undecided when the measuring cap was reached
    HELD_OUT_DEGRADED = "held_out_degraded"
    SAFETY_FROZEN = "safety_frozen"
    USER_MANUAL = "user_manual"
    BUDGET_EXCEEDED = "budget_exceeded"


REASONS = tuple(r.value for r in RejectReason)
_STATUS = re.compile(r"^(active|permanent_block|bypassed_on_\d{4}-\d{2}-\d{2})$")
_ENTRY_HEAD = re.compile(r"^## REJ-(\d{4,}) \| (\S+) \| (.+)$")
_FIELD = re.compile(r"^- (\w+): ?(.*)$")
_FENCE = re.compile(r"^(~{3,})text$")




def edit_sha256(old: str, new: str, file: str = SKILL_FILE) -> str:
    """The identity of an edit: its full old and new text (NUL-separated, so no two edits collide by concatenation),
    and the file it changes when that is not SKILL.md (an edit of SKILL.md hashes as it always did)."""
    where = "" if file == SKILL_FILE else f"{file}\0"
    return hashlib.sha256(f"{where}{old}\0{new}".encode()).hexdigest()


def _normalized(old: str, new: str) -> str:
    return " ".join(f"{old[:FRAGMENT_LIMIT]} → {new[:FRAGMENT_LIMIT]}".lower().split())


@dataclass(frozen=True)
class RejectedEdit:
    number: int
    timestamp: str
    skill: str
    target_dim: str
    old: str  # at most FRAGMENT_LIMIT characters
    new: str
    sha256: str
    reason: str
    status: str = "active"
    note: str = ""
    file: str = SKILL_FILE  # the skill's file the edit changed

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"reason {self.reason!r} is not one of {', '.join(REASONS)}")
        if not _STATUS.match(self.status):
            raise ValueError(f"status {self.status!r} must be active, bypassed_on_YYYY-MM-DD or permanent_block")

    @property
    def id(self) -> str:
        return f"REJ-{self.number:04d}"

    @property
    def blocking(self) -> bool:
        return self.status == "active" or self.status == "permanent_block"


@dataclass(frozen=True)
class Buffer:
    skill: str
    created: str
    entries: tuple[RejectedEdit, ...] = ()
    last_pruned: str = "-"
    hit_to_submit_ratio: float = 0.0

    def add(self, timestamp: str, target_dim: str, old: str, new: str, reason: str,
            status: str = "active", note: str = "", file: str = SKILL_FILE) -> tuple[Buffer, RejectedEdit, list[str]]:
        """Append an entry (pruning past 200); returns the new buffer, the entry, and the pruned ids."""
        number = max((e.number for e in self.entries), default=0) + 1
        entry = RejectedEdit(number, timestamp, self.skill, target_dim, old[:FRAGMENT_LIMIT], new[:FRAGMENT_LIMIT],
                             edit_sha256(old, new, file), reason, status, " ".join(note.split()), file)
        buffer, pruned = replace(self, entries=(*self.entries, entry)).pruned(timestamp)
        return buffer, entry, pruned

    def pruned(self, timestamp: str) -> tuple[Buffer, list[str]]:
        """Drop the oldest active entries first, then bypassed ones; never a permanent_block."""
        excess = len(self.entries) - MAX_ENTRIES
        if excess <= 0:
            return self, []
        order = [e for e in self.entries if e.status == "active"] + [e for e in self.entries if e.status.startswith("bypassed")]
        dropped = {e.number for e in order[:excess]}
        kept = tuple(e for e in self.entries if e.number not in dropped)
        ids = [f"REJ-{n:04d}" for n in sorted(dropped)]
        return replace(self, entries=kept, last_pruned=timestamp if ids else self.last_pruned), ids

    def match(self, old: str, new: str, file: str = SKILL_FILE) -> RejectedEdit | None:
        """The active or permanent entry this edit of ``file`` repeats, by exact hash or ≥ 90 % similarity."""
        digest = edit_sha256(old, new, file)
        candidate = _normalized(old, new)
        for entry in self.entries:
            if not entry.blocking or entry.file != file:
                continue
            if entry.sha256 == digest or fuzz.ratio(candidate, _normalized(entry.old, entry.new)) >= SIMILARITY * 100:
                return entry
        return None

    def is_rejected(self, old: str, new: str, file: str = SKILL_FILE) -> bool:
        return self.match(old, new, file) is not None

    def with_status(self, number: int, status: str) -> Buffer:
        return replace(self, entries=tuple(replace(e, status=status) if e.number == number else e for e in self.entries))


def _fenced(text: str) -> list[str]:
    longest = max((len(m) for m in re.findall(r"~+", text)), default=0)
    fence = "~" * max(3, longest + 1)
    return [f"{fence}text", *text.split("\n"), fence]


def render(buffer: Buffer) -> str:
    lines = [
        f"# Rejected Edits Buffer — {buffer.skill}",
        "> Maintained by Luban: every revert appends an entry. Do not edit by hand.",
        "",
        "## Metadata",
        f"- created: {buffer.created}",
        f"- total_entries: {len(buffer.entries)}",
        f"- last_pruned: {buffer.last_pruned}",
        f"- hit_to_submit_ratio: {buffer.hit_to_submit_ratio:.2f}",
        "",
    ]
    for e in buffer.entries:
        lines += [
            f"## {e.id} | {e.timestamp} | {e.skill}",
            f"- target_dim: {e.target_dim}",
            f"- reason: {e.reason}",
            f"- status: {e.status}",
            f"- sha256: {e.sha256}",
            *([f"- file: {e.file}"] if e.file != SKILL_FILE else []),
            f"- note: {e.note}",
            "- old (first 500 characters):",
            *_fenced(e.old),
            "- new (first 500 characters):",
            *_fenced(e.new),
            "",
        ]
    return "\n".join(lines)


class RejectedEditsFormatError(ValueError):
    pass


def parse(text: str, source: str = "rejected_edits.md") -> Buffer:
    lines = text.split("\n")
    meta: dict[str, str] = {}
    entries: list[RejectedEdit] = []
    skill = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("# Rejected Edits Buffer — "):
            skill = line.removeprefix("# Rejected Edits Buffer — ")
        elif (head := _ENTRY_HEAD.match(line)) :
            entry, i = _parse_entry(head, lines, i + 1, source)
            entries.append(entry)
            continue
        elif (field := _FIELD.match(line)) and not entries:
            meta[field.group(1)] = field.group(2)
        i += 1
    return Buffer(skill, meta.get("created", ""), tuple(entries), meta.get("last_pruned", "-"),
                  float(meta.get("hit_to_submit_ratio", 0) or 0))


def _parse_entry(head: re.Match, lines: list[str], i: int, source: str) -> tuple[RejectedEdit, int]:
    fields: dict[str, str] = {}
    texts: list[str] = []
    while i < len(lines) and not _ENTRY_HEAD.match(lines[i]):
        fence = _FENCE.match(lines[i])
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j] == fence.group(1)), None)
            if end is None:
                raise RejectedEditsFormatError(f"{source}:{i + 1}: fence opened here is never closed")
            texts.append("\n".join(lines[i + 1:end]))
            i = end + 1
            continue
        if field := _FIELD.match(lines[i]):
            fields[field.group(1)] = field.group(2)
        i += 1
    try:
        old, new = texts[0], texts[1]
        entry = RejectedEdit(int(head.group(1)), head.group(2), head.group(3), fields["target_dim"], old, new,
                             fields["sha256"], fields["reason"], fields.get("status", "active"), fields.get("note", ""),
                             fields.get("file", SKILL_FILE))
    except (IndexError, KeyError, ValueError) as err:
        raise RejectedEditsFormatError(f"{source}: entry REJ-{head.group(1)} is incomplete ({err})") from None
    return entry, i


def load(path: Path, skill: str, created: str) -> Buffer:
    if not path.exists():
        return Buffer(skill, created)
    return parse(path.read_text(encoding="utf-8"), str(path))


def save(path: Path, buffer: Buffer) -> None:
    atomic_write(path, render(buffer))


def rebuild_from_results(skill: str, created: str, revert_rows: Iterable) -> Buffer:
    """A missing buffer with reverts on record is rebuilt from the rows' notes (the design's fallback).

    The ratchet writes ``sha256=<hex>`` into each revert row's note, so the
    rebuilt entries still match the exact edits; the text is the note itself.
    """
    buffer = Buffer(skill, created)
    for row in revert_rows:
        found = re.search(r"sha256=([0-9a-f]{64})", row.note)
        file = re.search(r"(?:^|;\s)file=([^;\s]+)", row.note)  # an edit of a file other than SKILL.md names it
        buffer, entry, _ = buffer.add(row.timestamp, row.dim_changed or "unknown", "", row.note, "score_regression",
                                      note="rebuilt from results.tsv", file=file.group(1) if file else SKILL_FILE)
        if found:
            buffer = replace(buffer, entries=(*buffer.entries[:-1], replace(entry, sha256=found.group(1))))
    return buffer

"""``meta_learnings.md``: lessons carried across skills and runs (global to the workspace).

Sections and ``### ID | date | title`` entries follow the design document; each
entry's body is ``- key: value`` lines. Parse and render round-trip exactly.
Every write happens under an exclusive lock with a timeout (``update``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from workspace.atomic import atomic_write
from workspace.lock import acquire_with_timeout

# Section title → entry id prefix, in file order.
SECTIONS: dict[str, str] = {
    "高收益改动": "HY",
    "低收益/拒绝改动": "LY",
    "触顶信号规律": "CEIL",
    "过拟合模式库": "OFP",
    "退化诊断": "DIAG",
    "异常信号": "ANOM",
    "L1 待处理队列": "PENDING",
    "评分系统健康度": "HEALTH",
}
MAX_PER_SECTION = 500
_ENTRY = re.compile(r"^### ([A-Z]+-\d{4,}) \| (\S+) \| (.*)$")
_FIELD = re.compile(r"^- ([^:]+): ?(.*)$")


class MetaEntry(BaseModel):
    id: str
    date: str
    title: str
    fields: dict[str, str] = Field(default_factory=dict)


class MetaLearnings(BaseModel):
    created: str = ""
    last_epoch_review: str = "-"
    skills_optimized_since_last_review: int = 0
    sections: dict[str, list[MetaEntry]] = Field(default_factory=lambda: {s: list[MetaEntry]() for s in SECTIONS})

    def add(self, section: str, date: str, title: str, fields: dict[str, str]) -> MetaEntry:
        if section not in SECTIONS:
            raise ValueError(f"unknown meta-learnings section {section!r}; one of {', '.join(SECTIONS)}")
        entries = self.sections.setdefault(section, [])
        prefix = SECTIONS[section]
        number = max((int(e.id.split("-")[1]) for e in entries), default=0) + 1
        entry = MetaEntry(id=f"{prefix}-{number:04d}", date=date, title=" ".join(title.split()),
                          fields={k: " ".join(str(v).split()) for k, v in fields.items()})
        entries.append(entry)
        del entries[:-MAX_PER_SECTION]  # oldest go first, per section
        return entry


def render(meta: MetaLearnings) -> str:
    lines = [
        "# Meta Learnings — Luban",
        "> Maintained by Luban: epoch meta-review, diagnostics, anomalies and scorer health.",
        "",
        "## Metadata",
        f"- created: {meta.created}",
        f"- last_epoch_review: {meta.last_epoch_review}",
        f"- skills_optimized_since_last_review: {meta.skills_optimized_since_last_review}",
        "",
    ]
    for section in SECTIONS:
        lines += [f"## {section}", ""]
        for e in meta.sections.get(section, []):
            lines.append(f"### {e.id} | {e.date} | {e.title}")
            lines += [f"- {k}: {v}" for k, v in e.fields.items()]
            lines.append("")
    return "\n".join(lines)


def parse(text: str) -> MetaLearnings:
    meta = MetaLearnings()
    section: str | None = None
    entry: MetaEntry | None = None
    for line in text.split("\n"):
        if line.startswith("## "):
            section, entry = line[3:].strip(), None
            if section in SECTIONS:
                meta.sections.setdefault(section, [])
        elif (head := _ENTRY.match(line)) and section in SECTIONS:
            entry = MetaEntry(id=head.group(1), date=head.group(2), title=head.group(3))
            meta.sections[section].append(entry)
        elif field := _FIELD.match(line):
            key, value = field.group(1), field.group(2)
            if entry is not None:
                entry.fields[key] = value
            elif section == "Metadata":
                _set_metadata(meta, key, value)
    return meta


def _set_metadata(meta: MetaLearnings, key: str, value: str) -> None:
    if key == "created":
        meta.created = value
    elif key == "last_epoch_review":
        meta.last_epoch_review = value
    elif key == "skills_optimized_since_last_review":
        meta.skills_optimized_since_last_review = int(value or 0)


def load(path: Path) -> MetaLearnings:
    return parse(path.read_text(encoding="utf-8")) if path.exists() else MetaLearnings()


def update(path: Path, change: Callable[[MetaLearnings], None], created: str, timeout: float = 10.0) -> MetaLearnings:
    """Read, change and atomically rewrite under an exclusive lock (waits at most ``timeout``)."""
    with acquire_with_timeout(path.with_name(path.name + ".lock"), timeout):
        meta = load(path)
        if not meta.created:
            meta.created = created
        change(meta)
        atomic_write(path, render(meta))
        return meta


HINTS = 5  # lessons the proposer's prompt lists at most


def guidance(path: Path, mode: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """What the epoch reviews of ``mode`` teach the next runs: the dimensions with high-yield patterns (diagnosis
    tries them first) and the hints the proposer's prompt lists. A quick run's lessons (offline heuristics, no git)
    do not steer a full run, nor the other way round; an entry written before lessons named their mode counts for both."""
    if not path.exists():
        return frozenset(), ()
    meta = load(path)

    def ours(entry: MetaEntry) -> bool:
        return entry.fields.get("mode", mode) == mode

    high = [e for e in meta.sections.get("高收益改动", []) if ours(e)]
    low = [e for e in meta.sections.get("低收益/拒绝改动", []) if ours(e)]
    dims = frozenset(e.fields["dim"] for e in high if e.fields.get("dim"))
    hints = [f"kept often elsewhere: {e.title} ({e.fields.get('dim') or 'any dimension'}, mean Δ "
             f"{e.fields.get('mean_delta', '?')})" for e in reversed(high)]
    hints += [f"reverted often elsewhere: {e.title} ({e.fields.get('reverts', '?')} times)" for e in reversed(low)]
    return dims, tuple(hints[:HINTS])

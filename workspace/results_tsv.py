"""``results.tsv``: one row per attempt, the ratchet's source of truth.

The design's sixteen columns come first; Luban's own follow at the end, so
a file written before they existed still reads (its rows get empty cells, and
the next append rewrites it with the longer header): ``stop`` (why the skill's
loop ended, a ``Stop``), ``samples``, ``bound`` and ``llm_calls`` (the keep
decision's evidence in brief: candidate/incumbent samples of the deciding
dimension, its one-sided 95 % bound in total points, and the LLM calls the
decision cost), and ``evidence`` (the whole decision, per dimension, as JSON).

Two kinds of record share this format: a rubric round (the ratchet's) and a routing round (``luban route
--optimize``, ``dim_changed = routing``, its Δ the routing gain in points of right answers). Routing rounds are written
to their own ``routing.tsv`` beside ``results.tsv``; a ``results.tsv`` written before that may still hold some, so
``rows`` and ``frame`` return one kind (the rubric's unless asked), and no reader of rubric rounds ever sees a routing
round — alerts, status, the report, the rejected-edit buffer and resume read only what the ratchet wrote.

Rows are appended by read + append + atomic replace, so a crash leaves the
file with or without the new row, never with half of it. A file damaged some
other way (wrong column count, not TSV, binary, a torn last line) is copied to
``results.tsv.bak.YYYYMMDD-HHMM`` and rebuilt from every row that still reads;
the caller is told how many rows were kept and where the backup is.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from workspace.atomic import DEFAULT_OPS, FileOps, atomic_write

DESIGN_COLUMNS: tuple[str, ...] = (
    "timestamp", "commit", "skill", "round", "old_score", "new_score", "status", "dim_changed",
    "delta", "note", "eval_mode", "judge_count", "mode", "edit_pct", "scores", "held_out_score",
)
COLUMNS: tuple[str, ...] = (*DESIGN_COLUMNS, "stop", "samples", "bound", "llm_calls", "evidence")
HEADER = "\t".join(COLUMNS)
_OLD_HEADER = "\t".join(DESIGN_COLUMNS)
EVAL_MODES = ("full_test", "dry_run", "fallback", "fallback_dry")
_ONE_DECIMAL = ("old_score", "new_score", "delta", "edit_pct", "held_out_score")
_JSON = ("scores", "evidence")


class Status(StrEnum):
    """What one row records (the design's five)."""

    BASELINE = "baseline"
    KEEP = "keep"
    REVERT = "revert"
    SKIP = "skip"
    ERROR = "error"


class RowKind(StrEnum):
    """Which loop wrote a row: the rubric's ratchet, or routing rounds."""

    RUBRIC = "rubric"
    ROUTING = "routing"


ROUTING_DIM = "routing"  # dim_changed of a routing round


class Stop(StrEnum):
    """Why a skill's loop (or its turn in the run) ended: one spelling each."""

    MAX_ROUNDS = "max_rounds"  # every round was used
    CEILING = "ceiling"  # two kept rounds in a row under +2
    BOTTLENECK = "bottleneck"  # a confident non-improvement: the edits no longer help
    NO_EDIT = "no_edit"  # no dimension has an edit left to try
    PROPOSER_UNAVAILABLE = "proposer_unavailable"  # the editor model could not be reached
    BUDGET = "budget"  # the run's LLM budget is spent
    DISAGREEMENT = "disagreement"  # a person turned down an edit the judges disagreed on
    REVIEW_BLOCKED = "review_blocked"  # the review gate has an open P0 (or three P1)
    SAFETY_VETO = "safety_veto"  # a Safety red line: the skill is frozen
    USER_REJECTED = "user_rejected"  # a person restored the original at the skill's checkpoint
    REWRITE_NOT_BETTER = "rewrite_not_better"  # Phase 2.5's rewrite did not beat the saved best
    ROI = "roi"  # skipped by the ROI precheck
    FROZEN = "frozen"
    PAUSED = "paused"  # an alert paused it: measured this run, not edited
    UNREADABLE = "unreadable"


STATUSES = tuple(s.value for s in Status)


class InvalidRow(ValueError):
    pass


@dataclass(frozen=True)
class ResultRow:
    timestamp: str
    skill: str
    round: int
    status: str
    mode: str
    commit: str = ""
    old_score: float | None = None
    new_score: float | None = None
    dim_changed: str = ""
    delta: float | None = None
    note: str = ""
    eval_mode: str = ""
    judge_count: int | None = None
    edit_pct: float | None = None
    scores: dict[str, float | None] | None = None
    held_out_score: float | None = None
    stop: str = ""
    samples: str = ""
    bound: float | None = None
    llm_calls: int | None = None
    evidence: dict[str, Any] | None = None

    @property
    def kind(self) -> RowKind:
        return RowKind.ROUTING if self.dim_changed == ROUTING_DIM else RowKind.RUBRIC

    def __post_init__(self) -> None:
        if self.stop and self.stop not in {s.value for s in Stop}:
            raise InvalidRow(f"stop {self.stop!r} is not one of {', '.join(s.value for s in Stop)}")
        if self.status not in STATUSES:
            raise InvalidRow(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        if self.eval_mode and self.eval_mode not in EVAL_MODES:
            raise InvalidRow(f"eval_mode {self.eval_mode!r} is not one of {', '.join(EVAL_MODES)}")
        if self.mode not in ("quick", "full"):
            raise InvalidRow(f"mode {self.mode!r} is not quick or full")

    def to_line(self) -> str:
        return "\t".join(_cell(name, getattr(self, name)) for name in COLUMNS)

    @classmethod
    def from_cells(cls, cells: list[str]) -> ResultRow:
        """A row of the current layout, or of the design's sixteen columns (a file written before Luban's own)."""
        if len(cells) not in (len(COLUMNS), len(DESIGN_COLUMNS)):
            raise InvalidRow(f"{len(cells)} columns, expected {len(COLUMNS)} (or {len(DESIGN_COLUMNS)} in an older file)")
        raw = dict(zip(COLUMNS, cells, strict=False))
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            value = raw.get(f.name, "")
            if f.name == "bound" or f.name in _ONE_DECIMAL:
                kwargs[f.name] = float(value) if value else None
            elif f.name in ("round", "judge_count", "llm_calls"):
                kwargs[f.name] = int(value) if value else (0 if f.name == "round" else None)
            elif f.name in _JSON:
                kwargs[f.name] = json.loads(value) if value else None
            else:
                kwargs[f.name] = value
        return cls(**kwargs)


def now_stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if name in _ONE_DECIMAL or name == "bound":
        number = float(value)
        if not math.isfinite(number):
            raise InvalidRow(f"{name} must be a finite number, got {value!r}")
        return f"{number:.1f}" if name in _ONE_DECIMAL else f"{number:.2f}"
    if name in _JSON:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    text = str(value)
    return " ".join(text.replace("\t", " ").splitlines())  # a cell never holds a tab or a line break


@dataclass(frozen=True)
class Repair:
    backup: Path
    kept: int
    dropped: int

    def message(self, path: Path) -> str:
        return (f"{path} was damaged: rebuilt it with the header and {self.kept} row(s) that could still be read "
                f"({self.dropped} line(s) could not); the original is kept at {self.backup}")


def _parse(data: bytes) -> tuple[list[ResultRow], int, bool]:
    """(rows that read, lines that did not, whether the file is exactly as Luban writes it).

    A last line without its newline is torn: it is never trusted (a cut-off
    "12.5" would read as 12.0), so it counts as unreadable and stays in the backup.
    """
    clean = _decodes(data)
    lines = data.decode("utf-8", errors="replace").split("\n")
    torn = lines.pop() != ""
    if lines and lines[0] in (HEADER, _OLD_HEADER):
        body = lines[1:]
        clean = clean and lines[0] == HEADER  # an older header is rewritten (upgraded) on the next append
    else:
        clean = False
        body = lines[1:] if lines and lines[0].startswith("timestamp\t") else lines
    rows, bad = [], int(torn)
    for line in body:
        try:
            rows.append(ResultRow.from_cells(line.split("\t")))
        except (InvalidRow, ValueError, TypeError):
            bad += 1
    return rows, bad, clean and bad == 0


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


class ResultsFile:
    def __init__(self, path: Path, ops: FileOps = DEFAULT_OPS):
        self.path, self.ops = path, ops

    def ensure(self) -> Repair | None:
        """Create the file with its header, or repair it; returns what a repair did."""
        if not self.path.exists():
            atomic_write(self.path, HEADER + "\n", self.ops)
            return None
        data = self.path.read_bytes()
        rows, bad, clean = _parse(data)
        if clean:
            return None
        if bad == 0 and data.startswith((_OLD_HEADER + "\n").encode()):  # the design's layout: add Luban's columns
            atomic_write(self.path, HEADER + "\n" + "".join(r.to_line() + "\n" for r in rows), self.ops)
            return None
        return self._rebuild(rows, bad)

    def _rebuild(self, rows: list[ResultRow], bad: int) -> Repair:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M")
        backup = self.path.with_name(f"{self.path.name}.bak.{stamp}")
        n = 2
        while backup.exists():
            backup = self.path.with_name(f"{self.path.name}.bak.{stamp}-{n}")
            n += 1
        shutil.copyfile(self.path, backup)
        atomic_write(self.path, HEADER + "\n" + "".join(r.to_line() + "\n" for r in rows), self.ops)
        return Repair(backup, len(rows), bad)

    def rows(self, kind: RowKind | None = RowKind.RUBRIC) -> list[ResultRow]:
        """The rows of one kind (the rubric's by default; None: every row as written)."""
        if not self.path.exists():
            return []
        rows = _parse(self.path.read_bytes())[0]
        return rows if kind is None else [r for r in rows if r.kind is kind]

    def append(self, row: ResultRow) -> Repair | None:
        """Add one row with a single atomic replace (repairing a damaged file first)."""
        repair = self.ensure()
        current = self.path.read_bytes()
        atomic_write(self.path, current + (row.to_line() + "\n").encode("utf-8"), self.ops)
        return repair

    def frame(self, kind: RowKind | None = RowKind.RUBRIC):
        """The rows of one kind as a pandas DataFrame (pandas is imported only here, never on the score path)."""
        import pandas as pd

        self.ensure()
        text = {c: str for c in ("commit", "note", "dim_changed", "stop", "samples", "evidence")}
        frame = pd.read_csv(self.path, sep="\t", dtype=text, keep_default_na=False,
                            na_values={c: [""] for c in (*_ONE_DECIMAL, "judge_count", "bound", "llm_calls")})
        if kind is None:
            return frame
        routing = frame["dim_changed"] == ROUTING_DIM
        return frame[routing if kind is RowKind.ROUTING else ~routing].reset_index(drop=True)


def routing_rows(routing_tsv: Path, results_tsv: Path) -> list[ResultRow]:
    """A skill's routing rounds in the order they ran: its routing.tsv, and any a results.tsv written before routing
    rounds had a file of their own still holds."""
    rows = ResultsFile(routing_tsv).rows(RowKind.ROUTING) + ResultsFile(results_tsv).rows(RowKind.ROUTING)
    return sorted(rows, key=lambda r: r.timestamp)

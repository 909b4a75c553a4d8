"""``results.tsv``: one row per attempt, the ratchet's source of truth.

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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from workspace.atomic import DEFAULT_OPS, FileOps, atomic_write

COLUMNS: tuple[str, ...] = (
    "timestamp", "commit", "skill", "round", "old_score", "new_score", "status", "dim_changed",
    "delta", "note", "eval_mode", "judge_count", "mode", "edit_pct", "scores", "held_out_score",
)
HEADER = "\t".join(COLUMNS)
STATUSES = ("baseline", "keep", "revert", "skip", "error")
EVAL_MODES = ("full_test", "dry_run", "fallback", "fallback_dry")
_ONE_DECIMAL = ("old_score", "new_score", "delta", "edit_pct", "held_out_score")


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

    def __post_init__(self) -> None:
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
        if len(cells) != len(COLUMNS):
            raise InvalidRow(f"{len(cells)} columns, expected {len(COLUMNS)}")
        raw = dict(zip(COLUMNS, cells))
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            value = raw[f.name]
            if f.name in _ONE_DECIMAL:
                kwargs[f.name] = float(value) if value else None
            elif f.name in ("round", "judge_count"):
                kwargs[f.name] = int(value) if value else (0 if f.name == "round" else None)
            elif f.name == "scores":
                kwargs[f.name] = json.loads(value) if value else None
            else:
                kwargs[f.name] = value
        return cls(**kwargs)


def now_stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if name in _ONE_DECIMAL:
        number = float(value)
        if not math.isfinite(number):
            raise InvalidRow(f"{name} must be a finite number, got {value!r}")
        return f"{number:.1f}"
    if name == "scores":
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
    if lines and lines[0] == HEADER:
        body = lines[1:]
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
        rows, bad, clean = _parse(self.path.read_bytes())
        if clean:
            return None
        return self._rebuild(rows, bad)

    def _rebuild(self, rows: list[ResultRow], bad: int) -> Repair:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
        backup = self.path.with_name(f"{self.path.name}.bak.{stamp}")
        n = 2
        while backup.exists():
            backup = self.path.with_name(f"{self.path.name}.bak.{stamp}-{n}")
            n += 1
        shutil.copyfile(self.path, backup)
        atomic_write(self.path, HEADER + "\n" + "".join(r.to_line() + "\n" for r in rows), self.ops)
        return Repair(backup, len(rows), bad)

    def rows(self) -> list[ResultRow]:
        if not self.path.exists():
            return []
        return _parse(self.path.read_bytes())[0]

    def append(self, row: ResultRow) -> Repair | None:
        """Add one row with a single atomic replace (repairing a damaged file first)."""
        repair = self.ensure()
        current = self.path.read_bytes()
        atomic_write(self.path, current + (row.to_line() + "\n").encode("utf-8"), self.ops)
        return repair

    def frame(self):
        """The rows as a pandas DataFrame (pandas is imported only here, never on the score path)."""
        import pandas as pd

        self.ensure()
        return pd.read_csv(self.path, sep="\t", dtype={"commit": str, "note": str, "dim_changed": str},
                           keep_default_na=False, na_values={c: [""] for c in _ONE_DECIMAL + ("judge_count",)})

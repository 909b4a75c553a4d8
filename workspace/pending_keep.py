"""A decided edit and its results row as one recoverable step.

Keeping an edit is two writes that no filesystem makes atomic together: the
kept version (a git commit, or the quick mode's ``SKILL.md.bak``) and its
``results.tsv`` row. Rejecting one is two as well: the entry in
``rejected_edits.md`` (written first, so the edit is never tried again) and the
row. The row is written here first, as pending, with what proves the decision
took effect: the SHA-256 of the text being kept, or of the edit being rejected.
After a kill anywhere in between, ``settle`` tells which side the run died on:
if the proof is on disk, the row is completed; if not, the decision never took
effect (the resume rolled the candidate back) and the pending row is dropped,
so the round runs again exactly as it would have.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workspace.atomic import atomic_write
from workspace.results_tsv import ResultRow, ResultsFile
from workspace.skill_source import SKILL_FILE


def pending_path(results_tsv: Path) -> Path:
    return results_tsv.with_name("pending-keep.json")


def text_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class PendingKeep:
    row: ResultRow  # a keep's row is complete but for the commit column, which only the keep itself can give
    kept_sha256: str = ""  # a keep: the text being kept
    rejected_sha256: str = ""  # a rejection: the edit going into rejected_edits.md
    file: str = SKILL_FILE  # the skill's file whose kept text ``kept_sha256`` is

    def save(self, results_tsv: Path) -> None:
        atomic_write(pending_path(results_tsv), json.dumps({"row": self.row.to_line().split("\t"),
                                                            "kept_sha256": self.kept_sha256,
                                                            "rejected_sha256": self.rejected_sha256,
                                                            "file": self.file}) + "\n")


def load(results_tsv: Path) -> PendingKeep | None:
    """The pending keep, or None. A torn file cannot exist (atomic writes); an unreadable one raises with its path."""
    path = pending_path(results_tsv)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return PendingKeep(ResultRow.from_cells(list(data["row"])), str(data["kept_sha256"]), str(data.get("rejected_sha256", "")),
                           str(data.get("file", SKILL_FILE)))
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a pending keep Luban wrote ({err}); move it away and resume again") from None


def clear(results_tsv: Path) -> None:
    pending_path(results_tsv).unlink(missing_ok=True)


def settle(results_tsv: Path, kept_of: Callable[[str], tuple[bytes | None, str]], rejected: set[str]) -> ResultRow | None:
    """Finish or drop a decision a kill interrupted; the row completed, or None when there was nothing to complete.

    ``kept_of(file)`` is what the ratchet holds as kept now of the pending decision's file (HEAD's blob, or the .bak)
    and the commit that holds it ("" in quick mode); ``rejected`` the SHA-256 of every edit in the skill's
    rejected_edits.md."""
    pending = load(results_tsv)
    if pending is None:
        return None
    kept_version, commit = kept_of(pending.file)
    completed = None
    results = ResultsFile(results_tsv)
    written = any(r.timestamp == pending.row.timestamp and r.round == pending.row.round and r.status == pending.row.status
                  for r in results.rows())
    kept = bool(pending.kept_sha256) and kept_version is not None and text_sha(kept_version) == pending.kept_sha256
    if kept and not written:
        completed = ResultRow(**{**vars(pending.row), "commit": commit})
    elif pending.rejected_sha256 and pending.rejected_sha256 in rejected and not written:
        completed = pending.row  # built after the decision, before anything was written: complete as it stands
    if completed is not None:
        results.append(completed)
    clear(results_tsv)
    return completed

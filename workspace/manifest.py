"""``version_manifest.json`` (full mode, one per run) and per-round backups with rotation.

The manifest is the audit trail of a run: every file Luban touched with its
SHA-256 before and after, when, and by whom, every checkpoint's answer, plus
what was pruned. It is rewritten atomically after every change, under a lock
(several skills' threads write it), so a crash loses at most the entry being
added.

Backups: ``<run backup dir>/<skill>/baseline.md`` and ``roundN-modified.md``.
Rotation keeps, per skill in a run, the baseline, round 1 and the latest five
rounds; older rounds move to ``<workspace>/<mode>/backups-archive/<skill>/<run>/``.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import os
import re
import shutil
import socket
import threading
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from workspace.atomic import atomic_write
from workspace.layout import Workspace
from workspace.skill_source import SKILL_FILE

KEEP_LATEST_ROUNDS = 5
_ROUND_FILE = re.compile(r"^round(\d+)-(?:modified|candidate)\.md$")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def operator() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = os.environ.get("USER", "unknown")
    return f"{user}@{socket.gethostname()}"


class TouchedFile(BaseModel):
    path: str
    sha256_before: str | None
    sha256_after: str | None
    at: str
    action: str


class Approval(BaseModel):
    checkpoint: str
    approved: bool
    answered_by: str
    at: str
    choice: str = ""
    comment: str = ""


class RunManifest(BaseModel):
    run_id: str
    mode: str
    started: str
    operator: str
    branch: str | None = None
    original: str | None = None  # the commit the run started from (what restore_original goes back to)
    base: str | None = None  # the branch the run started on: where its hand-off merges
    files: list[TouchedFile] = Field(default_factory=list)
    approvals: list[Approval] = Field(default_factory=list)
    pruned_backups: list[str] = Field(default_factory=list)
    pruned_rejected_edits: list[str] = Field(default_factory=list)


class ManifestWriter:
    def __init__(self, path: Path, manifest: RunManifest):
        self.path, self.manifest = path, manifest
        self._lock = threading.Lock()
        self._save()

    @classmethod
    def create(cls, run_dir: Path, mode: str, branch: str | None = None, original: str | None = None,
               base: str | None = None) -> ManifestWriter:
        manifest = RunManifest(run_id=run_dir.name, mode=mode, started=datetime.now(UTC).isoformat(),
                               operator=operator(), branch=branch, original=original, base=base)
        return cls(run_dir / "version_manifest.json", manifest)

    def touched(self, path: Path | str, before: bytes | None, after: bytes | None, action: str) -> None:
        with self._lock:
            self.manifest.files.append(TouchedFile(
                path=str(path), sha256_before=sha256(before) if before is not None else None,
                sha256_after=sha256(after) if after is not None else None,
                at=datetime.now(UTC).isoformat(), action=action,
            ))
            self._save()

    def approved(self, checkpoint: str, approved: bool, answered_by: str, choice: str = "", comment: str = "") -> None:
        with self._lock:
            self.manifest.approvals.append(Approval(checkpoint=checkpoint, approved=approved, answered_by=answered_by,
                                                    at=datetime.now(UTC).isoformat(), choice=choice, comment=comment))
            self._save()

    def pruned(self, backups: Sequence[str] = (), rejected: Sequence[str] = ()) -> None:
        with self._lock:
            self.manifest.pruned_backups += list(backups)
            self.manifest.pruned_rejected_edits += list(rejected)
            self._save()

    @classmethod
    def reopen(cls, path: Path) -> ManifestWriter:
        return cls(path, RunManifest.model_validate_json(path.read_text(encoding="utf-8")))

    def _save(self) -> None:
        atomic_write(self.path, self.manifest.model_dump_json(indent=2) + "\n")


def save_round_backup(run_dir: Path, skill: str, round_number: int, data: bytes, kind: str = "modified",
                      file: str = SKILL_FILE) -> Path:
    """``kind``: "modified" (the version a round ended with) or "candidate" (an edit saved before it is
    written, so a crash between writing and scoring leaves no version on disk that exists nowhere else); ``file``:
    the skill's file the data is (a candidate of a referenced file is saved under its path, / as __)."""
    name = "baseline.md" if round_number == 0 else f"round{round_number}-{kind}.md"
    if file != SKILL_FILE:
        name = f"round{round_number}-{kind}.{file.replace('/', '__')}"
    target = run_dir / skill / name
    atomic_write(target, data)
    return target


def rotate_backups(workspace: Workspace, run_dir: Path, skill: str) -> list[str]:
    """Keep baseline, round 1 and the latest five rounds; move the rest to the archive."""
    folder = run_dir / skill
    if not folder.is_dir():
        return []
    rounds = sorted(
        (int(m.group(1)), p) for p in folder.iterdir() if (m := _ROUND_FILE.match(p.name))
    )
    keep = {1} | {n for n, _ in rounds[-KEEP_LATEST_ROUNDS:]}
    archive = workspace.backups_archive(skill) / run_dir.name
    moved = []
    for number, path in rounds:
        if number in keep:
            continue
        archive.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), archive / path.name)
        moved.append(str(archive / path.name))
    return moved


def run_order(folder: Path) -> tuple[str, int]:
    """A run folder's place in time: its stamp, then its same-minute suffix as a number (``-10`` after ``-9``)."""
    stamp, suffix = folder.name[:13], folder.name[14:]  # YYYYMMDD-HHMM, then -N for the N-th run of that minute
    return stamp, int(suffix) if suffix.isdigit() else 1


def prune_evaluations(workspace: Workspace, current: Path, keep: int) -> list[str]:
    """Delete the folders of all but the newest ``keep`` evaluations (`luban evaluate`: their eval records), never
    ``current``; the paths deleted."""
    return prune_stamped(workspace.mode_dir / "evaluations", current, keep)


def prune_stamped(parent: Path, current: Path, keep: int) -> list[str]:
    """Delete all but the newest ``keep`` stamped folders under ``parent`` (never ``current``); the paths deleted."""
    folders = sorted((p for p in parent.iterdir() if p.is_dir()), key=run_order) if parent.is_dir() else []
    doomed = [f for f in folders[:-keep] if f.resolve() != current.resolve()] if keep > 0 else []
    for folder in doomed:
        shutil.rmtree(folder)
    return [str(f) for f in doomed]


AUDIT_FILES = ("version_manifest.json", "*/baseline.md")  # what a pruned run leaves: its audit trail, the originals


def audit_archive(workspace: Workspace, run: str) -> Path:
    """Where a pruned run's audit trail is kept: ``<mode>/audit/<run>.zip``, for as long as the workspace."""
    return workspace.mode_dir / "audit" / f"{run}.zip"


def _archive_audit(workspace: Workspace, folder: Path) -> None:
    """The run's manifest (every file touched, with hashes, and every approval) and each skill's text as the run
    found it, into one compressed zip, written whole before the folder goes (a crash leaves the folder, or both)."""
    members = sorted({m for pattern in AUDIT_FILES for m in folder.glob(pattern) if m.is_file()})
    if not members:
        return
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in members:
            archive.write(member, member.relative_to(folder).as_posix())
    atomic_write(audit_archive(workspace, folder.name), buffer.getvalue())


def prune_runs(workspace: Workspace, current: Path, keep: int) -> list[str]:
    """Delete the backup folders of all but the newest ``keep`` runs (never ``current``), with their archived rounds;
    the paths deleted. Each run's audit trail — its manifest with the approvals, and each skill's original text —
    is kept first in ``audit/<run>.zip`` (``audit_archive``): the records (results.tsv, rejected edits, the git
    history) cite them for as long as they last, and in quick mode, which has no git, the original is nowhere else."""
    folders = sorted((p for p in workspace.backups().iterdir() if p.is_dir()), key=run_order) \
        if workspace.backups().is_dir() else []
    doomed = [f for f in folders[:-keep] if f.resolve() != current.resolve()] if keep > 0 else []
    for folder in doomed:
        _archive_audit(workspace, folder)
        shutil.rmtree(folder)
        for archived in workspace.backups_archive_root().glob(f"*/{folder.name}"):
            shutil.rmtree(archived)
    return [str(f) for f in doomed]

"""What a run does beyond its skill files, behind one object every phase is given: results rows, the design's events,
a person asked at a checkpoint, warnings for the log, the notices its summary and report list, and the changes it
makes to the workspace's profile (luban-profile.json: skills frozen, edit budgets tightened).

The flows give ``flows.ratchet.effects.PrefectEffects`` (rows through a retried Prefect task, events Automations
match, checkpoints in the Prefect UI or the terminal). ``DirectEffects`` does the same with no Prefect server: rows
appended directly, events and warnings kept in lists, each checkpoint answered by a function (by default the safe
answer approval=auto gives) — so the ratchet's decisions and their effects run, and are tested, on their own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from flows.interaction.approvals import AnsweredBy, Approval, Decision
from flows.interaction.events import EVENTS
from workspace import profile as profile_store
from workspace.profile import LubanProfile
from workspace.results_tsv import Repair, ResultRow, ResultsFile


class Effects(Protocol):
    def write_row(self, results_tsv: Path, row: ResultRow) -> Repair | None:
        """Append one results.tsv row (one atomic write); the repair made to the file first, if any."""

    def emit(self, event: str, skill: str, payload: dict[str, Any]) -> None:
        """One of the design's L4 events (flows/interaction/events.py)."""

    def ask(self, key: str, summary: str, approval: Approval, on_suspend: Callable[[str], None], **kwargs: Any) -> Decision:
        """A 🔴 checkpoint under ``key`` (unique in the run); ``kwargs`` as ``flows.interaction.checkpoints.checkpoint``."""

    def warn(self, message: str, *args: object) -> None:
        """A warning for the run's log (%-style, as logging takes it)."""

    def read_profile(self, path: Path) -> LubanProfile:
        """luban-profile.json as it stands (other runs and this run's skills' threads write it)."""

    def update_profile(self, path: Path, change: Callable[[LubanProfile], None]) -> LubanProfile:
        """luban-profile.json read, changed and rewritten under its lock (other runs share it); the profile after."""

    def notice(self, *texts: str) -> None:
        """Something the person reading the run's summary and report should know (a skill skipped, a fallback)."""

    def notices(self) -> tuple[str, ...]:
        """Every notice so far, in the order given."""

    def checkpoint_key(self, name: str) -> str:
        """The key the checkpoint ``name`` is asked under this time (``CheckpointKeys``)."""


class Notices:
    """The run's notices: skills' rounds add theirs from threads side by side (--parallel), so every access holds
    the lock and readers get a copy."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._lock = threading.Lock()

    def add(self, texts: tuple[str, ...]) -> None:
        with self._lock:
            self._texts.extend(texts)

    def all(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._texts)


class CheckpointKeys:
    """Each checkpoint's key, unique in the run: its name, then ``name#2``, ``name#3`` as it is asked again. Counted
    in the order asked, so the same path gives the same keys when a suspended run is executed again; skills' threads
    ask through the same counter (their names carry the skill, so their order does not change a key)."""

    def __init__(self) -> None:
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()

    def next(self, name: str) -> str:
        with self._lock:
            count = self._asked[name] = self._asked.get(name, 0) + 1
        return name if count == 1 else f"{name}#{count}"


class KeptHere:
    """What every Effects does the same way in this process: notices kept, checkpoint keys counted, the profile read
    from its file and updated under its lock."""

    noted: Notices
    keys: CheckpointKeys

    def checkpoint_key(self, name: str) -> str:
        return self.keys.next(name)

    def read_profile(self, path: Path) -> LubanProfile:
        return profile_store.load(path)

    def update_profile(self, path: Path, change: Callable[[LubanProfile], None]) -> LubanProfile:
        return profile_store.update(path, change)

    def notice(self, *texts: str) -> None:
        self.noted.add(texts)

    def notices(self) -> tuple[str, ...]:
        return self.noted.all()


def safe_default(key: str, summary: str, kwargs: dict[str, Any]) -> Decision:
    """The answer approval=auto gives: the checkpoint's safe default."""
    return Decision(kwargs.get("default_approve", True), kwargs.get("default_choice", ""), "auto-approved (no Prefect)",
                    AnsweredBy.AUTO)


@dataclass
class DirectEffects(KeptHere):
    answer: Callable[[str, str, dict[str, Any]], Decision] = safe_default
    events: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    noted: Notices = field(default_factory=Notices)
    keys: CheckpointKeys = field(default_factory=CheckpointKeys)

    def write_row(self, results_tsv: Path, row: ResultRow) -> Repair | None:
        return ResultsFile(results_tsv).append(row)

    def emit(self, event: str, skill: str, payload: dict[str, Any]) -> None:
        if event not in EVENTS:
            raise ValueError(f"unknown Luban event {event!r}")
        self.events.append((event, skill, payload))

    def ask(self, key: str, summary: str, approval: Approval, on_suspend: Callable[[str], None], **kwargs: Any) -> Decision:
        return self.answer(key, summary, kwargs)

    def warn(self, message: str, *args: object) -> None:
        self.warnings.append(message % args if args else message)
        logging.getLogger("luban").warning(message, *args)

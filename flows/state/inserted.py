"""The lines kept edits inserted, run-wide: what the boilerplate rule reads while skills' rounds run side by side."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass
class InsertedBlocks:
    """Each line a kept edit inserted (normalized) → the first skill it went into.

    Skills' rounds run in threads (--parallel) and each reads the whole mapping
    when it checks a proposal while another adds the lines of its keep: every
    access holds the lock, and readers get a copy, never the live dict.
    """

    _owners: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, units: Iterable[str], skill: str) -> None:
        with self._lock:
            for unit in units:
                self._owners.setdefault(unit, skill)

    def snapshot(self) -> dict[str, str]:
        with self._lock:
            return dict(self._owners)

    def of(self, skill: str) -> list[str]:
        """The lines this skill's keeps were the first to insert, sorted."""
        with self._lock:
            return sorted(unit for unit, owner in self._owners.items() if owner == skill)

    def replace_all(self, owners: dict[str, str]) -> None:
        """What the run's commits say (a resume reads them back from git)."""
        with self._lock:
            self._owners = dict(owners)

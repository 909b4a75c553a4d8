"""Every sample a run took, by skill and text, and every fallback its measurements took: pure, thread-safe."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring.keep_decision import Measured, Noise, pooled, pooled_noise


def text_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass
class Ledger:
    """Every sample this run took, by skill and text, the next index of each kind of measurement, and every
    fallback its measurements took, by skill (a row shows those taken since the skill's previous row)."""

    texts: dict[tuple[str, str], Measured] = field(default_factory=dict)
    held_out: dict[tuple[str, str], tuple[float, ...]] = field(default_factory=dict)
    taken: dict[tuple[str, str, str], int] = field(default_factory=dict)
    fallbacks: dict[str, Counter[str]] = field(default_factory=dict)
    shown: dict[str, Counter[str]] = field(default_factory=dict)  # what the skill's rows have shown so far
    shown_run_wide: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def note_fallbacks(self, skill: str, kinds: Iterable[str]) -> None:
        with self._lock:
            self.fallbacks.setdefault(skill, Counter()).update(kinds)

    def fallbacks_for_row(self, skill: str) -> dict[str, int]:
        """The skill's fallbacks since its previous row (each is shown in exactly one row)."""
        with self._lock:
            new = self.fallbacks.get(skill, Counter()) - self.shown.get(skill, Counter())
            self.shown.setdefault(skill, Counter()).update(new)
        return dict(new)

    def unshown(self, run_wide: Iterable[str]) -> list[str]:
        """The run-wide fallbacks (a server's structured output stepped down) no row has shown yet: the next row,
        whichever skill's, shows them, once."""
        with self._lock:
            new = [line for line in run_wide if line not in self.shown_run_wide]
            self.shown_run_wide.update(new)
        return new

    def replace_fallbacks(self, skill: str, counts: dict[str, int]) -> None:
        """A fanned-out child's count for its skill (it began from the batch's baseline), already in its rows."""
        with self._lock:
            self.fallbacks[skill] = Counter(counts)
            self.shown[skill] = Counter(counts)

    def fallback_totals(self) -> dict[str, int]:
        with self._lock:
            return dict(sum(self.fallbacks.values(), Counter()))

    def next_index(self, kind: str, skill: str, text: str) -> int:
        key = (kind, skill, text_id(text))
        self.taken[key] = self.taken.get(key, -1) + 1
        return self.taken[key]

    def reserve_readings(self, skill: str, text: str, count: int) -> int:
        """The first of ``count`` null variants of the text no reading has used yet (scoring/null_variants.py):
        every judge call, dim8 measurement and held-out grade of a text reads a variant of its own."""
        key = ("readings", skill, text_id(text))
        first = self.taken.get(key, 0)
        self.taken[key] = first + count
        return first

    def add(self, skill: str, text: str, samples: Measured) -> Measured:
        key = (skill, text_id(text))
        self.texts[key] = self.texts.get(key, Measured()).plus(samples)
        return self.texts[key]

    def of(self, skill: str, text: str) -> Measured:
        return self.texts.get((skill, text_id(text)), Measured())

    def noise(self) -> dict[str, Noise]:
        return pooled_noise(self.texts.values())

    def add_held_out(self, skill: str, text: str, values: tuple[float, ...]) -> tuple[float, ...]:
        key = (skill, text_id(text))
        self.held_out[key] = self.held_out.get(key, ()) + values
        return self.held_out[key]

    def held_out_noise(self) -> Noise | None:
        return pooled(self.held_out.values())

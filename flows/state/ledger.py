"""Every sample a run took, by skill and text, and every fallback its measurements took: pure, thread-safe."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from scoring.keep_decision import Measured, Noise, pooled, pooled_noise


def text_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Ledger:
    """Every sample this run took, by skill and text, the next index of each kind of measurement, and every
    fallback its measurements took, by skill (a row shows those taken since the skill's previous row).

    Skills' rounds run in threads (--parallel, and a fanned-out batch taking its children's records back): one
    thread reads the judges' noise over every text while another adds samples. Every access holds the lock, and
    readers get copies, never the live dicts.

    A kept text is compared afterwards on the samples taken after its keep (``comparable``): the samples that decided
    the keep were read until they looked good enough, so they lean high (the winner's curse). Pooled into the next
    comparison they made every later edit look worse on the dimensions the keep raised, which read as a kept gain
    undone — a false oscillation guard. They still count for the run's totals and for the judges' noise.
    """

    def __init__(self) -> None:
        self._texts: dict[tuple[str, str], Measured] = {}
        self._since_kept: dict[tuple[str, str], Measured] = {}  # a kept text's samples taken after its keep
        self._first_files: dict[str, str] = {}  # skill → the digest of its other files when first measured
        self._held_out: dict[tuple[str, str], tuple[float, ...]] = {}
        self._taken: dict[tuple[str, str, str], int] = {}
        self._fallbacks: dict[str, Counter[str]] = {}
        self._shown: dict[str, Counter[str]] = {}  # what the skill's rows have shown so far
        self._shown_run_wide: set[str] = set()
        self._lock = threading.Lock()

    def note_fallbacks(self, skill: str, kinds: Iterable[str]) -> None:
        with self._lock:
            self._fallbacks.setdefault(skill, Counter()).update(kinds)

    def unshown_fallbacks(self, skill: str) -> dict[str, int]:
        """The skill's fallbacks no row of it has shown yet (each is shown in exactly one row: ``shown``)."""
        with self._lock:
            return dict(self._fallbacks.get(skill, Counter()) - self._shown.get(skill, Counter()))

    def unshown_run_wide(self, run_wide: Iterable[str]) -> list[str]:
        """The run-wide fallbacks (a server's structured output stepped down) no row has shown yet: the next row,
        whichever skill's, shows them, once."""
        with self._lock:
            return [line for line in run_wide if line not in self._shown_run_wide]

    def shown(self, skill: str, fallbacks: dict[str, int], run_wide: Iterable[str]) -> None:
        """A row that shows these fallbacks was written: no later row shows them again."""
        with self._lock:
            self._shown.setdefault(skill, Counter()).update(fallbacks)
            self._shown_run_wide.update(run_wide)

    def fallback_totals(self) -> dict[str, int]:
        with self._lock:
            return dict(sum(self._fallbacks.values(), Counter()))

    def next_index(self, kind: str, skill: str, text: str) -> int:
        key = (kind, skill, text_id(text))
        with self._lock:
            self._taken[key] = self._taken.get(key, -1) + 1
            return self._taken[key]

    def reserve_readings(self, skill: str, text: str, count: int) -> int:
        """The first of ``count`` null variants of the text no reading has used yet (scoring/null_variants.py):
        every judge call, dim8 measurement and held-out grade of a text reads a variant of its own."""
        key = ("readings", skill, text_id(text))
        with self._lock:
            first = self._taken.get(key, 0)
            self._taken[key] = first + count
        return first

    def add(self, skill: str, text: str, samples: Measured) -> Measured:
        key = (skill, text_id(text))
        with self._lock:
            self._texts[key] = self._texts.get(key, Measured()).plus(samples)
            if key in self._since_kept:
                self._since_kept[key] = self._since_kept[key].plus(samples)
            return self._texts[key]

    def version(self, skill: str, text: str, files_digest: str) -> str:
        """The name the ledger knows a version by: SKILL.md's text, followed by the digest of the skill's other files
        when they are not as this run first measured them (an edit of a referenced file leaves SKILL.md as it was,
        and is another version all the same)."""
        with self._lock:
            first = self._first_files.setdefault(skill, files_digest)
        return text if files_digest == first else f"{text}\0files:{files_digest}"

    def kept(self, skill: str, text: str) -> None:
        """``text`` was just kept: from now on it is compared on fresh samples (its exact dimensions carry over —
        computed, not read, they cannot lean)."""
        key = (skill, text_id(text))
        with self._lock:
            so_far = self._texts.get(key, Measured())
            self._since_kept[key] = Measured.of({d: so_far.samples(d) for d in so_far.exact}, so_far.exact)

    def comparable(self, skill: str, text: str) -> Measured:
        """The samples a keep decision may read of ``text``: all of them, or for a kept text those after its keep."""
        key = (skill, text_id(text))
        with self._lock:
            return self._since_kept.get(key, self._texts.get(key, Measured()))

    def of(self, skill: str, text: str) -> Measured:
        with self._lock:
            return self._texts.get((skill, text_id(text)), Measured())

    def noise(self) -> dict[str, Noise]:
        with self._lock:
            texts = list(self._texts.values())
        return pooled_noise(texts)

    def add_held_out(self, skill: str, text: str, values: tuple[float, ...]) -> tuple[float, ...]:
        key = (skill, text_id(text))
        with self._lock:
            self._held_out[key] = self._held_out.get(key, ()) + values
            return self._held_out[key]

    def held_out_of(self, skill: str, text: str) -> tuple[float, ...]:
        with self._lock:
            return self._held_out.get((skill, text_id(text)), ())

    def held_out_noise(self) -> Noise | None:
        with self._lock:
            values = list(self._held_out.values())
        return pooled(values)

    def record(self, skill: str) -> dict[str, Any]:
        """The skill's samples, indices and fallbacks as JSON: what a fanned-out child hands back (``replace``)."""
        with self._lock:
            return {"texts": [[tid, {"values": {d: list(v) for d, v in m.values}, "exact": sorted(m.exact)}]
                              for (s, tid), m in self._texts.items() if s == skill],
                    "since_kept": [[tid, {"values": {d: list(v) for d, v in m.values}, "exact": sorted(m.exact)}]
                                   for (s, tid), m in self._since_kept.items() if s == skill],
                    "held_out": [[tid, list(v)] for (s, tid), v in self._held_out.items() if s == skill],
                    "first_files": self._first_files.get(skill),
                    "taken": [[kind, tid, n] for (kind, s, tid), n in self._taken.items() if s == skill],
                    "fallbacks": dict(self._fallbacks.get(skill, {}))}

    def replace(self, skill: str, record: dict[str, Any]) -> None:
        """The skill's part replaced by a child's ``record`` (the child began from the batch's baseline samples, so
        its record holds them too); its fallbacks are already in the child's rows, so they count as shown."""
        with self._lock:
            self._texts = {k: v for k, v in self._texts.items() if k[0] != skill}
            self._since_kept = {k: v for k, v in self._since_kept.items() if k[0] != skill}
            self._held_out = {k: v for k, v in self._held_out.items() if k[0] != skill}
            self._taken = {k: v for k, v in self._taken.items() if k[1] != skill}
            self._texts.update({(skill, tid): Measured.of(m["values"], m["exact"]) for tid, m in record["texts"]})
            self._since_kept.update({(skill, tid): Measured.of(m["values"], m["exact"])
                                     for tid, m in record.get("since_kept", [])})
            self._held_out.update({(skill, tid): tuple(v) for tid, v in record["held_out"]})
            self._taken.update({(kind, skill, tid): n for kind, tid, n in record["taken"]})
            self._fallbacks[skill] = Counter(record.get("fallbacks", {}))
            if record.get("first_files"):
                self._first_files[skill] = record["first_files"]
            self._shown[skill] = Counter(record.get("fallbacks", {}))

"""Baseline (no-skill) outputs, cached on disk: they do not depend on the skill, so each is paid for once.

Keyed by (model, prompt, parameters); one JSON file per key under
``<workspace>/cache/baseline/``, written atomically, so a crash never leaves a
half entry and concurrent runs at worst compute the same entry twice.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path

from workspace.atomic import atomic_write


@dataclass(frozen=True)
class CachedOutput:
    output: str
    tokens_in: int
    tokens_out: int
    cut: bool = False  # the reply stopped at its cap (finish_reason 'length')
    seconds: float | None = None  # how long the answer took (None: cached before this was kept)


class BaselineCache:
    def __init__(self, directory: Path):
        self.directory = directory
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._computing: dict[str, threading.Lock] = {}

    def lock_for(self, model: str, prompt: str, parameters: dict) -> threading.Lock:
        """One lock per entry: two measurements of the same prompt at once compute its baseline once, not twice
        (the second waits, then finds it cached)."""
        with self._lock:
            return self._computing.setdefault(self.key(model, prompt, parameters), threading.Lock())

    @staticmethod
    def key(model: str, prompt: str, parameters: dict) -> str:
        material = json.dumps({"model": model, "prompt": prompt, "parameters": parameters}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(material.encode("utf-8")).hexdigest()

    def get(self, model: str, prompt: str, parameters: dict, count: bool = True) -> CachedOutput | None:
        path = self.directory / f"{self.key(model, prompt, parameters)}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            seconds = data.get("seconds")
            found = CachedOutput(str(data["output"]), int(data["tokens_in"]), int(data["tokens_out"]), data.get("cut") is True,
                                 float(seconds) if isinstance(seconds, (int, float)) else None)
        except (OSError, ValueError, KeyError, TypeError):
            found = None  # absent or damaged: recompute (a damaged entry is simply overwritten)
        if count:
            with self._lock:
                self.misses += found is None
                self.hits += found is not None
        return found

    def put(self, model: str, prompt: str, parameters: dict, value: CachedOutput) -> None:
        path = self.directory / f"{self.key(model, prompt, parameters)}.json"
        atomic_write(path, json.dumps({"model": model, "prompt": prompt, "parameters": parameters,
                                       "output": value.output, "tokens_in": value.tokens_in,
                                       "tokens_out": value.tokens_out, "cut": value.cut,
                                       "seconds": value.seconds}, ensure_ascii=False))

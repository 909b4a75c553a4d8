"""The ecosystem's eval records of one skill in a run's folder: ``evals/eval-<id>/<configuration>/grading.json`` per
case and ``evals/benchmark.json`` (skill-creator's layout, so its viewer and its authors' scripts read them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from workspace.atomic import atomic_write


def write_eval_outputs(folder: Path, gradings: dict[str, dict[str, dict[str, Any]]], benchmark: dict[str, Any]) -> None:
    """``gradings``: case id -> configuration -> grading; each file written whole or not at all."""
    for case, by_configuration in gradings.items():
        for configuration, grading in by_configuration.items():
            atomic_write(folder / f"eval-{_safe(case)}" / configuration / "grading.json", _json(grading))
    atomic_write(folder / "benchmark.json", _json(benchmark))


def _safe(case: str) -> str:
    """A case id as a folder name: an author's id may be any string."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", case).strip("._") or "case"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"

"""``void-replies.jsonl``: every model reply that gave no score, as received, one JSON object per line.

A judge whose reply was cut at its cap, quoted text the skill does not have or
held no JSON leaves its dimension unscored (never a zero); the reply itself is
the evidence a person needs to see why, so it is kept here, beside the skill's
``results.tsv``, and the row that used the measurement names the count. Each
append is one atomic rewrite, so a crash leaves the file as it was or with the
new lines, never half a line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workspace.atomic import atomic_write

# One process measures a skill's texts in several threads (evaluation and re-measurements side by side), and each
# append rewrites the file: they take turns. Runs in other processes never share a workspace (the workspace lock).
_APPENDING = threading.Lock()


def append(path: Path, entries: Iterable[dict[str, Any]]) -> int:
    """Add ``entries`` (each a JSON object: skill, who, kind, reason, raw); how many were added."""
    lines = [json.dumps(entry, ensure_ascii=False, sort_keys=True) for entry in entries]
    if not lines:
        return 0
    with _APPENDING:
        current = path.read_bytes() if path.exists() else b""
        atomic_write(path, current + ("\n".join(lines) + "\n").encode("utf-8"))
    return len(lines)


def load(path: Path) -> list[dict[str, Any]]:
    """The entries, oldest first; a line that is not a JSON object (a hand edit) is skipped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out

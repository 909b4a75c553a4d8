"""Oscillation: a kept change undone. The evidence is the keep decision's, and kept edits only.

A dimension oscillates in a skill when a kept edit *established* a gain on it (its evidence: the gain's lower
bound above 0) and the edits kept after it lowered it again beyond noise: their differences on that dimension add
up to at least the established part of the gain, and the sum's upper bound is below 0: each difference's own margin
(its recorded upper bound minus its Δ — the keep decision's, with the df its se was estimated from), added in
quadrature. A bound recomputed as z·se once put a neutral edit's −0.6 down as a gain undone: its se (0.12) came from
three df, and the keep decision's own upper bound for it was +0.47. A rejected
candidate's means say nothing here — under any judge noise every dimension's recorded score moves both ways, which
is what put every judged dimension under a guard after one run when this read the rows' scores.

Only the skill's last ``window`` runs are read, so a guard that expired (workspace/holds.py) is not put back by the
evidence that made it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from scoring.keep_values import JUDGE_DIMS
from scoring.samples import quantile

WINDOW = 5  # runs of a skill read for oscillation; as long as a guard lasts (workspace/profile.py GUARD_RUNS)
ALPHA = 0.05 / (len(JUDGE_DIMS) + 1)  # one-sided, over the judged dimensions and dim8


def _dims(cell: object) -> dict[str, dict]:
    try:
        evidence = json.loads(cell) if isinstance(cell, str) and cell else (cell if isinstance(cell, dict) else {})
    except ValueError:
        return {}
    dims = evidence.get("dims") if isinstance(evidence, dict) else None
    return dims if isinstance(dims, dict) else {}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value == value else None


def undone_gains(kept: Iterable[dict[str, dict]]) -> set[str]:
    """The dimensions whose established gain the kept edits after it undid beyond noise (``kept``: each kept edit's
    evidence per dimension, in order)."""
    edits = list(kept)
    found: set[str] = set()
    for index, edit in enumerate(edits):
        for dim, seen in edit.items():
            lower = _number(seen.get("lower"))
            if seen.get("status") != "gain" or _number(seen.get("se")) is None or lower is None or lower <= 0:
                continue  # an exact dimension cannot be undone by a keep: its loss vetoes the keep
            later = [e[dim] for e in edits[index + 1:] if dim in e and _number(e[dim].get("delta")) is not None
                     and _number(e[dim].get("se")) is not None]
            total = sum(float(e["delta"]) for e in later)
            margin = math.sqrt(sum(_margin(e) ** 2 for e in later))
            if later and total <= -lower and total + margin < 0:
                found.add(dim)
    return found


def _margin(seen: dict) -> float:
    """How far above its Δ a difference may truly lie: its recorded upper bound's margin, else t (or z) × se."""
    delta, upper, df = float(seen["delta"]), _number(seen.get("upper")), _number(seen.get("df"))
    if upper is not None:
        return max(upper - delta, 0.0)
    return quantile(ALPHA, int(df) if df is not None and df >= 1 else None) * float(seen["se"])


def oscillations(frame, window: int) -> dict[str, tuple[str, ...]]:
    """dim → the skills in which it oscillated, over each skill's last ``window`` runs of results.tsv rows."""
    by_dim: dict[str, set[str]] = {}
    for skill, group in frame.groupby("skill", sort=True):
        runs = (group["status"] == "baseline").cumsum()
        recent = group[runs > runs.max() - window]
        kept = recent[recent["status"] == "keep"]
        cells = kept.get("evidence", [])
        for dim in undone_gains(_dims(cell) for cell in cells):
            by_dim.setdefault(dim, set()).add(str(skill))
    return {dim: tuple(sorted(skills)) for dim, skills in sorted(by_dim.items())}

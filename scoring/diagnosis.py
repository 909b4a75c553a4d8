"""Phase 2 diagnosis: which dimension to work on next.

Weakness depth = (10 − score) × weight. The design's HL-3: dim2, dim3 and dim4
are a correlated cluster (fixing failure handling lifts the workflow score and
brings a checkpoint along), so when the cluster's combined depth beats every
other dimension, its members go first. Dimensions in ``oscillation_guard`` are
skipped; dimensions with a known high-yield pattern (from the meta-review) get
a 10 % preference. Unscored and full-marks dimensions are never chosen.
"""

from __future__ import annotations

from scoring.model import SkillScore

CLUSTER = ("dim2", "dim3", "dim4")
PREFERENCE = 1.10


def diagnose(score: SkillScore, guarded: frozenset[str] = frozenset(), preferred: frozenset[str] = frozenset(),
             exclude: frozenset[str] = frozenset()) -> list[str]:
    """Dimensions to try, most worthwhile first."""
    depth: dict[str, float] = {}
    for dim in score.dims:
        if dim.score is None or dim.score >= 10 or dim.dim in guarded or dim.dim in exclude:
            continue
        depth[dim.dim] = (10 - dim.score) * dim.weight * (PREFERENCE if dim.dim in preferred else 1.0)
    order = sorted(depth, key=lambda d: (-depth[d], d))
    cluster = [d for d in order if d in CLUSTER]
    others = [d for d in order if d not in CLUSTER]
    if cluster and sum(depth[d] for d in cluster) > (depth[others[0]] if others else 0):
        return cluster + others
    return order

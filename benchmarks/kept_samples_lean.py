"""The winner's curse of a sequential keep: how high the samples that decided a keep lean, by dimension.

Usage: .venv/bin/python benchmarks/kept_samples_lean.py [--decisions 400] [--seed 3]

No flow, no server: keep decisions are made as in ``keep_policy_sim.py`` (the same simulated judges, σ = 1, Gaussian;
half the edits neutral, half helpful by one true point). For every kept candidate, the samples that decided its keep
are set against as many fresh samples of the same text: the mean difference, per dimension, with its 95 % interval
and the number of keeps behind it. A difference above 0 is the lean the next decision would inherit if it pooled
those samples into the kept text's: flows/state/ledger.py compares a kept text on its later samples only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from keep_policy_sim import EFFECT_DIMS, Judge, KeepPolicy, Measured, Verdict, decide, measure, next_samples, pooled_noise, random_text

DIMS = ("dim2", "dim3", "dim5", "dim6", "dim8")


def kept_candidate(rng: random.Random, policy: KeepPolicy) -> tuple[Measured, Measured] | None:
    """One decision; for a keep, (the samples that decided it, fresh samples of the kept text taken the same way)."""
    judge = Judge(1.0, "gauss", rng)
    before = random_text(rng, 1.0, "gauss")
    effect = rng.choice(EFFECT_DIMS)
    after = before if rng.random() < 0.5 else before.moved(effect, 1.0)
    target = "dim8" if effect == "accuracy" else effect
    others = [measure(judge, t, 2, True).plus(measure(judge, t, 2, True))
              for t in (random_text(rng, 1.0, "gauss") for _ in range(3))]
    incumbent = measure(judge, before, 2, True, exact=True).plus(measure(judge, before, policy.judges_per_step, False))
    candidate = measure(judge, after, 2, True, exact=True)
    for look in range(1, policy.max_looks + 1):
        decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate, *others]), target, look, policy)
        plan = next_samples(decision, incumbent, candidate, policy)
        if decision.verdict is not Verdict.MORE or plan.empty:
            break
        candidate = candidate.plus(measure(judge, after, plan.candidate_judges, plan.candidate_dim8))
        incumbent = incumbent.plus(measure(judge, before, plan.incumbent_judges, plan.incumbent_dim8))
    if decision.verdict is not Verdict.KEEP:
        return None
    fresh = Measured()
    for _ in range(max(candidate.n("dim2") // 2, 1)):
        fresh = fresh.plus(measure(judge, after, 2, True))
    return candidate, fresh


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=int, default=400)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    rng, policy = random.Random(args.seed), KeepPolicy()
    lean: dict[str, list[float]] = {d: [] for d in DIMS}
    keeps = 0
    for _ in range(args.decisions):
        found = kept_candidate(rng, policy)
        if found is None:
            continue
        keeps += 1
        deciding, fresh = found
        for dim in DIMS:
            a, b = deciding.mean(dim), fresh.mean(dim)
            if a is not None and b is not None:
                lean[dim].append(a - b)
    print(f"{keeps} keeps of {args.decisions} decisions (seed {args.seed}, σ = 1, Gaussian)")
    print("dimension | deciding samples − fresh samples of the kept text | 95 % interval | keeps")
    for dim, values in lean.items():
        if len(values) < 2:
            continue
        mean, half = statistics.mean(values), 1.96 * statistics.stdev(values) / len(values) ** 0.5
        print(f"{dim:>9} | {mean:+.3f} | [{mean - half:+.3f}, {mean + half:+.3f}] | {len(values)}")


if __name__ == "__main__":
    main()

"""The keep decision alone, under simulated judge noise: false-keep and true-keep rates, and calls per decision.

Usage: .venv/bin/python benchmarks/keep_policy_sim.py [--decisions 600] [--seed 7] [--noise gauss|heavy|text-bias] [--whole]

No flow, no server: ``scoring.keep_decision`` decides while a simulated
panel measures the way the ratchet does (the candidate's full evaluation —
two judge calls and dim8 over three test prompts — plus fresh judge calls on
the incumbent; then what ``next_samples`` asks for, up to the cap). Each
simulated judge call returns, per dimension, the text's true quality plus
noise, clamped to [1, 10], to two decimals (``--whole``: in whole points,
as an LLM answers); the dim8 grader returns Accuracy, Safety and Compliance per prompt with
the same noise, and dim8 is the rubric's formula of them, vetoes included.

Edits are neutral (no true change), helpful (+1 true point on one dimension)
or harmful (−1). "Truly better" means the true total rose. The noise models:
``gauss`` N(0, σ) (the one the policy's defaults were chosen on, seed 5),
``heavy`` Student t with 3 df scaled to σ, not used to choose anything; and
``text-bias``, a judge that likes some wordings better than others whatever
they say (a bias of σ/2 per text, shared by all its calls). No amount of
measuring tells such a bias from quality — the judge's opinion of the new text
really is different — so that row shows the limit of any keep rule that reads
one judge model, not a defect of this one: a second, different judge model
(LUBAN_JUDGE_MODEL_2) is the remedy.

``benchmarks/judge_noise.py`` measures the same through the real flow and a
loopback server; this script is the fast one for sweeping σ and seeds.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared import rate

from scoring.dim8 import SubScores, dim8_score
from scoring.keep_decision import JUDGE_DIMS, KeepPolicy, Measured, Verdict, decide, next_samples, pooled_noise
from scoring.model import WEIGHTS
from scoring.samples import BASELINE

EXACT = {"dim1": 10.0, "dim4": 5.0, "dim7": 8.0, "dim9": 7.0, "dim10": 10.0}
PROMPTS = 3
EFFECT_DIMS = (*JUDGE_DIMS, "accuracy")


@dataclass(frozen=True)
class Text:
    """A text's true quality: the four judged dimensions and dim8's Accuracy; a per-text judge bias (text-bias)."""

    quality: tuple[tuple[str, float], ...]
    bias: float = 0.0
    baseline: float = 5.0  # the bare model's true Accuracy on the text's requests (--near: within a point below)

    def q(self, name: str) -> float:
        return dict(self.quality)[name]

    def moved(self, name: str, by: float) -> Text:
        return Text(tuple((k, v + by if k == name else v) for k, v in self.quality), self.bias, self.baseline)

    def true_total(self) -> float:
        sub = SubScores(min(10, max(0, self.q("accuracy"))), 9.5, 9.3, self.baseline)
        dim8 = dim8_score(sub, "full_test", 0).score or 0.0  # the truth is exact: its veto holds as it is
        judged = sum(WEIGHTS[d] * self.q(d) for d in JUDGE_DIMS)
        return (judged + WEIGHTS["dim8"] * dim8 + sum(WEIGHTS[d] * v for d, v in EXACT.items())) / 10


# The noise models of benchmarks/judge_noise.py, as (σ per call, σ per text) for a σ of 1: a judge at temperature
# 0 reads one text the same way every time (per text), or differently on every call (per call), or both (mixed).
MODELS = {"iid": (1.0, 0.0), "text": (0.0, 1.0), "mixed": (0.5, 0.7)}


class Judge:
    """``variants``: every reading of a text is of a fresh null variant of it (what the ratchet does), so a judge
    that reads each text with a fixed offset draws a new offset per reading; without, one offset per text."""

    def __init__(self, sigma: float, noise: str, rng: random.Random, whole: bool = False, variants: bool = True):
        self.sigma, self.noise, self.rng, self.whole, self.variants = sigma, noise, rng, whole, variants
        self.calls = 0
        self.offsets: dict[tuple[int, int, str], float] = {}
        self.read: dict[int, int] = {}

    def _e(self) -> float:
        if self.sigma == 0:
            return 0.0
        if self.noise == "heavy":  # t(3) has variance 3: scale to σ
            z = self.rng.gauss(0, 1) / math.sqrt(sum(self.rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
            return self.sigma * z / math.sqrt(3)
        return self.rng.gauss(0, self.sigma * MODELS.get(self.noise, (1.0, 0.0))[0])

    def _variant(self, text: Text) -> int:
        index = self.read.get(id(text), 0)
        self.read[id(text)] = index + 1 if self.variants else 0
        return index

    def _offset(self, text: Text, variant: int, what: str) -> float:
        """The judge's fixed reading of this variant of the text (the same on every call that reads it)."""
        per_text = MODELS.get(self.noise, (1.0, 0.0))[1] * self.sigma
        key = (id(text), variant, what)
        if key not in self.offsets:
            self.offsets[key] = self.rng.gauss(0, per_text) if per_text else 0.0
        return self.offsets[key]

    def judge(self, text: Text) -> dict[str, float]:
        self.calls += 1
        variant = self._variant(text)
        digits = 0 if self.whole else 2  # an LLM answers in whole points; a synthetic judge as it computes
        return {d: float(min(10, max(1, round(text.q(d) + text.bias + self._offset(text, variant, d) + self._e(), digits))))
                for d in JUDGE_DIMS}

    def dim8(self, text: Text) -> float:
        self.calls += 2 * PROMPTS  # a with-skill run and a grade per prompt (baselines are cached)
        v = self._variant(text)

        def read(value: float, what: str) -> float:
            return min(10, max(0, value + self._offset(text, v, what) + self._e()))

        grades = [(read(text.q("accuracy") + text.bias, f"accuracy{p}"), read(text.baseline, f"baseline{p}"), read(9.5, f"safety{p}"),
                   read(9.3, f"compliance{p}")) for p in range(PROMPTS)]
        sub = SubScores(sum(g[0] for g in grades) / PROMPTS, min(g[2] for g in grades), sum(g[3] for g in grades) / PROMPTS,
                        sum(g[1] for g in grades) / PROMPTS)
        self.parts = {"dim8.accuracy": sub.accuracy, "dim8.safety": sub.safety, "dim8.compliance": sub.compliance,
                      BASELINE: sub.baseline_accuracy or 0.0}
        return dim8_score(sub, "full_test", 1).score or 0.0


def measure(judge: Judge, text: Text, judges: int, dim8: bool, exact: bool = False) -> Measured:
    values: dict[str, list[float]] = {d: [] for d in JUDGE_DIMS}
    for _ in range(judges):
        for d, v in judge.judge(text).items():
            values[d].append(v)
    if dim8:
        values["dim8"] = [judge.dim8(text)]
        values.update({part: [value] for part, value in judge.parts.items()})  # the sub-scores, as judges/sampling.py
    if exact:
        values.update({d: [v] for d, v in EXACT.items()})
    return Measured.of(values, EXACT if exact else ())


def random_text(rng: random.Random, sigma: float, noise: str, near: bool = False) -> Text:
    quality = (*tuple((d, rng.uniform(4, 8)) for d in JUDGE_DIMS), ("accuracy", rng.uniform(6, 8.5)))
    baseline = quality[-1][1] - rng.uniform(0, 1) if near else 5.0
    return Text(quality, rng.gauss(0, sigma / 2) if noise == "text-bias" else 0.0, baseline)


def one_decision(rng: random.Random, sigma: float, noise: str, kind: str, policy: KeepPolicy, pool_texts: int,
                 misdeclared: bool, whole: bool = False, variants: bool = True, near: bool = False
                 ) -> tuple[str, bool, bool, int, str]:
    judge = Judge(sigma, noise, rng, whole, variants)
    incumbent_text = random_text(rng, sigma, noise, near)
    effect = rng.choice(EFFECT_DIMS)
    candidate_text = incumbent_text if kind == "neutral" else incumbent_text.moved(effect, 1.0 if kind != "harmful" else -1.0)
    if kind == "trade":  # +1 on the target, −1.5 on another judged dimension: worse in total when that one weighs as much
        candidate_text = candidate_text.moved(rng.choice([d for d in JUDGE_DIMS if d != effect]), -1.5)
    if noise == "text-bias":
        candidate_text = Text(candidate_text.quality, rng.gauss(0, sigma / 2), candidate_text.baseline)
    target = "dim8" if effect == "accuracy" else effect
    if misdeclared:
        target = rng.choice([d for d in (*JUDGE_DIMS, "dim8") if d != target])
    others = [measure(judge, text, 2, True).plus(measure(judge, text, 2, True))
              for text in (random_text(rng, sigma, noise) for _ in range(pool_texts))]  # other skills' baselines
    incumbent = measure(judge, incumbent_text, 2, True, exact=True).plus(measure(judge, incumbent_text, 2, True))
    judge.calls = 0
    candidate = measure(judge, candidate_text, 2, True, exact=True)
    incumbent = incumbent.plus(measure(judge, incumbent_text, policy.judges_per_step, False))
    calls = 1 + judge.calls  # the proposal, the candidate's evaluation, the incumbent's fresh judge calls
    look = 1
    while True:
        noise_now = pooled_noise([incumbent, candidate, *others])
        decision = decide(incumbent, candidate, noise_now, target, look, policy)
        plan = next_samples(decision, incumbent, candidate, policy)
        if decision.verdict is not Verdict.MORE or plan.empty:
            break
        judge.calls = 0
        candidate = candidate.plus(measure(judge, candidate_text, plan.candidate_judges, plan.candidate_dim8))
        incumbent = incumbent.plus(measure(judge, incumbent_text, plan.incumbent_judges, plan.incumbent_dim8))
        calls += judge.calls
        look += 1
    better = candidate_text.true_total() > incumbent_text.true_total() + 1e-9
    return kind, better, decision.verdict is Verdict.KEEP, calls, effect


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--decisions", type=int, default=600, help="decisions per σ (the kinds in turn)")
    options.add_argument("--kinds", default="neutral,helpful,harmful",
                         help="edit kinds to mix; 'trade' is +1 on one judged dimension and −1.5 on another")
    options.add_argument("--seed", type=int, default=7)
    options.add_argument("--noise", choices=("gauss", "heavy", "text-bias", *MODELS), default="gauss",
                         help="iid, text, mixed: σ per call, per text, both (0.5 and 0.7 at σ = 1)")
    options.add_argument("--same-text", action="store_true", help="read the very text every time (no null variants)")
    options.add_argument("--whole", action="store_true", help="judges answer in whole points, as LLMs do")
    options.add_argument("--sigmas", default="0,0.5,1,2")
    options.add_argument("--pool", type=int, default=3, help="other skills' baselines in the noise pool")
    options.add_argument("--misdeclared", action="store_true", help="the edit's declared target is not the dimension it moves")
    options.add_argument("--near", action="store_true",
                         help="the baseline's Accuracy within a point below each text's (vetoes common, as judge_noise.py --world near)")
    args = options.parse_args()
    policy = KeepPolicy()
    print(f"noise {args.noise}{' in whole points' if args.whole else ''}, seed {args.seed}, {args.decisions} decisions "
          f"per σ, pool of {args.pool} other texts{', targets misdeclared' if args.misdeclared else ''}")
    print(f"{'σ':>4}  {'false keeps (kept / not truly better)':<40}{'true keeps (kept / truly better)':<40}"
          f"{'harmful kept':<14}calls/decision")
    kinds = args.kinds.split(",")
    for sigma in (float(s) for s in args.sigmas.split(",")):
        rng = random.Random(f"{args.seed}-{sigma}")
        outcomes = [one_decision(rng, sigma, args.noise, kinds[i % len(kinds)], policy, args.pool,
                                 args.misdeclared, args.whole, not args.same_text, args.near) for i in range(args.decisions)]
        false_n = [o for o in outcomes if not o[1]]
        true_n = [o for o in outcomes if o[1]]
        harmful_kept = sum(o[2] for o in outcomes if o[0] == "harmful")
        calls = sum(o[3] for o in outcomes) / len(outcomes)
        print(f"{sigma:>4g}  {rate(sum(o[2] for o in false_n), len(false_n)):<40}"
              f"{rate(sum(o[2] for o in true_n), len(true_n)):<40}{harmful_kept:<14}{calls:.1f}")
        dim8 = [o for o in true_n if o[4] == "accuracy"]
        print(f"      dim8 improvements kept: {rate(sum(o[2] for o in dim8), len(dim8))}")
        if len(kinds) > 1:
            print("      by kind: " + ", ".join(f"{k} {sum(o[2] for o in outcomes if o[0] == k)}/"
                                               f"{sum(o[0] == k for o in outcomes)} kept" for k in kinds))


if __name__ == "__main__":
    main()

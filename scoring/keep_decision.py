"""The keep decision: is the candidate better than the incumbent beyond judge noise? (RUBRIC.md, "improvement").

A real judge scores the same text differently on every call, so one sample of
the candidate compared with one sample of the incumbent keeps neutral edits
about a third of the time. ``decide`` reads every measurement of both texts
instead, per dimension, and returns KEEP, REVERT, MORE (measure again) or
INCONCLUSIVE (the cap is reached and the evidence is still short).

The rule, in order:

1. **Worse beyond its noise vetoes.** An exact dimension (rules, formula, an
   offline heuristic) that fell, or a judged dimension whose one-sided upper
   bound is below 0, reverts the edit. The veto's 5 % is split over the judged
   dimensions and the looks, so noise alone rarely vetoes a good edit.
2. **A gain must be established.** Either an exact dimension rose, or a judged
   dimension's one-sided lower bound is above 0. The 5 % of the gain test is
   split over the judged dimensions — half for the edit's target dimension,
   the rest shared — and over the looks (``look_shares``): a union bound, so
   the chance that noise alone shows a gain on any dimension at any look is at
   most 5 %.
3. **A gain on exact dimensions alone needs the judges' word.** Rule dimensions
   count keywords; an edit whose only gain is there is kept only if every
   judged dimension is shown non-inferior: lower bound ≥ −``margin``.
4. **The total of the means must rise at one decimal**, as the rubric's total does.

Why per dimension and not one bound on the total: an edit moves one or two
dimensions, while every judged dimension adds its noise to the total. At
σ = 1 per judge call, a 95 % bound on the total needs 30+ judge calls per
text to see a one-point gain on an 11-weight dimension; per dimension, about 10.

When no measured dimension has any noise (the offline backend, or judges
that always agree), every bound is the difference itself and the rule is the
old one — keep iff the total rises at one decimal — except that a dimension
that fell vetoes (``benchmarks/judge_noise.py`` measures the false-keep rate).

Noise is the pooled within-text variance of each dimension over every text
measured in the run (``pooled_noise``): many texts, many degrees of freedom,
far better than two samples' own spread. Every sample of a text is a reading of
one of its null variants (``scoring/null_variants.py``), so that spread holds
how the judge moves on changes that mean nothing, not only how it varies from
call to call. An edit aimed at dim8 is read through the sub-score it moves
(``through_accuracy``). Under ``min_df`` degrees of freedom a
dimension's noise is unknown: it can neither establish a gain nor veto, and
the flow measures again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from scoring.formula import round1
from scoring.keep_values import JUDGE_DIMS, Decision, DimEvidence, DimStatus, KeepPolicy, Verdict, spending
from scoring.model import WEIGHTS
from scoring.samples import PARTS, Measured, Noise, compare_means, pooled, pooled_noise, quantile

DEFAULT_POLICY = KeepPolicy()  # the numbers benchmarks/judge_noise.py measured (frozen: one shared instance is safe)

__all__ = ["JUDGE_DIMS", "Decision", "DimEvidence", "DimStatus", "KeepPolicy", "Measured", "Noise", "SamplePlan",
           "Verdict", "compare_means", "decide", "evidence", "next_samples", "pooled", "pooled_noise", "spending",
           "through_accuracy"]


def _judged_dims(incumbent: Measured, candidate: Measured) -> tuple[str, ...]:
    both = (incumbent.dims | candidate.dims) - incumbent.exact - candidate.exact
    return tuple(sorted(both, key=list(WEIGHTS).index))


def _gain_alpha(dim: str, target: str | None, judged: tuple[str, ...], look_alpha: float, share: float) -> float:
    if target not in judged or len(judged) == 1:
        return look_alpha / max(1, len(judged))
    return look_alpha * (share if dim == target else (1 - share) / (len(judged) - 1))


def evidence(incumbent: Measured, candidate: Measured, noise: Mapping[str, Noise], target: str | None, look: int,
             policy: KeepPolicy) -> tuple[DimEvidence, ...]:
    """Each dimension's difference, with its bounds at this look's share of alpha."""
    judged = _judged_dims(incumbent, candidate)
    look_alpha = policy.alpha * policy.look_shares[min(look, policy.max_looks) - 1]
    veto_alpha = policy.veto_alpha / (max(1, len(judged)) * policy.max_looks)
    out = []
    for dim in WEIGHTS:
        n = (candidate.n(dim), incumbent.n(dim))
        if n == (0, 0):
            continue
        if 0 in n:
            out.append(DimEvidence(dim, n, None, DimStatus.UNMEASURED))
            continue
        delta = (candidate.mean(dim) or 0.0) - (incumbent.mean(dim) or 0.0)
        if dim not in judged:
            status = DimStatus.GAIN if delta > 1e-9 else DimStatus.LOSS if delta < -1e-9 else DimStatus.EVEN
            out.append(DimEvidence(dim, n, delta, status))
            continue
        known = noise.get(dim)
        if known is None or known.df < policy.min_df:
            out.append(DimEvidence(dim, n, delta, DimStatus.UNKNOWN, df=known.df if known else 0))
            continue
        se = known.sd * math.sqrt(1 / n[0] + 1 / n[1])
        lower = delta - quantile(_gain_alpha(dim, target, judged, look_alpha, policy.target_share), known.df) * se
        upper = delta + quantile(veto_alpha, known.df) * se
        status = (DimStatus.LOSS if upper < -1e-9 else DimStatus.GAIN if lower > 1e-9
                  else DimStatus.EVEN if se == 0 and abs(delta) <= 1e-9 else DimStatus.WITHIN)
        few = _too_few(se, n, policy)
        if few and status in (DimStatus.GAIN, DimStatus.LOSS):
            status = DimStatus.WITHIN
        out.append(DimEvidence(dim, n, delta, status, se, lower, upper, known.sd, known.df, few=few))
    return tuple(out)


def decide(incumbent: Measured, candidate: Measured, noise: Mapping[str, Noise], target: str | None = None,
           look: int = 1, policy: KeepPolicy = DEFAULT_POLICY, min_looks: int = 1, writes_words: bool = False) -> Decision:
    """KEEP, REVERT, MORE or INCONCLUSIVE for the candidate against the incumbent (see the module docstring).

    ``look`` counts from 1; at ``policy.max_looks`` an undecided edit is
    INCONCLUSIVE. ``min_looks`` holds a verdict back until that look (two judges
    that disagree by more than three points ask for more samples first).
    ``writes_words``: the edit adds words; where judges measured the text, its
    gains on exact (keyword-counting) dimensions then do not count — only a
    judged gain does (keywords inserted without content are not an improvement).
    """
    rows = evidence(incumbent, candidate, noise, target, look, policy)
    if target == "dim8":
        rows = through_accuracy(rows, incumbent, candidate, noise, look, policy)
    rows, vetoes = _vetoed(rows, incumbent, candidate)
    judged = any(e.se is not None or e.status is DimStatus.UNKNOWN for e in rows)
    if writes_words and judged:
        rows = tuple(replace(e, status=DimStatus.EVEN) if e.status is DimStatus.GAIN and e.se is None else e for e in rows)
    compared = [e.dim for e in rows if e.status is not DimStatus.UNMEASURED]
    total_delta = round1(candidate.total(compared) - incumbent.total(compared)) if compared else None
    risen = bool(compared) and round1(candidate.total(compared)) > round1(incumbent.total(compared))
    if any(e.via == "veto" for e in rows):  # a veto over the candidate's readings decides before any other loss
        call = _Call(Verdict.REVERT, "dim8 vetoed over the candidate's readings, not the kept text's: "
                                     + vetoes[0].removeprefix("candidate: veto: "), "dim8")
    else:
        call = _verdict(rows, risen, target, noise, look, policy)
    near = _nearer_the_veto(incumbent, candidate, policy) if call.verdict is Verdict.KEEP else None
    if near:
        call = _Call(Verdict.MORE, f"{call.reason}; held back: {near}", need=frozenset({"dim8"}))
    if call.verdict in (Verdict.KEEP, Verdict.REVERT) and look < min_looks and not _settled(rows):
        call = _Call(Verdict.MORE, f"{call.reason}; held back: the judges disagreed, so the evidence grows first",
                     need=frozenset(e.dim for e in rows if e.se))
    if call.verdict is Verdict.MORE and look >= policy.max_looks:
        call = _Call(Verdict.INCONCLUSIVE, f"still undecided after {look} look(s): {call.reason}")
    need = call.need if call.verdict is Verdict.MORE else frozenset()
    rule_only = any(e.status is DimStatus.GAIN and e.se is None for e in rows) and not any(
        e.status is DimStatus.GAIN and e.se is not None for e in rows)
    return Decision(call.verdict, call.reason, look, rows, total_delta, call.basis, need, target, rule_only, vetoes)


def _too_few(se: float, n: tuple[int, int], policy: KeepPolicy) -> bool:
    """Noisy, with fewer than ``min_readings`` a side: one draw a side decides nothing, however known the noise."""
    return se > 0 and min(n) < policy.min_readings


def _vetoed(rows: tuple[DimEvidence, ...], incumbent: Measured, candidate: Measured
            ) -> tuple[tuple[DimEvidence, ...], tuple[str, ...]]:
    """dim8's veto as a verdict on each text over all its readings (RUBRIC.md): a candidate vetoed where the kept text
    is not has lost dim8, whatever its unvetoed readings say. Each veto that holds is named for the record."""
    mine, theirs = candidate.veto(), incumbent.veto()
    vetoes = tuple(f"candidate: {r}" for r in mine.reasons) + tuple(f"kept: {r}" for r in theirs.reasons)
    at = next((i for i, e in enumerate(rows) if e.dim == "dim8"), None)
    if at is None or not mine.holds or theirs.holds or rows[at].status is DimStatus.UNMEASURED:
        return rows, vetoes
    lost = replace(rows[at], status=DimStatus.LOSS, via="veto", few=False)
    return (*rows[:at], lost, *rows[at + 1:]), vetoes


def _nearer_the_veto(incumbent: Measured, candidate: Measured, policy: KeepPolicy) -> str | None:
    """Why a keep must wait for dim8, or None: the candidate's Accuracy reads below the baseline's on the mean of its
    readings, and below the kept text's by ``min_effect`` or more (less is no change an edit is kept for, and a
    neutral candidate reads below the kept text half the time). Over the veto's line a text's true dim8 is 0, yet its
    unvetoed readings move by only 0.44 a point of Accuracy, and its own veto needs many readings to be shown: a keep
    there could be the rubric's largest loss. So dim8 is read again (up to ``max_dim8_target``); a candidate still
    under the line at the cap is not kept (inconclusive: reverted). Never a verdict on one reading: only a hold."""
    mine, theirs = candidate.accuracy_gap(), incumbent.accuracy_gap()
    if mine is None or mine >= 0 or (theirs is not None and theirs - policy.min_effect < mine):
        return None
    kept = f", the kept text's {theirs:+.2f}" if theirs is not None else ""
    return (f"the candidate's Accuracy reads {mine:+.2f} against the baseline's over {candidate.n('dim8.accuracy')} "
            f"reading(s){kept}: under the veto's line, where a keep needs it ruled out")


def through_accuracy(rows: tuple[DimEvidence, ...], incumbent: Measured, candidate: Measured, noise: Mapping[str, Noise],
                     look: int, policy: KeepPolicy) -> tuple[DimEvidence, ...]:
    """An edit aimed at dim8 shows in the part it moves: dim8 counts as gained when its Accuracy rose beyond its noise
    (the gain test, at the target's share of alpha), neither Safety nor Compliance fell beyond theirs (the veto test),
    and dim8 itself is not worse beyond its own. Read whole, +1 Accuracy is +0.44 on dim8 under the noise of three
    parts, a minimum and two vetoes; read through Accuracy it shows in about a quarter of the measurements.
    dim8's own loss test, the other dimensions' and the total of the means still decide as for any edit."""
    at = next((i for i, e in enumerate(rows) if e.dim == "dim8"), None)
    if at is None or rows[at].se is None or rows[at].status in (DimStatus.GAIN, DimStatus.LOSS):
        return rows
    judged = _judged_dims(incumbent, candidate)
    look_alpha = policy.alpha * policy.look_shares[min(look, policy.max_looks) - 1]
    gain_alpha = _gain_alpha("dim8", "dim8", judged, look_alpha, policy.target_share)
    veto_alpha = policy.veto_alpha / (max(1, len(judged)) * policy.max_looks)
    accuracy = _part(incumbent, candidate, noise, "dim8.accuracy", gain_alpha, veto_alpha, policy)
    others = [_part(incumbent, candidate, noise, p, gain_alpha, veto_alpha, policy) for p in ("dim8.safety", "dim8.compliance")]
    if accuracy is None or accuracy[0] <= 1e-9 or any(o is None or o[1] < -1e-9 for o in others):
        return rows
    lower = accuracy[0] * PARTS["dim8.accuracy"]  # in dim8 points
    gained = replace(rows[at], status=DimStatus.GAIN, lower=lower, via="accuracy")
    return (*rows[:at], gained, *rows[at + 1:])


def _part(incumbent: Measured, candidate: Measured, noise: Mapping[str, Noise], part: str, gain_alpha: float,
          veto_alpha: float, policy: KeepPolicy) -> tuple[float, float] | None:
    """(the gain test's lower bound, the veto test's upper bound) of a part's difference; None when its noise is not
    known yet or a side has no sample of it."""
    known = noise.get(part)
    n = (candidate.n(part), incumbent.n(part))
    if known is None or known.df < policy.min_df or 0 in n:
        return None
    delta = (candidate.mean(part) or 0.0) - (incumbent.mean(part) or 0.0)
    se = known.sd * math.sqrt(1 / n[0] + 1 / n[1])
    if _too_few(se, n, policy):
        return None
    return delta - quantile(gain_alpha, known.df) * se, delta + quantile(veto_alpha, known.df) * se


@dataclass(frozen=True)
class _Call:
    verdict: Verdict
    reason: str
    basis: str | None = None
    need: frozenset[str] = frozenset()


def _settled(rows: tuple[DimEvidence, ...]) -> bool:
    """No dimension has noise left to resolve: exact, or judged with a known zero noise."""
    return all(e.status not in (DimStatus.UNMEASURED, DimStatus.UNKNOWN) and not e.se for e in rows)


def _weighted(e: DimEvidence, value: float | None) -> float:
    return WEIGHTS[e.dim] * (value or 0.0)


def _verdict(rows: tuple[DimEvidence, ...], risen: bool, target: str | None, noise: Mapping[str, Noise], look: int,
             policy: KeepPolicy) -> _Call:
    """The rule of the module docstring, step by step; ``need`` names what could still change the answer."""
    losses = [e for e in rows if e.status is DimStatus.LOSS]
    if losses:
        worst = min(losses, key=lambda e: _weighted(e, e.delta))
        return _Call(Verdict.REVERT, f"{worst.dim} is worse beyond its noise ({worst.delta:+.2f})", worst.dim)
    call = _verdict_without_losses(rows, risen, target, noise, look, policy)
    thin = frozenset(e.dim for e in rows if e.falling_on_few)
    if call.verdict is Verdict.KEEP and thin:
        return _Call(Verdict.MORE, f"{call.reason}; held back: {', '.join(sorted(thin))} fell by more than its noise "
                                   "on too few readings to decide", need=thin)
    return call


def _verdict_without_losses(rows: tuple[DimEvidence, ...], risen: bool, target: str | None,
                            noise: Mapping[str, Noise], look: int, policy: KeepPolicy) -> _Call:
    """Steps 2–4 of the rule, once no dimension is worse beyond its noise."""
    if _settled(rows):
        gains = [e for e in rows if e.status is DimStatus.GAIN]
        best = max(gains, key=lambda e: _weighted(e, e.delta), default=None)
        if risen and best is not None:
            return _Call(Verdict.KEEP, f"the total rose and no dimension fell ({best.dim} {best.delta:+.2f})", best.dim)
        if risen:
            return _Call(Verdict.REVERT, "words added and only keyword-counting dimensions rose: the judges saw no gain")
        return _Call(Verdict.REVERT, "the total did not rise (no measurement is noisy: this is final)")
    missing = frozenset(e.dim for e in rows if e.status in (DimStatus.UNMEASURED, DimStatus.UNKNOWN))
    if any(e.status is DimStatus.UNMEASURED for e in rows):
        return _Call(Verdict.MORE, f"{', '.join(sorted(missing))} not measured on both texts", need=missing)
    judged_gains = [e for e in rows if e.status is DimStatus.GAIN and e.se is not None]
    exact_gains = [e for e in rows if e.status is DimStatus.GAIN and e.se is None]
    within = frozenset(e.dim for e in rows if e.status is DimStatus.WITHIN)
    if judged_gains and risen:
        best = max(judged_gains, key=lambda e: _weighted(e, e.lower))
        return _Call(Verdict.KEEP, f"{best.dim} gained beyond its noise (lower bound {best.lower:+.2f})", best.dim)
    if judged_gains or (exact_gains and not risen):
        return _Call(Verdict.MORE, "a gain, but the total of the means did not rise", need=within | missing)
    if exact_gains:
        short = _not_shown_non_inferior(rows, noise, look, policy)
        if not short:
            best = max(exact_gains, key=lambda e: _weighted(e, e.delta))
            return _Call(Verdict.KEEP, f"{best.dim} rose and no judged dimension is more than {policy.margin:g} "
                                       "point(s) worse", best.dim)
        return _Call(Verdict.MORE, f"a gain on exact dimensions only: {', '.join(short)} not yet shown within "
                                   f"{policy.margin:g} point(s)", need=frozenset(short))
    rising = frozenset(e.dim for e in rows if e.status in (DimStatus.WITHIN, DimStatus.UNKNOWN) and (e.delta or 0) > 0)
    if missing:
        return _Call(Verdict.MORE, f"the judges' noise on {', '.join(sorted(missing))} is not known yet", need=missing | rising)
    if rising:
        return _Call(Verdict.MORE, f"no gain beyond noise yet ({', '.join(sorted(rising))} rising)",
                     need=rising | (within & {target} if target else frozenset()))
    if all(e.se is None or (e.delta or 0) + quantile(policy.alpha, e.df) * e.se < policy.min_effect for e in rows):
        return _Call(Verdict.REVERT, f"no dimension rose, and none can have risen by {policy.min_effect:g} point(s) "
                                     "(every upper bound is below it)")
    return _Call(Verdict.INCONCLUSIVE, "no dimension moved up")


def _not_shown_non_inferior(rows, noise: Mapping[str, Noise], look: int, policy: KeepPolicy) -> list[str]:
    """Judged dimensions whose lower bound (at this look's share of alpha) is below −margin, or whose noise is unknown."""
    look_alpha = policy.alpha * policy.look_shares[min(look, policy.max_looks) - 1]
    short = []
    for e in rows:
        if e.se is None and e.status is not DimStatus.UNKNOWN:
            continue
        if (
            e.status is DimStatus.UNKNOWN
            or e.delta is None
            or e.se is None
            or e.delta - quantile(look_alpha, noise[e.dim].df) * e.se < -policy.margin
        ):
            short.append(e.dim)
    return short


@dataclass(frozen=True)
class SamplePlan:
    """What to measure next: judge calls per text, and whether to measure dim8 again on each."""

    candidate_judges: int = 0
    incumbent_judges: int = 0
    candidate_dim8: bool = False
    incumbent_dim8: bool = False

    @property
    def empty(self) -> bool:
        return not (self.candidate_judges or self.incumbent_judges or self.candidate_dim8 or self.incumbent_dim8)


def next_samples(decision: Decision, incumbent: Measured, candidate: Measured, policy: KeepPolicy = DEFAULT_POLICY) -> SamplePlan:
    """Where more measurements shrink the undecided bounds the most per call.

    The variance of a difference is σ²(1/n_c + 1/n_i): a sample on the side with
    fewer helps most, so the incumbent (whose samples accumulate across rounds)
    is measured only while it has fewer than the candidate will. dim8 costs two
    calls per test prompt, so each text gets it at most ``max_dim8`` times, or
    ``max_dim8_target`` when the edit says it improves dim8 (``through_accuracy``) or a keep waits for the
    candidate's Accuracy to be read clear of the veto's line (``_nearer_the_veto``).
    """
    if decision.verdict is not Verdict.MORE:
        return SamplePlan()
    candidate_judges = incumbent_judges = 0
    if decision.need & set(JUDGE_DIMS):
        judges = policy.judges_per_step
        counts = [(candidate.n(d), incumbent.n(d)) for d in JUDGE_DIMS if d in decision.need]
        n_c, n_i = max(c for c, _ in counts), min(i for _, i in counts)
        candidate_judges, incumbent_judges = judges, (judges if n_i < n_c + judges else 0)
    # dim8 is measured again only where it can decide — the edit's target, or a bound the rule needs — and at most
    # max_dim8 times a text; while its noise is unknown it is measured regardless, or it could never count at all
    evidence8 = decision.of("dim8")
    unknown = evidence8 is None or evidence8.status in (DimStatus.UNKNOWN, DimStatus.UNMEASURED)
    # ... or where it fell beyond its noise on one reading a side: the loss it may be needs a second reading to decide
    falling = evidence8 is not None and evidence8.falling_on_few
    # ... or where a keep waits for the candidate's Accuracy to be read clear of the veto's line (``_nearer_the_veto``)
    near = decision.need == {"dim8"} and _nearer_the_veto(incumbent, candidate, policy) is not None
    dim8 = "dim8" in decision.need and (unknown or falling or near or decision.target == "dim8" or decision.rule_only)
    most = policy.max_dim8_target if decision.target == "dim8" or near else policy.max_dim8
    cap = max(most, candidate.n("dim8") + 1) if unknown else most
    return SamplePlan(candidate_judges, incumbent_judges, dim8 and candidate.n("dim8") < cap,
                      dim8 and incumbent.n("dim8") < min(candidate.n("dim8") + 1, cap))

"""The keep decision on dim8 readings where the veto's line is near: a veto is a verdict on a text, not on one reading.

Readings are drawn as a grader gives them — Accuracy, the baseline's Accuracy, Safety and Compliance, each with noise,
the with-skill Accuracy close to the baseline's so that single readings fall below it often — and turned into samples
by the same function the flow uses (``scoring.samples.dim8_parts``). No decision may rest on them as the old rule did:
no keep or revert on one reading a side, no per-reading 0 among the samples, and a veto only over two readings or more.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.dim8 import SubScores, dim8_score
from scoring.keep_decision import JUDGE_DIMS, DimStatus, KeepPolicy, Measured, Verdict, decide, next_samples, pooled_noise
from scoring.samples import dim8_parts

EXACT = {"dim1": 10.0, "dim4": 5.0, "dim7": 8.0, "dim9": 3.0, "dim10": 10.0}


def clamp(value: float) -> float:
    return round(min(10.0, max(0.0, value)), 2)


def reading(rng: random.Random, accuracy: float, baseline: float, sigma: float) -> dict[str, list[float]]:
    """One dim8 measurement of a text: the grader's sub-scores with noise, as the flow records them."""
    sub = SubScores(clamp(accuracy + rng.gauss(0, sigma)), clamp(9.8 + rng.gauss(0, sigma)),
                    clamp(9.6 + rng.gauss(0, sigma)), clamp(baseline + rng.gauss(0, sigma)))
    dim8 = dim8_score(sub, "full_test", 1)
    return {"dim8": [dim8.score or 0.0]} | dim8_parts(dim8)


def judged(rng: random.Random, quality: float, sigma: float, calls: int) -> dict[str, list[float]]:
    return {d: [clamp(quality + rng.gauss(0, sigma)) for _ in range(calls)] for d in JUDGE_DIMS}


def text(rng: random.Random, accuracy: float, baseline: float, sigma: float, dim8_readings: int,
         quality: float = 6.0, judge_calls: int = 2) -> Measured:
    values: dict[str, list[float]] = {d: [v] for d, v in EXACT.items()} | judged(rng, quality, sigma, judge_calls)
    for _ in range(dim8_readings):
        for key, found in reading(rng, accuracy, baseline, sigma).items():
            values.setdefault(key, []).extend(found)
    return Measured.of(values, set(EXACT))


def others(rng: random.Random, sigma: float) -> list[Measured]:
    """Other texts of the run: they give the pooled noise its degrees of freedom, as in a batch."""
    return [text(rng, rng.uniform(4, 8), 5.0, sigma, 2, rng.uniform(4, 8), 4) for _ in range(3)]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10**6), gap=st.floats(-0.5, 0.5), sigma=st.floats(0.5, 1.5))
def test_one_reading_a_side_decides_nothing_on_dim8(seed, gap, sigma):
    """Neutral on every judged dimension, one dim8 reading a side, Accuracy within half a point of the baseline's (a
    single reading falls below it about half the time): the decision neither keeps nor reverts on dim8."""
    rng = random.Random(seed)
    incumbent = text(rng, 5.0 + gap, 5.0, sigma, 1, judge_calls=4)
    candidate = text(rng, 5.0 + gap, 5.0, sigma, 1, judge_calls=4)
    decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate, *others(rng, sigma)]), "dim8")
    evidence = decision.of("dim8")
    assert evidence is not None and evidence.n == (1, 1) and evidence.status is not DimStatus.LOSS
    assert decision.basis != "dim8", decision.reason
    assert not candidate.veto().holds and not incumbent.veto().holds  # one reading: never a veto
    assert 0.0 not in candidate.samples("dim8") + incumbent.samples("dim8")  # a reading below the line is read as read


def decisions(seed: int, sigma: float, rounds: int) -> list:
    """Edits decided as the ratchet does (decide, measure what it asks for, up to the cap) in a world where vetoes are
    common: each text's true Accuracy within a point of the baseline's, edits moving it by −1, 0 or +1."""
    rng, policy, out = random.Random(seed), KeepPolicy(), []
    for _ in range(rounds):
        before = 5.0 + rng.uniform(-0.5, 1.0)
        after = before + rng.choice((-1.0, 0.0, 1.0))
        incumbent = text(rng, before, 5.0, sigma, 2, judge_calls=6)
        candidate = text(rng, after, 5.0, sigma, 1)
        run = others(rng, sigma)
        for look in range(1, policy.max_looks + 1):
            decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate, *run]), "dim8", look, policy)
            plan = next_samples(decision, incumbent, candidate, policy)
            if decision.verdict is not Verdict.MORE or plan.empty:
                break
            candidate = candidate.plus(text(rng, after, 5.0, sigma, int(plan.candidate_dim8), judge_calls=plan.candidate_judges)
                                       if plan.candidate_dim8 or plan.candidate_judges else Measured())
            incumbent = incumbent.plus(text(rng, before, 5.0, sigma, int(plan.incumbent_dim8), judge_calls=plan.incumbent_judges)
                                       if plan.incumbent_dim8 or plan.incumbent_judges else Measured())
        out.append((decision, candidate, incumbent, after - before))
    return out


@settings(max_examples=5, deadline=None)  # 5 × 40 decisions; the rates: make bench-noise (the veto-near world)
@given(seed=st.integers(0, 10**6), sigma=st.floats(0.5, 1.5))
def test_no_keep_or_revert_rests_on_one_reading_of_a_noisy_dimension(seed, sigma):
    for decision, candidate, incumbent, _effect in decisions(seed, sigma, 40):
        if decision.verdict not in (Verdict.KEEP, Verdict.REVERT) or decision.basis is None:
            continue
        if decision.verdict is Verdict.KEEP:  # never kept while reading under the line, and under the kept text's
            gap, kept = candidate.accuracy_gap(), incumbent.accuracy_gap()
            assert gap is None or gap >= 0 or (kept is not None and kept - KeepPolicy().min_effect < gap), (
                decision.reason, gap, kept)
        basis = decision.of(decision.basis)
        assert basis is not None
        if basis.se:  # a noisy dimension decided: never on one reading a side
            assert min(basis.n) >= 2, (decision.reason, basis)
        if basis.via == "veto":
            assert candidate.veto().holds and not incumbent.veto().holds and candidate.n("dim8") >= 2
            assert decision.vetoes and decision.vetoes[0].startswith("candidate: veto: ")


def test_a_candidate_vetoed_over_its_readings_is_reverted_with_the_veto_named():
    rng = random.Random(3)
    incumbent = text(rng, 7.0, 5.0, 0.3, 3, judge_calls=6)
    candidate = text(rng, 3.0, 5.0, 0.3, 2, judge_calls=6)
    decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate, *others(rng, 0.3)]), "dim3", 2)
    assert decision.verdict is Verdict.REVERT and decision.basis == "dim8" and "vetoed" in decision.reason
    assert decision.of("dim8").via == "veto" and decision.to_json()["vetoes"][0].startswith("candidate: veto: Accuracy")
    assert candidate.total() < incumbent.total() and candidate.value("dim8") == 0.0


def test_a_thin_loss_holds_a_keep_back_until_a_second_reading():
    """A gain elsewhere, and dim8 far lower on one reading a side: not kept until dim8 is read again."""
    incumbent = Measured.of({"dim3": [5.0, 5.2, 4.8, 5.1, 4.9, 5.0], "dim8": [8.0], "dim8.accuracy": [8.0]}
                            | {d: [v] for d, v in EXACT.items()}, set(EXACT))
    candidate = Measured.of({"dim3": [8.0, 8.2, 7.8, 8.1, 7.9, 8.0], "dim8": [6.5], "dim8.accuracy": [4.6]}
                            | {d: [v] for d, v in EXACT.items()}, set(EXACT))
    other = Measured.of({"dim3": [6.0, 6.4, 5.6], "dim8": [6.0, 6.1, 5.9, 6.0, 6.2, 5.8, 6.0, 6.1]})
    decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate, other]), "dim3")
    assert decision.verdict is Verdict.MORE and "held back: dim8" in decision.reason and decision.of("dim8").few
    assert decision.of("dim8").upper < 0  # with two readings a side this would be a loss beyond the noise
    plan = next_samples(decision, incumbent, candidate)
    assert plan.candidate_dim8 and plan.incumbent_dim8
    again = decide(incumbent.plus(Measured.of({"dim8": [7.9]})), candidate.plus(Measured.of({"dim8": [6.4]})),
                   pooled_noise([incumbent, candidate, other]), "dim3", 2)
    assert again.verdict is Verdict.REVERT and again.basis == "dim8"


def near_the_line(candidate_accuracy: list[float]) -> tuple[Measured, Measured, dict]:
    """A clear gain on dim3; the kept text's Accuracy a point over the baseline's, the candidate's as given."""
    exact = {d: [v] for d, v in EXACT.items()}
    incumbent = Measured.of({"dim3": [5.0, 5.2, 4.8, 5.1, 4.9, 5.0], "dim8": [8.0, 8.1], "dim8.accuracy": [7.0, 7.2],
                             "dim8.baseline": [6.0, 6.2]} | exact, set(EXACT))
    candidate = Measured.of({"dim3": [8.0, 8.2, 7.8, 8.1, 7.9, 8.0], "dim8": [8.0] * len(candidate_accuracy),
                             "dim8.accuracy": candidate_accuracy, "dim8.baseline": [6.2, 5.9, 6.1, 6.0][:len(candidate_accuracy)]}
                            | exact, set(EXACT))
    other = Measured.of({"dim3": [6.0, 6.4, 5.6], "dim8": [6.0, 6.1, 5.9, 6.0, 6.2, 5.8, 6.0, 6.1]})
    return incumbent, candidate, pooled_noise([incumbent, candidate, other])


def test_a_keep_under_the_vetos_line_waits_for_dim8_and_is_not_kept_there_at_the_cap():
    """The candidate's Accuracy reads under the baseline's on its mean (not beyond its noise: no veto), the kept
    text's over it: the gain on dim3 is not kept until dim8 reads the candidate clear of the line."""
    incumbent, candidate, noise = near_the_line([5.8, 6.0])
    assert not candidate.veto().holds and candidate.accuracy_gap() < 0 < incumbent.accuracy_gap()
    decision = decide(incumbent, candidate, noise, "dim3")
    assert decision.verdict is Verdict.MORE and "under the veto's line" in decision.reason and decision.need == {"dim8"}
    plan = next_samples(decision, incumbent, candidate)
    assert plan.candidate_dim8 and not plan.candidate_judges
    at_the_cap = decide(incumbent, candidate, noise, "dim3", KeepPolicy().max_looks)
    assert at_the_cap.verdict is Verdict.INCONCLUSIVE and "under the veto's line" in at_the_cap.reason
    clear = near_the_line([5.8, 6.0, 6.9, 7.0])[1]  # read twice more, now over the line on its mean
    assert decide(incumbent, clear, noise, "dim3", 2).verdict is Verdict.KEEP


def test_a_candidate_no_nearer_the_line_than_the_kept_text_by_an_edits_worth_is_kept():
    """Under the line as the kept text is, or under it by less than ``min_effect`` more: judged as any other."""
    incumbent, candidate, noise = near_the_line([5.8, 6.0])
    for kept_accuracy in ((5.5, 5.7), (6.0, 6.2)):  # the kept text reads −0.55, then −0.05: within half a point
        kept = Measured.of(dict(incumbent.values) | {"dim8.accuracy": kept_accuracy}, incumbent.exact)
        assert kept.accuracy_gap() - KeepPolicy().min_effect < candidate.accuracy_gap() < 0
        assert decide(kept, candidate, noise, "dim3").verdict is Verdict.KEEP

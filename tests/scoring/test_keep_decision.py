"""The keep decision as a pure policy: noise, gains, vetoes, non-inferiority, the cap, and what to measure next."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.formula import round1
from scoring.keep_decision import (
    JUDGE_DIMS,
    DimStatus,
    KeepPolicy,
    Measured,
    Noise,
    SamplePlan,
    Verdict,
    compare_means,
    decide,
    next_samples,
    pooled_noise,
)
from scoring.model import WEIGHTS

EXACT = {"dim1": 10.0, "dim4": 5.0, "dim7": 8.0, "dim9": 3.0, "dim10": 10.0}
SAMPLED = (*JUDGE_DIMS, "dim8")


def text(samples: dict[str, list[float]], exact: dict[str, float] | None = None) -> Measured:
    values = {d: [v] for d, v in (EXACT if exact is None else exact).items()} | samples
    return Measured.of(values, set(EXACT if exact is None else exact))


def judge(rng: random.Random, quality: dict[str, float], sigma: float, calls: int) -> dict[str, list[float]]:
    """What ``calls`` judge calls say of a text of this true quality: noise, clamped to [1, 10], read as integers."""
    return {d: [float(min(10, max(1, round(quality[d] + rng.gauss(0, sigma))))) for _ in range(calls)] for d in quality}


def run_decision(rng: random.Random, before: dict[str, float], after: dict[str, float], sigma: float,
                 policy: KeepPolicy | None = None, target: str | None = None) -> Verdict:
    """One decision as the ratchet makes it: decide, measure what it asks for, decide again, up to the cap."""
    policy = policy or KeepPolicy()
    others = [text(judge(rng, {d: rng.uniform(3, 8) for d in SAMPLED}, sigma, 4)) for _ in range(3)]
    incumbent = text(judge(rng, before, sigma, 6))
    candidate = text(judge(rng, after, sigma, 2))
    for look in range(1, policy.max_looks + 1):
        decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate, *others]), target, look, policy)
        plan = next_samples(decision, incumbent, candidate, policy)
        if decision.verdict is not Verdict.MORE or plan.empty:
            return decision.verdict
        candidate = candidate.plus(Measured.of(judge(rng, after, sigma, plan.candidate_judges or plan.candidate_dim8)))
        incumbent = incumbent.plus(Measured.of(judge(rng, before, sigma, plan.incumbent_judges or plan.incumbent_dim8)))
    raise AssertionError("no verdict at the cap")


@settings(max_examples=3, deadline=None)  # 3 000 decisions; the rates with intervals: benchmarks/keep_policy_sim.py
@given(sigma=st.floats(0.2, 2.5), centre=st.floats(3.0, 8.0), seed=st.integers(0, 10**6))
def test_identical_distributions_keep_at_most_five_percent(sigma: float, centre: float, seed: int):
    """Neutral edits (the same true quality) under integer judges with noise σ: at most 5 % kept, over 1 000."""
    rng = random.Random(seed)
    verdicts = []
    for _ in range(1000):
        same = {d: min(9.5, max(1.5, centre + rng.uniform(-1.5, 1.5))) for d in SAMPLED}
        verdicts.append(run_decision(rng, same, same, sigma, target=rng.choice(SAMPLED)))
    assert verdicts.count(Verdict.KEEP) <= 0.05 * len(verdicts)


def test_a_clear_gain_is_kept():
    rng = random.Random(4)
    before = {d: 5.0 for d in SAMPLED}
    after = before | {"dim5": 8.0}
    verdicts = [run_decision(rng, before, after, 0.7, target="dim5") for _ in range(40)]
    assert verdicts.count(Verdict.KEEP) >= 38


def test_a_gain_on_one_dimension_with_a_loss_beyond_noise_on_another_is_reverted():
    noise = {d: Noise(0.25, 60) for d in SAMPLED}
    incumbent = text({d: [5.0] * 8 for d in SAMPLED})
    candidate = text({d: [5.0] * 8 for d in SAMPLED} | {"dim5": [8.0] * 8, "dim2": [3.0] * 8})
    decision = decide(incumbent, candidate, noise, "dim5")
    assert decision.verdict is Verdict.REVERT and decision.basis == "dim2" and "worse beyond its noise" in decision.reason
    assert decision.of("dim5").status is DimStatus.GAIN and decision.of("dim2").status is DimStatus.LOSS


def test_an_exact_dimension_that_fell_vetoes_whatever_else_rose():
    noise = {d: Noise(0.0, 50) for d in SAMPLED}
    incumbent = text({d: [5.0] * 4 for d in SAMPLED})
    candidate = text({d: [5.0] * 4 for d in SAMPLED}, EXACT | {"dim4": 10.0, "dim7": 6.0})  # STOP added, a jump made
    decision = decide(incumbent, candidate, noise)
    assert decision.verdict is Verdict.REVERT and decision.basis == "dim7"


exact_values = st.sampled_from([0.0, 2.0, 3.0, 5.0, 7.0, 8.0, 10.0])


@settings(max_examples=300, deadline=None)
@given(old=st.dictionaries(st.sampled_from(list(WEIGHTS)), exact_values, min_size=10, max_size=10),
       rises=st.dictionaries(st.sampled_from(list(WEIGHTS)), st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0]), max_size=4),
       judged=st.integers(1, 6))
def test_without_noise_it_is_exactly_the_old_rule_when_no_dimension_fell(old, rises, judged):
    """σ = 0: keep iff the total rises at one decimal — the rule before noise was measured (a fall vetoes, below)."""
    new = {d: min(10.0, v + rises.get(d, 0.0)) for d, v in old.items()}
    sampled = [d for d in WEIGHTS if d not in EXACT]
    incumbent = text({d: [old[d]] * judged for d in sampled}, {d: old[d] for d in EXACT})
    candidate = text({d: [new[d]] * judged for d in sampled}, {d: new[d] for d in EXACT})
    decision = decide(incumbent, candidate, {d: Noise(0.0, 100) for d in sampled})  # the judges' noise is known: none
    old_total = round1(sum(WEIGHTS[d] * v for d, v in old.items()) / 10)
    new_total = round1(sum(WEIGHTS[d] * v for d, v in new.items()) / 10)
    assert decision.verdict is (Verdict.KEEP if new_total > old_total else Verdict.REVERT)
    assert decision.total_delta == round1(new_total - old_total)


@settings(max_examples=200, deadline=None)
@given(old=st.dictionaries(st.sampled_from(list(WEIGHTS)), st.sampled_from([2.0, 5.0, 8.0]), min_size=10, max_size=10),
       fall=st.sampled_from(list(WEIGHTS)), rise=st.sampled_from(list(WEIGHTS)))
def test_without_noise_a_dimension_that_fell_always_reverts(old, fall, rise):
    """The one place the rule is stricter than the old one: a trade (one dimension up, another down) is never kept."""
    new = dict(old) | {rise: 10.0}
    new[fall] = old[fall] - 1.0
    incumbent = text({d: [old[d]] * 3 for d in SAMPLED}, {d: old[d] for d in EXACT})
    candidate = text({d: [new[d]] * 3 for d in SAMPLED}, {d: new[d] for d in EXACT})
    assert decide(incumbent, candidate, {d: Noise(0.0, 100) for d in SAMPLED}).verdict is Verdict.REVERT


def test_whole_point_judges_are_never_read_finer_than_their_rounding():
    """Integer scores that never vary still have the rounding's noise (1/12): a zero spread is not zero noise."""
    steady = [text({"dim2": [7.0, 7.0, 7.0, 7.0]}), text({"dim2": [5.0, 5.0, 5.0]})]
    assert pooled_noise(steady)["dim2"].variance == pytest.approx(1 / 12)
    assert pooled_noise([text({"dim2": [7.3, 7.3, 7.3]})])["dim2"].variance == 0.0  # a finer judge: read as it is


def test_nothing_rising_where_every_bound_is_small_is_a_confident_non_improvement():
    noise = {d: Noise(1 / 12, 40) for d in SAMPLED}
    incumbent, candidate = text({d: [6.0] * 6 for d in JUDGE_DIMS}), text({d: [6.0] * 2 for d in JUDGE_DIMS})
    decision = decide(incumbent, candidate, noise)
    assert decision.verdict is Verdict.REVERT and "none can have risen" in decision.reason
    noisy = {d: Noise(1.0, 40) for d in SAMPLED}  # the same means read against a noisy judge: not confident
    assert decide(incumbent, candidate, noisy).verdict is Verdict.INCONCLUSIVE


def test_unknown_noise_asks_for_more_and_says_which_dimensions():
    incumbent = text({"dim2": [6.0], "dim5": [5.0]})
    candidate = text({"dim2": [8.0], "dim5": [6.0]})
    decision = decide(incumbent, candidate, pooled_noise([incumbent, candidate]))
    assert decision.verdict is Verdict.MORE and decision.need == {"dim2", "dim5"}
    assert decision.of("dim2").status is DimStatus.UNKNOWN
    plan = next_samples(decision, incumbent, candidate)
    step = KeepPolicy().judges_per_step
    assert plan == SamplePlan(candidate_judges=step, incumbent_judges=step)


def test_undecided_at_the_cap_is_inconclusive():
    noise = {d: Noise(1.0, 40) for d in SAMPLED}
    incumbent = text({"dim5": [5.0, 6.0, 5.0, 6.0]})
    candidate = text({"dim5": [6.0, 6.0, 7.0, 5.0]})
    policy = KeepPolicy()
    assert decide(incumbent, candidate, noise, "dim5", 1, policy).verdict is Verdict.MORE
    final = decide(incumbent, candidate, noise, "dim5", policy.max_looks, policy)
    assert final.verdict is Verdict.INCONCLUSIVE and "still undecided" in final.reason


def test_a_gain_on_rule_dimensions_alone_needs_every_judged_dimension_shown_within_the_margin():
    noise = {d: Noise(1.0, 60) for d in SAMPLED}
    before = {d: [6.0, 6.0] for d in JUDGE_DIMS}
    incumbent = text(before)
    stop_added = EXACT | {"dim4": 10.0}
    few = decide(incumbent, text(before, stop_added), noise)
    assert few.verdict is Verdict.MORE and few.rule_only and "exact dimensions only" in few.reason
    many = {d: [6.0] * 30 for d in JUDGE_DIMS}
    kept = decide(text(many), text(many, stop_added), noise)
    assert kept.verdict is Verdict.KEEP and kept.basis == "dim4"
    worse = decide(text(many), text(many | {"dim5": [5.0, 4.0] * 15}, stop_added), noise)
    assert worse.verdict is not Verdict.KEEP  # dim5 lost 1.5 points: not within the 1-point margin


def test_judges_that_disagreed_hold_a_verdict_back_until_the_second_look():
    noise = {d: Noise(0.5, 60) for d in SAMPLED}
    incumbent, candidate = text({"dim5": [5.0] * 6}), text({"dim5": [9.0] * 6})
    assert decide(incumbent, candidate, noise, "dim5").verdict is Verdict.KEEP
    held = decide(incumbent, candidate, noise, "dim5", look=1, min_looks=2)
    assert held.verdict is Verdict.MORE and "disagreed" in held.reason
    assert decide(incumbent, candidate, noise, "dim5", look=2, min_looks=2).verdict is Verdict.KEEP


def test_the_target_dimension_gets_more_of_alpha_than_the_others():
    noise = {d: Noise(1.0, 100) for d in SAMPLED}
    incumbent = text({d: [6.0] * 10 for d in JUDGE_DIMS})
    candidate = text({d: [6.0] * 10 for d in JUDGE_DIMS} | {"dim3": [7.2] * 10})
    as_target = decide(incumbent, candidate, noise, "dim3", look=5).of("dim3")
    as_other = decide(incumbent, candidate, noise, "dim5", look=5).of("dim3")
    assert as_target.lower > as_other.lower and as_target.delta == pytest.approx(1.2)


def test_more_samples_go_to_the_side_with_fewer():
    noise = {d: Noise(1.0, 60) for d in SAMPLED}
    incumbent = text({d: [6.0, 7.0] * 8 for d in JUDGE_DIMS})  # 16 samples, accumulated over rounds
    candidate = text({d: [6.0, 7.0] for d in JUDGE_DIMS} | {"dim2": [7.0, 7.0]})
    decision = decide(incumbent, candidate, noise, "dim2")
    plan = next_samples(decision, incumbent, candidate)
    assert decision.verdict is Verdict.MORE and plan.candidate_judges == KeepPolicy().judges_per_step
    assert plan.incumbent_judges == 0


def test_dim8_is_measured_again_only_where_it_can_decide():
    noise = {d: Noise(1.0, 60) for d in SAMPLED}
    incumbent = text({"dim5": [6.0, 7.0, 6.0], "dim8": [6.0, 6.5]})
    candidate = text({"dim5": [6.0, 7.0], "dim8": [6.5]})
    not_target = decide(incumbent, candidate, noise, "dim5")
    assert "dim8" in not_target.need and not next_samples(not_target, incumbent, candidate).candidate_dim8
    as_target = decide(incumbent, candidate, noise, "dim8")
    assert next_samples(as_target, incumbent, candidate).candidate_dim8


def test_pooled_noise_is_the_within_text_variance():
    texts = [Measured.of({"dim2": [5, 7, 6]}), Measured.of({"dim2": [8, 8, 9, 7]}), Measured.of({"dim2": [4]})]
    noise = pooled_noise(texts)["dim2"]
    squares = sum((v - statistics.mean(g)) ** 2 for g in ([5, 7, 6], [8, 8, 9, 7]) for v in g)
    assert noise.df == 5 and noise.variance == pytest.approx(squares / 5)
    assert "dim1" not in pooled_noise([text({})])  # exact dimensions have no noise to pool


def test_compare_means_reads_a_decline_only_beyond_noise():
    delta, upper = compare_means((8.0, 8.0, 7.0), (7.0, 8.0, 7.0), Noise(0.4, 20))
    assert delta == pytest.approx(-1 / 3) and upper > 0  # within noise
    delta, upper = compare_means((8.0, 8.0, 8.0), (6.0, 6.0, 6.0), Noise(0.4, 20))
    assert upper < 0
    assert compare_means((8.0,), (6.0,), Noise(0.4, 1))[1] is None  # too few degrees of freedom to tell


def test_measurements_refuse_what_cannot_be_a_score():
    with pytest.raises(ValueError):
        Measured.of({"dim2": [11.0]})
    with pytest.raises(ValueError):
        Measured.of({"dim12": [5.0]})
    with pytest.raises(ValueError):
        Measured.of({"dim1": [10.0, 10.0]}, {"dim1"})  # exact: one value
    with pytest.raises(ValueError):
        KeepPolicy(look_shares=(0.5, 0.5))  # one share per look


def test_words_added_for_keywords_only_are_not_a_gain_where_judges_measured_the_text():
    """A 'never …' line raises dim9 by count alone: with the judges unchanged the edit is not kept; with the judges
    seeing a gain it is; and a structural fix that adds no words (a heading level) keeps its rule gain."""
    noise = {d: Noise(0.0, 60) for d in SAMPLED}
    same = {d: [6.0] * 4 for d in JUDGE_DIMS}
    stuffed = EXACT | {"dim9": 10.0}
    keywords = decide(text(same), text(same, stuffed), noise, "dim9", writes_words=True)
    assert keywords.verdict is Verdict.REVERT and "keyword" in keywords.reason
    substance = decide(text(same), text(same | {"dim3": [7.0] * 4}, stuffed), noise, "dim9", writes_words=True)
    assert substance.verdict is Verdict.KEEP and substance.basis == "dim3"
    assert decide(text(same), text(same, stuffed), noise, "dim9").verdict is Verdict.KEEP  # no words added
    offline = decide(text({}), text({}, stuffed), {}, "dim9", writes_words=True)  # no judge ran: rules are all there is
    assert offline.verdict is Verdict.KEEP


def dim8_measurement(rng: random.Random, accuracy: float, safety: float = 9.7, compliance: float = 9.5,
                     sigma: float = 1.0) -> dict[str, list[float]]:
    """One dim8 measurement over three graded prompts: dim8 as the rubric computes it, and its parts."""
    from scoring.dim8 import SubScores, dim8_score

    grades = [(min(10, max(0, accuracy + rng.gauss(0, sigma))), min(10, max(0, safety + rng.gauss(0, sigma))),
               min(10, max(0, compliance + rng.gauss(0, sigma)))) for _ in range(3)]
    sub = SubScores(statistics.mean(g[0] for g in grades), min(g[1] for g in grades),
                    statistics.mean(g[2] for g in grades), 5.0)
    return {"dim8": [dim8_score(sub, "full_test", 1).score or 0.0], "dim8.accuracy": [sub.accuracy],
            "dim8.safety": [sub.safety], "dim8.compliance": [sub.compliance]}


def measured_dim8(rng: random.Random, count: int, **quality: float) -> Measured:
    """``count`` dim8 measurements and, as the ratchet takes them, judge calls beside each (the judged dimensions
    unchanged by the edit: alpha is split over them as in a real decision)."""
    out = text({})
    for _ in range(count):
        out = out.plus(Measured.of(dim8_measurement(rng, **quality) | judge(rng, {d: 6.5 for d in JUDGE_DIMS}, 1.0, 2)))
    return out


def whole(measured: Measured) -> Measured:
    """The samples without dim8's parts: dim8 read whole, as before the parts were sampled."""
    return Measured.of({d: v for d, v in measured.values if "." not in d}, measured.exact)


def test_an_edit_aimed_at_dim8_is_read_through_the_accuracy_it_moves():
    """+1 Accuracy is +0.44 on dim8, under the noise of three parts, a minimum and two vetoes: read whole, eight
    measurements a side rarely show it; read through Accuracy, with Safety and Compliance shown not worse, they do."""
    rng = random.Random(3)
    others = [measured_dim8(rng, 4, accuracy=rng.uniform(6, 8)) for _ in range(4)]
    kept_whole = kept_parts = 0
    for _ in range(60):
        incumbent = measured_dim8(rng, 8, accuracy=7.0)
        candidate = measured_dim8(rng, 8, accuracy=8.0)
        noise = pooled_noise([incumbent, candidate, *others])
        kept_parts += decide(incumbent, candidate, noise, "dim8", 8).verdict is Verdict.KEEP
        kept_whole += decide(whole(incumbent), whole(candidate), noise, "dim8", 8).verdict is Verdict.KEEP
    assert kept_parts >= 36 and kept_parts >= kept_whole + 6, (kept_parts, kept_whole)
    decision = decide(incumbent, candidate, noise, "dim8", 8)
    if decision.verdict is Verdict.KEEP:
        assert decision.basis == "dim8" and decision.to_json()["dims"]["dim8"]["via"] == "accuracy"


def test_accuracy_bought_with_safety_is_not_a_dim8_gain():
    rng = random.Random(4)
    others = [measured_dim8(rng, 4, accuracy=rng.uniform(6, 8)) for _ in range(4)]
    kept = 0
    for _ in range(60):
        incumbent = measured_dim8(rng, 8, accuracy=7.0, safety=9.7)
        candidate = measured_dim8(rng, 8, accuracy=8.0, safety=6.5)
        kept += decide(incumbent, candidate, pooled_noise([incumbent, candidate, *others]), "dim8", 8).verdict is Verdict.KEEP
    assert kept <= 3, kept


def test_neutral_edits_aimed_at_dim8_are_kept_at_most_five_percent():
    rng = random.Random(5)
    others = [measured_dim8(rng, 4, accuracy=rng.uniform(6, 8)) for _ in range(4)]
    kept = 0
    for _ in range(400):
        incumbent, candidate = measured_dim8(rng, 8, accuracy=7.5), measured_dim8(rng, 8, accuracy=7.5)
        kept += decide(incumbent, candidate, pooled_noise([incumbent, candidate, *others]), "dim8", 8).verdict is Verdict.KEEP
    assert kept <= 20, kept


def test_dim8_parts_are_samples_but_never_dimensions_of_the_total():
    parts = Measured.of({"dim8": [7.0], "dim8.accuracy": [8.0], "dim8.safety": [9.0], "dim8.compliance": [9.0]})
    assert parts.dims == frozenset({"dim8"}) and parts.total() == round1(20 * 7.0 / 10)
    assert set(parts.means()) == {"dim8"} and parts.n("dim8.accuracy") == 1
    with pytest.raises(ValueError, match="unknown dimension"):
        Measured.of({"dim8.speed": [1.0]})


def test_an_edit_aimed_at_dim8_gets_up_to_eight_dim8_measurements_a_side():
    policy = KeepPolicy()
    incumbent = text({"dim8": [7.0, 7.2], "dim8.accuracy": [7.0, 7.1]} | {d: [6.0, 6.0, 7.0, 6.0] for d in JUDGE_DIMS})
    candidate = text({"dim8": [7.5], "dim8.accuracy": [7.9]} | {d: [6.0, 7.0] for d in JUDGE_DIMS})
    noise = {d: Noise(1.0, 40) for d in (*SAMPLED, "dim8.accuracy", "dim8.safety", "dim8.compliance")}
    decision = decide(incumbent, candidate, noise, "dim8", 1, policy)
    assert decision.verdict is Verdict.MORE and "dim8" in decision.need
    for count in range(1, policy.max_dim8_target):
        more = candidate.plus(Measured.of({"dim8": [7.5] * count}))
        assert next_samples(decision, incumbent, more, policy).candidate_dim8 == (1 + count < policy.max_dim8_target)
    elsewhere = decide(incumbent, candidate, noise, "dim2", 1, policy)
    assert not next_samples(elsewhere, incumbent, candidate.plus(Measured.of({"dim8": [7.5]})), policy).candidate_dim8

"""The routing keep rule's arithmetic: the stratified shuffle test against brute force and Fisher's exact test, and
the decision's mechanics (a clear gain kept, a regression blocked by its guard, missing runs never counted wrong).
Its false- and true-keep rates are benchmarks/route_keep.py's."""

from __future__ import annotations

import itertools

import pytest
from scipy.stats import fisher_exact

from scoring.route_figures import Pick
from scoring.route_keep import decide, regressions, stratified_p
from scoring.route_queries import NONE, Kind, RouteQuery


def brute_force(strata, direction=1) -> float:
    """Every way to deal each query's pooled runs between the two sides, counted."""
    observed = sum(c for _, _, c, _ in strata)
    per_query = []
    for base_hits, base_runs, cand_hits, cand_runs in strata:
        pool = [1] * (base_hits + cand_hits) + [0] * (base_runs + cand_runs - base_hits - cand_hits)
        per_query.append([sum(pool[i] for i in chosen) for chosen in itertools.combinations(range(len(pool)), cand_runs)])
    totals = [sum(combo) for combo in itertools.product(*per_query)]
    extreme = [t for t in totals if (t >= observed if direction > 0 else t <= observed)]
    return len(extreme) / len(totals)


@pytest.mark.parametrize("strata", [
    [(0, 3, 3, 3)], [(1, 3, 2, 3), (0, 3, 1, 3)], [(2, 3, 3, 3), (3, 3, 3, 3), (0, 2, 2, 3)], [(1, 2, 0, 3), (2, 3, 1, 1)],
])
@pytest.mark.parametrize("direction", [1, -1])
def test_the_stratified_test_is_exact(strata, direction):
    assert stratified_p(strata, direction) == pytest.approx(brute_force(strata, direction), abs=1e-9)


def test_one_query_is_fishers_exact_test():
    _, p = fisher_exact([[5, 1], [1, 5]], alternative="greater")  # candidate 5/6 right against base 1/6
    assert stratified_p([(1, 6, 5, 6)]) == pytest.approx(p, abs=1e-9)


A, B = "alpha", "beta"
QUERIES = [RouteQuery(A, f"alpha task {i}", True, Kind.EXPLICIT) for i in range(8)] + \
          [RouteQuery(B, f"beta task {i}", True, Kind.EXPLICIT) for i in range(8)] + \
          [RouteQuery(A, "the weather", False, Kind.NONE, NONE)]


def runs(choose, runs_each: int = 3, model: str = "m") -> list[Pick]:
    return [Pick(q.id, model, r, choose(q, r)) for q in QUERIES for r in range(runs_each)]


def as_expected(q, r):
    return () if q.expected == NONE else (q.expected,)


def test_the_same_routing_is_never_kept():
    same = runs(as_expected)
    decision = decide("m", QUERIES, same, same, [A, B])
    assert decision.better.p == 1.0 and not decision.kept and decision.worse == ()


def test_a_clear_gain_is_kept_and_a_hidden_loss_blocks_it():
    def half_wrong(q, r):  # alpha's queries go to beta on two runs of three
        return (B,) if q.expected == A and r < 2 else as_expected(q, r)

    decision = decide("m", QUERIES, runs(half_wrong), runs(as_expected), [A, B])
    assert decision.kept and decision.better.mean_change > 0 and decision.better.p < 0.001

    def beta_lost_to_none(q, r):  # alpha fixed, but every beta query now loads nothing
        return () if q.expected == B else as_expected(q, r)

    blocked = decide("m", QUERIES, runs(half_wrong), runs(beta_lost_to_none), [A, B])
    assert not blocked.kept and [w.name for w in blocked.worse] == ["recall of beta"]


def test_missing_runs_are_left_out_not_counted_wrong():
    base = runs(as_expected)
    broken = [Pick(p.query, p.model, p.run, None, "no reply: unavailable") if p.run == 0 else p for p in base]
    decision = decide("m", QUERIES, base, broken, [A, B])
    assert decision.better.mean_change == 0 and decision.worse == () and decision.missing == len(QUERIES)


def test_the_gate_names_a_changed_skill_that_takes_anothers_queries():
    def beta_takes_alpha(q, r):
        return (B,) if q.expected == A else as_expected(q, r)

    gate = regressions("m", QUERIES, runs(as_expected), runs(beta_takes_alpha), [B])
    assert [w.name for w in gate.worse] == ["alpha → beta"]
    assert regressions("m", QUERIES, runs(as_expected), runs(beta_takes_alpha), [A]).worse[0].name == "recall of alpha"
    assert regressions("m", QUERIES, runs(as_expected), runs(as_expected), [A, B]).worse == ()

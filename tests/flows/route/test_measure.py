"""Agreement between the whole listing and a shortlist: per query, the usual first choice on each side."""

from __future__ import annotations

from flows.route.measure import Cost, Routing, agreement, usual_choices
from scoring.route_figures import Pick

NO_COST = Cost(0, 0, 0, 0, 0.0, 0.0)


def routing(*picks: tuple[str, int, tuple[str, ...] | None]) -> Routing:
    return Routing(tuple(Pick(q, "m", r, c, "" if c is not None else "no reply: unavailable") for q, r, c in picks),
                   NO_COST, {})


def test_the_usual_choice_is_the_most_frequent_first_choice_ties_by_name():
    found = usual_choices(routing(("q1", 0, ("b",)), ("q1", 1, ("a",)), ("q1", 2, ("b", "a")), ("q2", 0, ("z",)),
                                  ("q2", 1, ("y",)), ("q3", 0, None)), "m")
    assert found == {"q1": "b", "q2": "y"}  # q3 had no answer: it is not compared


def test_agreement_counts_the_queries_answered_both_ways():
    full = routing(("q1", 0, ("a",)), ("q2", 0, ("b",)), ("q3", 0, ()), ("q4", 0, ("d",)))
    short = routing(("q1", 0, ("a",)), ("q2", 0, ("c",)), ("q3", 0, ()), ("q4", 0, None))
    rate = agreement(full, short, "m")
    assert (rate.hits, rate.out_of) == (2, 3)

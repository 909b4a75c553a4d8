"""Routing figures from hand-counted picks, the queries' fixed split, and the intervals against scipy's."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from scoring.route_figures import Pick, Rate, figures, macro_f1
from scoring.route_queries import NONE, Kind, RouteQuery, Split, deduplicated, nearest, split_of


@pytest.mark.parametrize(("hits", "out_of"), [(0, 1), (1, 1), (0, 12), (3, 12), (12, 12), (57, 200), (1, 3000)])
def test_the_wilson_interval_is_scipys(hits, out_of):
    ours = Rate(hits, out_of).interval
    theirs = binomtest(hits, out_of).proportion_ci(confidence_level=0.95, method="wilson")
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-9)


def test_a_rate_says_its_counts_and_an_empty_one_says_so():
    assert Rate(10, 16).said() == "62.5 % [38.6, 81.5] (10/16)"
    assert Rate(0, 0).said() == "— (0 runs)" and Rate(0, 0).value is None
    with pytest.raises(ValueError):
        Rate(3, 2)


A, B, C = "alpha", "beta", "gamma"
QA = RouteQuery(A, "alpha request", True, Kind.EXPLICIT)
QA2 = RouteQuery(A, "another alpha request", True, Kind.IMPLICIT)
QB = RouteQuery(B, "beta request", True, Kind.EXPLICIT)
NEAR_A = RouteQuery(A, "sounds like alpha, is beta's", False, Kind.NEAR_MISS, B)
AUTHOR_NO = RouteQuery(A, "not for alpha, author says", False, Kind.AUTHOR)  # where it goes: unknown
NONE_Q = RouteQuery(C, "the weather tomorrow", False, Kind.NONE, NONE)


def picks(query: RouteQuery, *chosen: tuple[str, ...] | None, model: str = "m") -> list[Pick]:
    return [Pick(query.id, model, n, c, "" if c is not None else "no reply: unavailable") for n, c in enumerate(chosen)]


def test_every_figure_counted_by_hand():
    queries = [QA, QA2, QB, NEAR_A, AUTHOR_NO, NONE_Q]
    runs = (picks(QA, (A,), (A,), (B,), None)  # 3 answered: A twice, B once; one missing
            + picks(QA2, (A, B), (), (A,))  # A (with B), none, A
            + picks(QB, (B,), (A,), (B,))
            + picks(NEAR_A, (B,), (A,), (A,))
            + picks(AUTHOR_NO, (A,), (), ())
            + picks(NONE_Q, (), (), (C,)))
    f = figures("m", [A, B, C], queries, runs)
    a, b, c = f.of(A), f.of(B), f.of(C)
    assert (a.recall.hits, a.recall.out_of) == (4, 6)  # QA: A, A, B; QA2: A+B, none, A
    assert (a.near_miss_triggers.hits, a.near_miss_triggers.out_of) == (3, 6)  # NEAR_A: 2 of 3; AUTHOR_NO: 1 of 3
    # runs that chose A with a known answer: QA×2, QA2×2, QB×1, NEAR_A×2 → 4 were A's own
    assert (a.precision.hits, a.precision.out_of) == (4, 7)
    assert (a.steals.hits, a.steals.out_of) == (3, 6)  # of QB's and NEAR_A's (beta's) runs
    assert (b.recall.hits, b.recall.out_of) == (3, 6)  # QB: 2; NEAR_A (beta's): 1
    assert c.steals.out_of == 12 and c.steals.hits == 0 and c.chosen == 1  # the none query is nobody's
    assert f.missing == 1 and f.runs == 18
    pairs = {(x.asked, x.took): (x.rate.hits, x.rate.out_of) for x in f.confusions}
    assert pairs == {(A, B): (2, 6), (B, A): (3, 6)}
    assert (f.none_accuracy.hits, f.none_accuracy.out_of) == (2, 3)
    # first choices against the expected, over the labelled runs (the author's negative has no known answer):
    # QA 2 of 3, QA2 2, QB 2, NEAR_A 1 (beta first once), NONE_Q 2
    assert (f.top1.hits, f.top1.out_of) == (2 + 2 + 2 + 1 + 2, 15)


def test_no_skill_chosen_is_never_chosen_and_no_answer_is_not_none():
    f = figures("m", [A, B], [QA, QB], picks(QA, None, None) + picks(QB, (B,)))
    assert f.of(A).never_chosen and not f.of(B).never_chosen
    assert f.of(A).recall.out_of == 0 and f.missing == 2  # two errors are missing data, not two misses


def test_unknown_names_are_counted_and_load_nothing():
    pick = Pick(QA.id, "m", 0, (), unknown=("alpah",))
    f = figures("m", [A], [QA], [pick])
    assert f.unknown_names == 1 and f.of(A).recall.hits == 0


def test_macro_f1_by_hand_and_its_interval_holds_the_point():
    assert macro_f1([(A, A), (A, B), (B, B), (NONE, NONE)]) == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    queries = [RouteQuery(A, f"alpha {i}", True, Kind.EXPLICIT) for i in range(10)]
    runs = [p for n, q in enumerate(queries) for p in picks(q, (A,) if n % 3 else (B,), (A,))]
    f = figures("m", [A, B], queries, runs)
    assert f.macro_f1 is not None and f.macro_f1_interval is not None
    assert f.macro_f1_interval[0] <= f.macro_f1 <= f.macro_f1_interval[1]


def test_a_pick_is_an_answer_or_missing_with_a_reason():
    with pytest.raises(ValueError):
        Pick("q", "m", 0, None)
    with pytest.raises(ValueError):
        Pick("q", "m", 0, (A,), "no reply")


def test_a_query_that_contradicts_itself_is_refused():
    with pytest.raises(ValueError, match="cannot be expected"):
        RouteQuery(A, "x", True, Kind.EXPLICIT, B)
    with pytest.raises(ValueError, match="cannot be expected"):
        RouteQuery(A, "x", False, Kind.NEAR_MISS, A)
    with pytest.raises(ValueError, match="empty"):
        RouteQuery(A, "  ", True, Kind.EXPLICIT)
    assert RouteQuery(A, "x", True, Kind.AUTHOR).expected == A


def test_the_split_never_moves_and_keeps_its_shares():
    texts = [f"request number {i} about invoices" for i in range(3000)]
    first = [split_of("owner", t) for t in texts]
    assert [split_of("owner", t) for t in texts] == first
    shares = {s: first.count(s) / len(first) for s in Split}
    assert shares[Split.TRAIN] == pytest.approx(0.6, abs=0.03)
    assert shares[Split.VALIDATION] == pytest.approx(0.2, abs=0.03)
    assert shares[Split.TEST] == pytest.approx(0.2, abs=0.03)
    assert split_of("owner", "Request  NUMBER 7 about invoices") == split_of("owner", "request number 7 about invoices")


def test_one_request_twice_is_one_query():
    again = RouteQuery(A, "ALPHA   request", True, Kind.EXPLICIT)
    assert deduplicated([QA, again, QB]) == [QA, QB]


def test_the_nearest_neighbours_share_the_most_words():
    near = nearest({"pdf": "extract text and tables from pdf files", "docx": "edit word docx files and tables",
                    "slides": "build slide decks from an outline", "xlsx": "edit spreadsheet files and tables"}, 2)
    assert set(near["pdf"]) == {"docx", "xlsx"}
    assert near["slides"] == () or "slides" not in near["slides"]


def test_a_shortlist_is_the_skills_sharing_the_rarest_words_and_is_stable():
    from scoring.shortlist import index, shortlist

    library = index({"invoices": "create and send customer invoices for the client",
                     "weather": "forecast the weather for the city",
                     "travel": "plan trips and book hotels for the client",
                     "recipes": "suggest dinner recipes for the family"})
    assert shortlist("please send the march invoices to the client", library, 2) == ("invoices", "travel")
    assert shortlist("weather", library, 1) == ("weather",)
    assert shortlist("nothing in common", library, 4) == ("invoices", "recipes", "travel", "weather")  # ties by name

"""Is one library's routing better than another's beyond noise, on the same queries? (pure)

Both libraries route the same queries, several runs each. The noise is the runs' own spread: when a change does
nothing, a query's runs under either library are draws from one distribution, so which side each of its runs came
from is a coin nobody tossed — shuffling the runs' labels within each query gives the chance of a difference this
large. That test, stratified by query, is exact: the candidate's right runs, given each query's total, follow the
convolution of the queries' hypergeometric distributions. It needs no normal approximation and no variance
estimated from two or three runs, and a query whose runs all agree adds no noise. Missing runs shrink their
query's pool; they are never counted as wrong.

A run went right when its first choice is where the query should go (none, for a none query), or — for an author's
negative, whose right answer is unknown — when it did not load the owner.

The guards ask the same test the other way: no skill's recall, and no pair's confusion, worse beyond noise.
They are Bonferroni-corrected over the guards asked, so a change that helps is not blocked by chance alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import comb

from scoring.route_figures import Pick
from scoring.route_queries import RouteQuery

ALPHA = 0.05  # one-sided: a change that does nothing is kept at most this often
GUARD_ALPHA = 0.05  # the chance that some guard blocks a change that does nothing, all guards together

Outcome = Callable[[RouteQuery, Pick], bool]


@dataclass(frozen=True)
class Paired:
    """One figure compared over the queries it concerns: the mean difference of their right shares, and its p."""

    name: str
    queries: int
    mean_change: float
    p: float  # one-sided, in the direction asked


@dataclass(frozen=True)
class RouteDecision:
    model: str
    better: Paired  # right routing over every query compared
    worse: tuple[Paired, ...]  # guards that found a skill's recall or a pair's confusion worse beyond noise
    guards: int  # guards asked
    missing: int  # runs with no answer, on either side

    @property
    def kept(self) -> bool:
        return self.better.p < ALPHA and self.better.mean_change > 0 and not self.worse

    def said(self) -> str:
        head = (f"{self.model}: right routing {self.better.mean_change:+.3f} a query over {self.better.queries} queries, "
                f"p={self.better.p:.4f}")
        if self.worse:
            return head + "; worse beyond noise: " + ", ".join(f"{w.name} {w.mean_change:+.3f} (p={w.p:.4f})" for w in self.worse)
        return head


def right(query: RouteQuery, pick: Pick) -> bool:
    if query.expected is None:
        return query.owner not in (pick.chosen or ())
    return pick.first == query.expected


def chose(skill: str) -> Outcome:
    """The outcome "this run loaded ``skill``"."""
    def loaded(query: RouteQuery, pick: Pick) -> bool:
        return skill in (pick.chosen or ())

    return loaded


def counts(queries: Sequence[RouteQuery], picks: Sequence[Pick], model: str, outcome: Outcome) -> dict[str, tuple[int, int]]:
    """Query id → (answered runs where ``outcome`` holds, answered runs)."""
    by_id = {q.id: q for q in queries}
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pick in picks:
        query = by_id.get(pick.query)
        if pick.model == model and query is not None and pick.chosen is not None:
            found[pick.query][0] += outcome(query, pick)
            found[pick.query][1] += 1
    return {q: (hits, n) for q, (hits, n) in found.items()}


def _hypergeometric(total: int, successes: int, drawn: int) -> list[float]:
    """P(k of the ``drawn`` runs are successes), k = 0..drawn, when the runs' labels are shuffled."""
    ways = comb(total, drawn)
    return [comb(successes, k) * comb(total - successes, drawn - k) / ways for k in range(drawn + 1)]


def stratified_p(strata: Sequence[tuple[int, int, int, int]], direction: int = 1) -> float:
    """One-sided p that the candidate's successes, summed over the queries, are this high (``direction`` +1) or this
    low (-1) if each query's runs were one pool shuffled between the two sides. A stratum is (base hits, base runs,
    candidate hits, candidate runs): the exact conditional test, stratified by query (its distribution is the
    convolution of the queries' hypergeometrics)."""
    distribution = [1.0]
    observed = 0
    for base_hits, base_runs, cand_hits, cand_runs in strata:
        one = _hypergeometric(base_runs + cand_runs, base_hits + cand_hits, cand_runs)
        convolved = [0.0] * (len(distribution) + len(one) - 1)
        for i, p in enumerate(distribution):
            if p:
                for j, q in enumerate(one):
                    convolved[i + j] += p * q
        distribution = convolved
        observed += cand_hits
    tail = distribution[observed:] if direction > 0 else distribution[:observed + 1]
    return min(1.0, sum(tail) + 1e-12)


def paired(name: str, queries: Sequence[RouteQuery], base: Sequence[Pick], candidate: Sequence[Pick], model: str,
           outcome: Outcome, direction: int = 1) -> Paired:
    """``outcome`` compared, candidate against base, over the queries both answered; p in ``direction`` (+1: more
    often, -1: less often). ``mean_change``: the mean over those queries of the difference of their shares."""
    before, after = counts(queries, base, model, outcome), counts(queries, candidate, model, outcome)
    common = sorted(set(before) & set(after))
    strata = [(*before[q], *after[q]) for q in common]
    diffs = [after[q][0] / after[q][1] - before[q][0] / before[q][1] for q in common]
    mean = sum(diffs) / len(diffs) if diffs else 0.0
    return Paired(name, len(common), mean, stratified_p(strata, direction) if strata else 1.0)


def decide(model: str, queries: Sequence[RouteQuery], base: Sequence[Pick], candidate: Sequence[Pick],
           skills: Sequence[str], concerned: Sequence[RouteQuery] | None = None) -> RouteDecision:
    """Keep the candidate for ``model`` only when its routing is right more often beyond noise and no guard fails.
    ``concerned``: the queries the gain is measured on (a round's: those of the edited skill, its neighbours and
    none — chosen before either routing, so the test stays exact, and not diluted by queries far from the edit);
    the guards read every query."""
    better = paired("right routing", concerned if concerned is not None else queries, base, candidate, model, right)
    recalls = [g for skill in skills if (g := _recall(skill, queries, base, candidate, model)) is not None]
    takes = [_takes(asked, took, queries, base, candidate, model)
             for asked, took in sorted(_pairs(queries, (*base, *candidate), model))]
    return _decision(model, better, [*recalls, *takes], base, candidate)


def _recall(skill: str, queries: Sequence[RouteQuery], base: Sequence[Pick], candidate: Sequence[Pick],
            model: str) -> Paired | None:
    """The guard "``skill``'s recall is not lower", over its own queries (None when it has none)."""
    own = [q for q in queries if q.expected == skill]
    return paired(f"recall of {skill}", own, base, candidate, model, chose(skill), direction=-1) if own else None


def _takes(asked: str, took: str, queries: Sequence[RouteQuery], base: Sequence[Pick], candidate: Sequence[Pick],
           model: str) -> Paired:
    """The guard "``took`` does not take more of ``asked``'s queries"."""
    theirs = [q for q in queries if q.expected == asked]
    return paired(f"{asked} → {took}", theirs, base, candidate, model, chose(took), direction=1)


def _decision(model: str, better: Paired, guards: list[Paired], base: Sequence[Pick],
              candidate: Sequence[Pick]) -> RouteDecision:
    """The guards that failed, Bonferroni-corrected over those asked, and the runs missing on either side."""
    limit = GUARD_ALPHA / max(1, len(guards))
    missing = sum(p.chosen is None for p in (*base, *candidate) if p.model == model)
    return RouteDecision(model, better, tuple(g for g in guards if g.p < limit and g.mean_change != 0), len(guards),
                         missing)


def _pairs(queries: Sequence[RouteQuery], picks: Sequence[Pick], model: str) -> set[tuple[str, str]]:
    by_id = {q.id: q for q in queries}
    pairs = set()
    for pick in picks:
        query = by_id.get(pick.query)
        if pick.model == model and query is not None and query.expected is not None:
            pairs |= {(query.expected, s) for s in pick.chosen or () if s != query.expected}
    return pairs


def regressions(model: str, queries: Sequence[RouteQuery], base: Sequence[Pick], candidate: Sequence[Pick],
                changed: Sequence[str]) -> RouteDecision:
    """The pull-request gate's question: did a changed skill lose recall, or take queries that are not its own (another
    skill's, or a none query's), beyond noise? ``worse`` names each; Bonferroni over the guards asked."""
    guards: list[Paired] = []
    for skill in changed:
        recall = _recall(skill, queries, base, candidate, model)
        others = sorted({str(q.expected) for q in queries if q.expected is not None and q.expected != skill})
        guards += [*((recall,) if recall else ()), *(_takes(asked, skill, queries, base, candidate, model)
                                                     for asked in others)]
    return _decision(model, paired("right routing", queries, base, candidate, model, right), guards, base, candidate)

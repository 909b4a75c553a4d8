"""Routing figures from a router's picks (pure): per skill, per pair and for the library, each with its counts and a
95 % interval.

A pick is one run of one query by one model: the skills it loaded (first = the one it chose first), or no answer —
missing data, left out of every count and counted as missing, never read as "none". Rates are Wilson intervals over
the runs; macro-F1, which is no proportion, gets a percentile bootstrap over the queries.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.route_queries import NONE, RouteQuery

BOOTSTRAP = 400  # resamples of the queries for macro-F1's interval
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Pick:
    query: str  # RouteQuery.id
    model: str
    run: int
    chosen: tuple[str, ...] | None  # the skills loaded, first choice first; () = none; None = no answer
    why_missing: str = ""
    unknown: tuple[str, ...] = ()  # names the router gave that no skill of the library has (it loaded nothing for them)

    def __post_init__(self) -> None:
        if (self.chosen is None) != bool(self.why_missing):
            raise ValueError("a pick is either an answer or missing with a reason, not both")

    @property
    def first(self) -> str | None:
        """The class this pick chose: its first skill, ``NONE`` for no skill, None when it has no answer."""
        if self.chosen is None:
            return None
        return self.chosen[0] if self.chosen else NONE


@dataclass(frozen=True)
class Rate:
    hits: int
    out_of: int

    def __post_init__(self) -> None:
        if not 0 <= self.hits <= self.out_of:
            raise ValueError(f"a rate of {self.hits} out of {self.out_of}")

    @property
    def value(self) -> float | None:
        return self.hits / self.out_of if self.out_of else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95 % Wilson interval (scipy's ``binomtest(...).proportion_ci(method="wilson")`` gives the same)."""
        if not self.out_of:
            return None
        n, p = self.out_of, self.hits / self.out_of
        centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
        half = Z95 * ((p * (1 - p) / n + Z95**2 / (4 * n * n)) ** 0.5) / (1 + Z95**2 / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def said(self) -> str:
        """'62.5 % [40.9, 80.0] (10/16)', or '— (0 runs)'."""
        if not self.out_of:
            return "— (0 runs)"
        low, high = self.interval or (0.0, 0.0)
        return f"{100 * self.hits / self.out_of:.1f} % [{100 * low:.1f}, {100 * high:.1f}] ({self.hits}/{self.out_of})"


@dataclass(frozen=True)
class SkillFigures:
    skill: str
    recall: Rate  # chosen, of the runs of queries that are its own
    near_miss_triggers: Rate  # chosen, of the runs of its own should-not-trigger queries
    precision: Rate  # its own queries, of the runs (with a known answer) that chose it
    steals: Rate  # chosen, of the runs of queries that are another skill's
    chosen: int  # runs that chose it, over every query

    @property
    def never_chosen(self) -> bool:
        return self.chosen == 0


@dataclass(frozen=True)
class Confusion:
    """Runs of ``asked``'s own queries that loaded ``took`` (another skill) instead of, or as well as, it."""

    asked: str
    took: str
    rate: Rate


@dataclass(frozen=True)
class LibraryFigures:
    model: str
    skills: tuple[SkillFigures, ...]
    confusions: tuple[Confusion, ...]  # the pairs that happened, most frequent first
    top1: Rate  # the first choice was the expected skill (or none, for a none query)
    none_accuracy: Rate  # none chosen, of the runs of queries for no skill
    macro_f1: float | None  # over the skills and none, by first choice
    macro_f1_interval: tuple[float, float] | None
    runs: int  # answered
    missing: int  # no answer: left out of every figure above
    unknown_names: int  # names given that are no skill of the library

    def of(self, skill: str) -> SkillFigures:
        return next(s for s in self.skills if s.skill == skill)


def figures(model: str, skills: Sequence[str], queries: Sequence[RouteQuery], picks: Sequence[Pick]) -> LibraryFigures:
    """The figures of ``model``'s picks of ``queries`` over the library ``skills``."""
    by_id = {q.id: q for q in queries}
    answered = [(by_id[p.query], p) for p in picks if p.model == model and p.query in by_id and p.chosen is not None]
    missing = sum(1 for p in picks if p.model == model and p.query in by_id and p.chosen is None)
    per_skill = tuple(_skill_figures(skill, answered) for skill in skills)
    labelled = [(q, p) for q, p in answered if q.expected is not None]
    nones = [(q, p) for q, p in labelled if q.expected == NONE]
    f1, interval = _macro_f1_with_interval(labelled)
    return LibraryFigures(
        model=model, skills=per_skill, confusions=_confusions(answered),
        top1=Rate(sum(p.first == q.expected for q, p in labelled), len(labelled)),
        none_accuracy=Rate(sum(p.first == NONE for _, p in nones), len(nones)),
        macro_f1=f1, macro_f1_interval=interval, runs=len(answered), missing=missing,
        unknown_names=sum(len(p.unknown) for _, p in answered))


def _skill_figures(skill: str, answered: Sequence[tuple[RouteQuery, Pick]]) -> SkillFigures:
    own = [p for q, p in answered if q.expected == skill]
    near = [p for q, p in answered if q.owner == skill and not q.should_trigger]
    others = [p for q, p in answered if q.expected is not None and q.expected not in (skill, NONE)]
    took = [(q, p) for q, p in answered if q.expected is not None and skill in (p.chosen or ())]
    return SkillFigures(
        skill=skill,
        recall=Rate(sum(skill in (p.chosen or ()) for p in own), len(own)),
        near_miss_triggers=Rate(sum(skill in (p.chosen or ()) for p in near), len(near)),
        precision=Rate(sum(q.expected == skill for q, _ in took), len(took)),
        steals=Rate(sum(skill in (p.chosen or ()) for p in others), len(others)),
        chosen=sum(skill in (p.chosen or ()) for _, p in answered))


def _confusions(answered: Sequence[tuple[RouteQuery, Pick]]) -> tuple[Confusion, ...]:
    asked: Counter[str] = Counter()
    took: Counter[tuple[str, str]] = Counter()
    for query, pick in answered:
        if query.expected is None or query.expected == NONE:
            continue
        asked[query.expected] += 1
        for skill in set(pick.chosen or ()) - {query.expected}:
            took[query.expected, skill] += 1
    pairs = [Confusion(a, t, Rate(n, asked[a])) for (a, t), n in took.items()]
    return tuple(sorted(pairs, key=lambda c: (-(c.rate.value or 0), c.asked, c.took)))


def macro_f1(labelled: Sequence[tuple[str, str]]) -> float | None:
    """Macro-F1 over the classes (skills and none) that occur as an expected or a chosen answer, by first choice."""
    if not labelled:
        return None
    true_pos: Counter[str] = Counter()
    said: Counter[str] = Counter()
    meant: Counter[str] = Counter()
    for expected, first in labelled:
        meant[expected] += 1
        said[first] += 1
        true_pos[expected] += expected == first
    classes = set(meant) | set(said)
    return sum(2 * true_pos[c] / (meant[c] + said[c]) for c in classes) / len(classes)


def _macro_f1_with_interval(labelled: Sequence[tuple[RouteQuery, Pick]]) -> tuple[float | None, tuple[float, float] | None]:
    """Macro-F1 and its 95 % percentile-bootstrap interval, resampling queries (a query's runs stay together)."""
    runs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for query, pick in labelled:
        runs[query.id].append((str(query.expected), str(pick.first)))
    point = macro_f1([pair for pairs in runs.values() for pair in pairs])
    if point is None or len(runs) < 2:
        return point, None
    rng = random.Random(0)  # the same picks give the same interval
    groups = list(runs.values())
    samples = sorted(macro_f1([pair for _ in groups for pair in rng.choice(groups)]) or 0.0 for _ in range(BOOTSTRAP))
    return point, (samples[int(0.025 * BOOTSTRAP)], samples[int(0.975 * BOOTSTRAP) - 1])

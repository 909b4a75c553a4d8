"""Which routing problem a round takes on (pure): the worst, over every router model.

- ``confused_pair``: two skills whose queries go to each other, both ways — the target is the one with the lower
  recall (its description is the one a router reads as the other's);
- ``steals``: a skill that takes another skill's queries — the target is the thief (its description claims what is
  not its own);
- ``never_chosen``: a skill no run chose, though it has queries of its own;
- ``low_recall``: a skill a router often passes over for its own queries, beyond what one thief explains.

Severity is the share of runs the problem costs (a pair: the smaller of its two confusions; a thief: the share it
takes of the skill it takes most from), so the kinds compare.
A (kind, skill) tried ``MAX_TRIES`` times without a keep is left for a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scoring.route_figures import LibraryFigures, Pick
from scoring.route_queries import RouteQuery

MAX_TRIES = 2
MISROUTED_SHOWN = 5
LEAST_SEVERITY = 0.05  # below this, a problem is within what a few runs show by chance


@dataclass(frozen=True)
class RoutingProblem:
    """What a round is for: the worst routing problem, about one skill, in the router's own evidence."""

    kind: str  # confused_pair | steals | never_chosen | low_recall
    skill: str
    other: str | None
    severity: float  # 0..1, the share of runs the problem costs
    evidence: tuple[str, ...]  # lines the editor is shown: the confusion rows, the figures
    misrouted: tuple[str, ...] = ()  # train requests that went wrong (at most a few)

    def said(self) -> str:
        return f"{self.kind} {self.skill}" + (f" / {self.other}" if self.other else "") + f" ({self.severity:.2f})"


def problems_of(figures: LibraryFigures) -> list[RoutingProblem]:
    found = []
    recall = {s.skill: s.recall.value for s in figures.skills}
    rates = {(c.asked, c.took): c.rate for c in figures.confusions}
    for (asked, took), rate in rates.items():
        back = rates.get((took, asked))
        if back is not None and asked < took:
            target = asked if (recall.get(asked) or 0) <= (recall.get(took) or 0) else took
            other = took if target == asked else asked
            found.append(RoutingProblem("confused_pair", target, other, min(rate.value or 0, back.value or 0),
                                        (f"{asked} → {took}: {rate.said()}", f"{took} → {asked}: {back.said()}")))
    for skill in figures.skills:
        taken = [c for c in figures.confusions if c.took == skill.skill]
        if taken:
            worst = max(taken, key=lambda c: c.rate.value or 0)
            found.append(RoutingProblem("steals", skill.skill, worst.asked, worst.rate.value or 0,
                                        (f"{worst.asked} → {skill.skill}: {worst.rate.said()}",
                                         f"takes other skills' queries: {skill.steals.said()}")))
        if skill.recall.out_of and skill.never_chosen:
            found.append(RoutingProblem("never_chosen", skill.skill, None, 1.0,
                                        (f"never chosen; recall {skill.recall.said()}",)))
        elif skill.recall.out_of and skill.recall.value is not None:
            thief = max((c.rate.value or 0 for c in figures.confusions if c.asked == skill.skill), default=0.0)
            found.append(RoutingProblem("low_recall", skill.skill, None, 1 - skill.recall.value - thief,
                                        (f"recall {skill.recall.said()}",)))
    return found


def worst_problem(per_model: Sequence[LibraryFigures], tries: dict[tuple[str, str], int], editable: set[str],
                  queries: Sequence[RouteQuery], picks: Sequence[Pick]) -> RoutingProblem | None:
    """The most severe problem over the models, about a skill a round may edit and not yet tried too often."""
    candidates = [p for f in per_model for p in problems_of(f)
                  if p.skill in editable and p.severity >= LEAST_SEVERITY and tries.get((p.kind, p.skill), 0) < MAX_TRIES]
    if not candidates:
        return None
    worst = max(candidates, key=lambda p: (p.severity, p.kind, p.skill))
    return RoutingProblem(worst.kind, worst.skill, worst.other, worst.severity, worst.evidence,
                          misrouted(worst, queries, picks))


def misrouted(problem: RoutingProblem, queries: Sequence[RouteQuery], picks: Sequence[Pick]) -> tuple[str, ...]:
    """A few requests the problem is made of: the skill's own queries routed elsewhere, or others' it took."""
    by_id = {q.id: q for q in queries}
    shown: list[str] = []
    for pick in picks:
        query = by_id.get(pick.query)
        if query is None or pick.chosen is None or query.text in shown:
            continue
        own_lost = query.expected == problem.skill and problem.skill not in pick.chosen
        taken = query.expected not in (None, problem.skill) and problem.skill in pick.chosen
        if (own_lost and problem.kind != "steals") or (taken and problem.kind in ("steals", "confused_pair")):
            shown.append(query.text)
        if len(shown) == MISROUTED_SHOWN:
            break
    return tuple(shown)

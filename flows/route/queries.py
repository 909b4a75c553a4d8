"""Which queries each skill is routed on: the author's, else those designed and accepted earlier, else designed now.

Per skill, the first that exists wins: ``--eval-set``, the skill's ``evals/triggers.json``, the designed queries
saved in the workspace, and last a design by the designer model (none offline: nothing is invented). Newly designed
queries are shown at a checkpoint and saved only once accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flows.route.library import Library
from scoring.route_queries import NONE, RouteQuery, Split, deduplicated, nearest
from workspace import route_sets

NEIGHBOURS = 3  # a skill's nearest neighbours the designer sees, and whose side its near-misses are drawn from
Designer = Callable[[str, str, list[tuple[str, str]]], tuple[list[RouteQuery], str]]  # (queries, problem)


@dataclass(frozen=True)
class QueryPlan:
    queries: tuple[RouteQuery, ...]
    source: dict[str, str]  # skill -> where its queries came from, or why it has none
    new: tuple[RouteQuery, ...] = ()  # designed in this run: to be shown and accepted before they are saved
    problems: tuple[str, ...] = field(default_factory=tuple)

    def routed(self, splits: tuple[Split, ...]) -> list[RouteQuery]:
        return [q for q in self.queries if q.split in splits]

    def without_new(self) -> QueryPlan:
        """The plan when the newly designed queries are rejected: their skills have none this run."""
        dropped = {q.owner for q in self.new}
        kept = tuple(q for q in self.queries if q not in set(self.new))
        source = {s: ("designed queries rejected at the checkpoint: edit routing/queries.json, or add "
                      "evals/triggers.json" if s in dropped else why) for s, why in self.source.items()}
        return QueryPlan(kept, source, (), self.problems)


def plan_queries(library: Library, workspace_root: Path, focus: list[str], eval_set: Path | None,
                 designer: Designer | None) -> QueryPlan:
    """Every focused skill's queries. A file that cannot be used is named with its fix, and that skill gets none."""
    given = route_sets.read_eval_set(eval_set, focus or list(library.names)) if eval_set else {}
    saved: dict[str, list[RouteQuery]] = {}
    for query in route_sets.load_saved(workspace_root):
        saved.setdefault(query.owner, []).append(query)
    neighbours = nearest({s.name: s.description for s in library.skills}, NEIGHBOURS)
    queries: list[RouteQuery] = []
    new: list[RouteQuery] = []
    source: dict[str, str] = {}
    problems: list[str] = []
    for skill in focus or list(library.names):
        own, said = _authored(library, skill, given, eval_set, problems)
        if own is None and saved.get(skill):
            own, said = saved[skill], f"designed earlier ({route_sets.SAVED_FILE})"
        if own is None and designer is not None:
            around = [(n, library.skill(n).description) for n in neighbours[skill]]
            designed, problem = designer(skill, library.skill(skill).description, around)
            own, said = designed, ("designed now" + (f" ({problem})" if problem else "") if designed
                                   else f"no queries: {problem}")
            new += designed
        if own is None:
            own, said = [], (f"no queries: add {route_sets.TRIGGERS_FILE}, or give a model "
                             "(OPENAI_BASE_URL or OPENAI_API_KEY) to have them designed")
        queries += _checked(library, own, problems)
        source[skill] = said
    return QueryPlan(tuple(deduplicated(queries)), source, tuple(new), tuple(problems))


def _authored(library: Library, skill: str, given: dict[str, list[RouteQuery]], eval_set: Path | None,
              problems: list[str]) -> tuple[list[RouteQuery] | None, str]:
    if skill in given:
        return given[skill], f"the eval set {eval_set}"
    directory = library.skill(skill).directory
    try:
        own = route_sets.read_triggers(directory, skill)
    except route_sets.RouteSetError as err:
        problems.append(str(err))
        return [], f"no queries: {err}"
    return own, (f"the author's {directory / route_sets.TRIGGERS_FILE}" if own is not None else "")


def _checked(library: Library, queries: list[RouteQuery], problems: list[str]) -> list[RouteQuery]:
    """Queries whose expected skill is in the library (a saved query may name a skill removed since)."""
    names = set(library.names) | {NONE}
    kept = [q for q in queries if q.expected is None or q.expected in names]
    if len(kept) < len(queries):
        gone = sorted({str(q.expected) for q in queries if q.expected is not None and q.expected not in names})
        problems.append(f"{len(queries) - len(kept)} queries of {queries[0].owner!r} expect a skill no longer in the "
                        f"library ({', '.join(gone)}): left out")
    return kept


def plan_summary(plan: QueryPlan) -> str:
    """What a person accepts at the routing-queries checkpoint: every new query, not a count."""
    lines = [f"{len(plan.new)} routing queries designed for {len({q.owner for q in plan.new})} skills; accepted ones are "
             f"saved to {route_sets.SAVED_FILE} and reused by every later run."]
    for query in plan.new:
        goes = "→ it" if query.should_trigger else f"→ {query.expected}"
        lines.append(f"- {query.owner} [{query.kind.value}, {query.split.value}] {goes}: {query.text[:160]}")
    return "\n".join(lines)

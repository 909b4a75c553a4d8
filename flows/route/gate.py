"""`luban route --changed --base REV`: a pull request's routing, against the library it changes.

The changed skills' queries and their nearest neighbours' are routed twice, on the same queries and runs: with the
library as it was at REV and as it is now. The gate fails when, for any router model, a changed skill lost recall or
took queries that are not its own (another skill's, or a none query's) beyond the runs' noise
(``scoring.route_keep.regressions``). A routing cut short by ``--max-calls`` decides nothing: the gate says so and
errs, rather than pass on part of the evidence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.interaction.approvals import Approval
from flows.route.flow import MEASURED, NEEDS_A_MODEL, queries_for, route, say_cost, set_up
from flows.route.library import DEFAULT_CLIENT, DEFAULT_WINDOW, Library, library_at, read_library
from flows.route.measure import Routing
from flows.route.report import gate_markdown
from scoring.route_keep import Paired, RouteDecision, regressions
from scoring.route_queries import nearest
from workspace.git_revisions import changed_skills

PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"


@flow(name="route-changes", log_prints=True)
def route_changes(skills_dir: str, base: str, client: str = DEFAULT_CLIENT, window: str = DEFAULT_WINDOW,
                  eval_set: str | None = None, workspace: str | None = None, approval: Approval = "auto",
                  llm: dict[str, Any] | None = None, max_calls: int | None = None) -> dict[str, Any]:
    """Route the changed skills' queries and their neighbours' before and after; the gate's verdict per model."""
    setup = set_up(skills_dir, workspace, llm, max_calls)
    now = read_library(Path(skills_dir), client, window)
    before = library_at(Path(skills_dir), base, client, window)
    changed = changed_names(Path(skills_dir), base, now)
    doc: dict[str, Any] = {"base": base, "changed": changed}
    if not changed:
        return doc | {"gate": PASS, "why": f"no skill's SKILL.md under {skills_dir} changed since {base}"}
    if setup.client is None:
        return doc | {"gate": UNDECIDED, "why": f"routing needs {NEEDS_A_MODEL}"}
    focus = sorted(set(changed) | neighbours(changed, now, before))
    plan = queries_for(now, setup, focus, eval_set, approval)
    queries = plan.routed(MEASURED)
    doc |= {"routed_skills": focus, "queries": len(queries), "source": plan.source}
    if not queries:
        return doc | {"gate": UNDECIDED, "why": "none of these skills has queries (see source)"}
    doc["planned_calls"] = say_cost(setup.settings, len(queries), libraries=2)
    models, runs = setup.settings.router_models, setup.settings.route_runs
    then = route(setup.client, models, before, queries, runs)
    after = route(setup.client, models, now, queries, runs) if not then.stopped else None
    doc |= verdict(then, after, queries, changed, models)
    create_markdown_artifact(gate_markdown(doc), key="luban-routing-gate", description="luban route --changed")
    return doc


def changed_names(skills_dir: Path, base: str, now: Library) -> list[str]:
    """The routed names of the skills whose SKILL.md changed (new ones included, deleted ones not)."""
    paths = {c.path.resolve() for c in changed_skills(skills_dir, base, [skills_dir]) if not c.deleted}
    return sorted(s.name for s in now.skills if Path(s.path).resolve() in paths)


def neighbours(changed: list[str], now: Library, before: Library) -> set[str]:
    """The skills nearest each changed one, by its description now and at the base: those it may take from or lose to."""
    found: set[str] = set()
    for library in (now, before):
        near = nearest({s.name: s.description for s in library.skills})
        found |= {n for skill in changed for n in near.get(skill, ()) if n in now.names}
    return found


def verdict(then: Routing, after: Routing | None, queries, changed: list[str], models: tuple[str, ...]) -> dict[str, Any]:
    stopped = then.stopped or (after.stopped if after else "")
    cost = {"base": then.cost.as_dict(), "changed": after.cost.as_dict() if after else None}
    if after is None or stopped:
        return {"gate": UNDECIDED, "why": f"stopped before both libraries were routed: {stopped}", "cost": cost}
    decisions = [regressions(m, queries, then.picks, after.picks, changed) for m in models]
    failed = [d for d in decisions if d.worse]
    why = "; ".join(d.said() for d in failed) if failed else "no changed skill lost recall or took others' queries beyond noise"
    return {"gate": FAIL if failed else PASS, "why": why, "models": {d.model: decision_doc(d) for d in decisions},
            "cost": cost}


def decision_doc(decision: RouteDecision) -> dict[str, Any]:
    def one(p: Paired) -> dict[str, Any]:
        return {"name": p.name, "queries": p.queries, "mean_change": round(p.mean_change, 4), "p": round(p.p, 5)}

    return {"right_routing": one(decision.better), "worse": [one(w) for w in decision.worse],
            "guards": decision.guards, "missing": decision.missing}

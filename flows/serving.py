"""Deployments, and answering paused runs from code (Prefect 3 has no CLI for it: PrefectHQ/prefect#10767).

``luban serve`` serves ``optimize-skills/batch``, ``evaluate-skills/evaluate``, ``optimize-skill/rounds`` (a
batch's per-skill child runs, ``--fan-out-to``), ``route-library/route`` and ``optimize-routing/route-rounds``
(`luban route` and `luban route --optimize`) so that, with a Prefect server running,
``prefect deployment run 'optimize-skills/batch' -p skills_dir=/path`` starts a batch.
``luban pending`` lists runs paused at a checkpoint; ``luban approve RUN_ID``
answers one (``--reject`` and ``--comment`` fill the same form the UI shows).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID


def deployments():
    from flows.optimize import evaluate_skills, optimize_skills
    from flows.route.flow import route_library
    from flows.route.rounds import optimize_routing
    from flows.skill_flow import optimize_skill_rounds

    batch = optimize_skills.to_deployment(name="batch", parameters={"approval": "ui", "mode": "auto"},
                                          description="Optimize a skills directory; checkpoints wait in the Prefect UI.",
                                          tags=["luban"])
    evaluate = evaluate_skills.to_deployment(name="evaluate", description="Phases 0–1 only: score and record baselines.",
                                             tags=["luban"])
    rounds = optimize_skill_rounds.to_deployment(name="rounds", description="One skill's rounds for a batch run with "
                                                 "--fan-out-to optimize-skill/rounds (started by the batch, not by hand).",
                                                 tags=["luban"])
    route = route_library.to_deployment(name="route", parameters={"approval": "ui"}, tags=["luban"],
                                        description="Measure routing across a skills directory (luban route); new "
                                                    "designed queries wait for approval in the Prefect UI.")
    route_rounds = optimize_routing.to_deployment(name="route-rounds", tags=["luban"],
                                                  description="Descriptions edited for the library's routing on a git "
                                                              "branch (luban route --optimize).")
    return batch, evaluate, rounds, route, route_rounds


def serve_forever(limit: int | None = None) -> None:
    from prefect import serve

    serve(*deployments(), limit=limit, print_starting_message=True)


@dataclass(frozen=True)
class PendingRun:
    id: str
    name: str
    flow: str
    checkpoint: str
    since: str
    state: str = "Paused"  # Paused holds a process; Suspended holds none and re-runs the flow on resume


def pending() -> list[PendingRun]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED]))))
        flows = {r.flow_id: client.read_flow(r.flow_id).name for r in runs}
    return [PendingRun(str(r.id), r.name, flows[r.flow_id], (r.state.state_details.pause_key or "") if r.state else "",
                       str(r.state.timestamp) if r.state else "", (r.state.name or "") if r.state else "") for r in runs]


class NotPaused(RuntimeError):
    pass


def approve(run_id: str, reject: bool = False, comment: str = "", choice: str = "") -> None:
    from prefect.client.orchestration import get_client
    from prefect.flow_runs import resume_flow_run

    try:
        flow_run_id = UUID(run_id)
    except ValueError:
        raise NotPaused(f"{run_id!r} is not a flow run id; 'luban pending' lists the paused runs") from None
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(flow_run_id)
    if run.state is None or not run.state.is_paused():
        state = run.state.name if run.state else "unknown"
        raise NotPaused(f"flow run {run_id} is {state}, not paused at a checkpoint; 'luban pending' lists the paused runs")
    answer = {"approve": not reject, "comment": comment}
    if choice:
        answer["choice"] = choice
    resume_flow_run(flow_run_id, run_input=answer)

"""What a shared Prefect server needs once, for workers on several machines: zombie runs marked Crashed, and
the limits on LLM calls that all workers share (``ensure_llm_limits``).

A worker's machine that dies leaves its flow run ``Running`` for good. With
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` set in the workers' environment
(prefect.yaml does), each run emits a heartbeat event; this automation, from
Prefect's "detect zombie flows" guide, marks a run Crashed when its heartbeats
stop for three periods. ``luban setup-server`` creates it once (by name: a
second call finds it and changes nothing).
"""

from __future__ import annotations

from datetime import timedelta

from flows.server.limits import LLM_LIMIT, LLM_RATE_LIMIT

ZOMBIE_AUTOMATION = "luban: crash zombie flow runs"
HEARTBEAT_SECONDS = 60  # prefect.yaml's PREFECT_FLOWS_HEARTBEAT_FREQUENCY


def zombie_automation(heartbeat_seconds: int = HEARTBEAT_SECONDS):
    from prefect.automations import Automation
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    return Automation(
        name=ZOMBIE_AUTOMATION,
        description="A flow run whose heartbeats stopped (its machine or process is gone) is marked Crashed.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Failed",
                    "prefect.flow-run.Cancelled", "prefect.flow-run.Crashed"},
            match=ResourceSpecification({"prefect.resource.id": ["prefect.flow-run.*"]}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=3 * heartbeat_seconds),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, name=None, force=False,
                                    message=f"no heartbeat for {3 * heartbeat_seconds} s: the run's machine or process "
                                            "is gone; 'luban optimize --resume' continues it")],
    )


def ensure_zombie_automation(heartbeat_seconds: int = HEARTBEAT_SECONDS) -> tuple[str, bool]:
    """(the automation's id, whether it was created now)."""
    from prefect.automations import Automation

    # async_dispatch: called from sync code, read() and create() return the Automation, not a coroutine
    try:
        found = Automation.read(name=ZOMBIE_AUTOMATION)
    except ValueError:  # Prefect says "not found" this way
        found = None
    if found is not None:
        return str(found.id), False  # type: ignore[attr-defined]  # typed as a coroutine; async_dispatch returns the model here
    created = zombie_automation(heartbeat_seconds).create()
    return str(created.id), True


def ensure_llm_limits(concurrent: int | None, per_second: float | None) -> list[str]:
    """The server's limits on LLM calls across all workers (flows/server/limits.py), created or resized; what was set.
    Workers take them when their environment (or the run's settings) names them: LUBAN_LLM_LIMIT, LUBAN_LLM_RATE_LIMIT."""
    from prefect.client.orchestration import get_client

    done = []
    with get_client(sync_client=True) as client:
        if concurrent is not None:
            client.upsert_global_concurrency_limit_by_name(LLM_LIMIT, concurrent)
            done.append(f"{LLM_LIMIT}: at most {concurrent} LLM calls at once (LUBAN_LLM_LIMIT={LLM_LIMIT})")
        if per_second is not None:  # a burst of one second's calls, refilled at that rate
            client.upsert_global_concurrency_limit_by_name(LLM_RATE_LIMIT, max(1, round(per_second)), per_second)
            done.append(f"{LLM_RATE_LIMIT}: {per_second:g} LLM calls per second (LUBAN_LLM_RATE_LIMIT={LLM_RATE_LIMIT})")
    return done

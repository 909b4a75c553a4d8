"""Flow-run heartbeats that stop the moment a run ends.

Prefect 3.9 sends a flow run's heartbeat (``prefect.flow-run.heartbeat``, what
zombie-run automations watch) from a thread that sleeps in one-second steps,
and joins that thread as the run ends. So a run called in-process returns up to
a second after its last step: 0.6 s on average, about 2 % of an eight-skill
optimization (benchmarks/loop_overhead.py), spent waiting for nothing.

``PromptHeartbeatFlow`` keeps the heartbeat and drops the wait: called
in-process, it turns the engine's heartbeat off for the call and has the flow
body send the same event, at the same frequency, from a thread that wakes the
instant it is told to stop. Runs a worker or ``serve`` starts do not go through
``__call__`` and keep Prefect's own heartbeat unchanged. Subflows send none:
they run in their root flow's process, whose heartbeat already says it is alive.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import prefect
from prefect import Flow
from prefect.context import FlowRunContext
from prefect.events import emit_event
from prefect.events.related import RelatedResource, tags_as_related_resources
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings, temporary_settings

# The heartbeat frequency the engine was told to skip for this call, for the flow body to honour.
_OWED: contextvars.ContextVar[int | None] = contextvars.ContextVar("luban_owed_heartbeat", default=None)


class PromptHeartbeatFlow(Flow):
    """A flow whose in-process calls return as soon as the run ends (see the module docstring)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        frequency = get_current_settings().flows.heartbeat_frequency
        if frequency is None or FlowRunContext.get() is not None:  # heartbeats off, or called as a subflow
            return super().__call__(*args, **kwargs)
        owed = _OWED.set(frequency)
        try:
            with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                return super().__call__(*args, **kwargs)
        finally:
            _OWED.reset(owed)


def prompt_heartbeat_flow(**options: Any):
    """``@flow(**options)`` building a ``PromptHeartbeatFlow``."""
    return lambda fn: PromptHeartbeatFlow(fn, **options)


@contextmanager
def run_heartbeats() -> Iterator[None]:
    """Around a flow body: the heartbeat its call owes, and none from the subflows inside it."""
    frequency, context = _OWED.get(), FlowRunContext.get()
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        if frequency is None or context is None or context.flow_run is None:
            yield
            return
        owed = _OWED.set(None)  # once per call, not again in a flow this body calls
        stop = threading.Event()
        resource, related = _heartbeat_event(context)

        def beat() -> None:
            while True:
                emit_event(event="prefect.flow-run.heartbeat", resource=resource, related=related)
                if stop.wait(frequency):
                    return

        # The thread sees this context's settings (the API URL), as the engine's own heartbeat thread does.
        thread = threading.Thread(target=contextvars.copy_context().run, args=(beat,), name="luban-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=2)
            _OWED.reset(owed)


def _heartbeat_event(context: FlowRunContext) -> tuple[dict[str, str], list[RelatedResource]]:
    """The resource and related resources the engine gives its own heartbeat (flow_engine, Prefect 3.9)."""
    run = context.flow_run
    assert run is not None  # called only from inside a flow run's body
    resource = {"prefect.resource.id": f"prefect.flow-run.{run.id}", "prefect.resource.name": run.name or "",
                "prefect.version": prefect.__version__}
    related = [RelatedResource.model_validate({"prefect.resource.id": f"prefect.flow.{run.flow_id}",
                                               "prefect.resource.role": "flow",
                                               "prefect.resource.name": context.flow.name if context.flow else ""})]
    if run.deployment_id:
        related.append(RelatedResource.model_validate({"prefect.resource.id": f"prefect.deployment.{run.deployment_id}",
                                                       "prefect.resource.role": "deployment"}))
    return resource, related + tags_as_related_resources(set(run.tags or []))

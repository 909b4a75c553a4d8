"""In-process runs keep Prefect's flow-run heartbeat, sent by Luban from a thread that stops at once (flows/server/heartbeat.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

from flows.optimize import evaluate_skills
from flows.server.heartbeat import prompt_heartbeat_flow, run_heartbeats
from tests.flows.prefect_server import wait_for

pytestmark = pytest.mark.usefixtures("prefect_api")


def heartbeats_of(flow_run_id) -> list:
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=10)
    with get_client(sync_client=True) as client:
        page = client.read_events(EventFilter(event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
                                              resource=EventResourceFilter(id=[f"prefect.flow-run.{flow_run_id}"])), limit=20)
    return page.events


@prompt_heartbeat_flow(name="beating")
def beating(seconds: float) -> str:
    with run_heartbeats():
        time.sleep(seconds)
        return "done"


def test_an_in_process_run_sends_the_engines_heartbeat_once_and_leaves_no_thread(example_skills: Path):
    state = evaluate_skills(skills_dir=str(example_skills), skills=["pr-review"], return_state=True)
    run_id = state.state_details.flow_run_id
    events = wait_for(lambda: heartbeats_of(run_id), 30, "the run's heartbeat event")
    time.sleep(1)  # had the engine's own heartbeat run too, its event was sent as the run started, beside Luban's
    events = heartbeats_of(run_id)
    assert len(events) == 1, [e.occurred for e in events]  # the run lasts under the 30 s minimum frequency: one beat
    event = events[0]
    assert event.resource.id == f"prefect.flow-run.{run_id}" and event.resource["prefect.version"]
    assert {(r.role, r.name) for r in event.related} >= {("flow", "evaluate-skills")}
    assert not [t for t in threading.enumerate() if t.name == "luban-heartbeat"]


def test_heartbeats_turned_off_in_prefects_settings_stay_off():
    with temporary_settings({PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        state = beating(0.0, return_state=True)
    time.sleep(1)
    assert heartbeats_of(state.state_details.flow_run_id) == []

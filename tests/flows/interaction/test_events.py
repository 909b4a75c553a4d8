"""The design's L4 events reach the Prefect API as events that Automations can match, with the design's payloads."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from flows.interaction.events import resource
from flows.optimize import optimize_skills
from scoring.governance.library_alerts import LIBRARY
from tests.support.scripted_runs import GateResponder, run_online
from workspace.results_tsv import ResultRow, ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")


def luban_events(since: datetime, wanted: set[str], timeout: float = 60) -> list:
    """Read back the luban.* events that occurred since ``since``, waiting until every wanted name arrived."""
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all(timeout=10)
    end = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            page = client.read_events(EventFilter(event=EventNameFilter(prefix=["luban."]),
                                                  occurred=EventOccurredFilter(since=since)), limit=50)
        if wanted <= {e.event for e in page.events} or time.monotonic() > end:
            return page.events
        time.sleep(1)


def test_rollback_freeze_and_budget_events_carry_the_design_payloads(example_skills: Path, monkeypatch):
    since = datetime.now(UTC) - timedelta(seconds=1)
    run_online(example_skills, monkeypatch, GateResponder(held_after=3))  # Step B, then Step D's extreme overfitting
    events = luban_events(since, {"luban.rollback", "luban.freeze", "luban.budget_tighten"})
    by_name = {e.event: e for e in events}
    assert {"luban.rollback", "luban.freeze", "luban.budget_tighten"} <= set(by_name), sorted(by_name)
    for event in by_name.values():
        assert event.resource.id == "luban.skill.pr-review" and event.resource.name == "pr-review"
    rollbacks = {e.payload["reason"]: e.payload for e in events if e.event == "luban.rollback"}
    assert set(rollbacks) == {"held_out_degraded"}  # Step B (round 2's repeat of the STOP is refused before it is tried)
    held_out = rollbacks["held_out_degraded"]
    assert held_out["skill_path"].endswith("pr-review/SKILL.md") and held_out["from_version"] != held_out["to_version"]
    freeze = by_name["luban.freeze"].payload
    assert freeze["duration_rounds"] == 5 and "extreme overfitting" in freeze["reason"]
    tighten = [e.payload for e in events if e.event == "luban.budget_tighten"]
    assert any(t["new_budget_percent"] == 5.0 and t["previous_budget_percent"] == 10.0 and t["scope"] == "skill"
               and t["triggered_by_skill"] == "pr-review" for t in tighten)


def test_alerts_from_history_become_events(example_skills: Path):
    # an earlier run of pr-review whose three attempts all left the score flat: flat ratio 100 % > the fixed 40 %
    history = ResultsFile(example_skills.parent / "luban-workspace" / "quick" / "pr-review" / "results.tsv")
    history.ensure()
    history.append(ResultRow("2026-11-30T10:00:00Z", "pr-review", 0, "baseline", "quick", new_score=50.0, eval_mode="fallback_dry"))
    for round_no in (1, 2, 3):
        history.append(ResultRow(f"2026-11-30T10:0{round_no}:00Z", "pr-review", round_no, "revert", "quick", old_score=50.0,
                                 new_score=50.0, delta=0.0, edit_pct=4.0, eval_mode="fallback_dry", note="strategy=s"))
    since = datetime.now(UTC) - timedelta(seconds=1)
    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="auto", max_rounds=1)
    # a fixed threshold is noted, never escalated (docs/weekly.md): the alert and its event still say so
    assert any(a.startswith("flat_ratio for pr-review: note (") for a in result["alerts"]), result["alerts"]
    events = [e for e in luban_events(since, {"luban.alert"}) if e.event == "luban.alert"]
    assert sorted(f"{e.payload['event_type']} for pr-review: {e.payload['severity']}" for e in events) == sorted(
        a.split(" (", 1)[0] for a in result["alerts"])
    flat = next(e for e in events if e.payload["event_type"] == "flat_ratio")
    assert flat.resource.id == "luban.skill.pr-review" and "flat" in flat.payload["detail"].lower()


def test_score_card_diff_report_and_rows_are_artifacts_on_the_run(example_skills: Path):
    from prefect.artifacts import Artifact

    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="auto", max_rounds=1)
    card = Artifact.get("baseline-score-card")
    assert card is not None and "| pr-review |" in card.data and card.type == "markdown"
    review = Artifact.get("skill-pr-review")
    assert review is not None and "```diff" in review.data and f"{result['skills']['pr-review']['before']} →" in review.data
    report = Artifact.get("luban-report")
    assert report is not None and "## Health dashboard" in report.data
    assert report.data.strip() in Path(result["report"]).read_text()  # the artifact is the report on disk
    rows = Artifact.get("luban-results")
    assert rows is not None and rows.type == "table" and "baseline" in str(rows.data)


def test_a_library_alert_is_about_the_library_not_a_skill_named_star():
    assert resource(LIBRARY) == {"prefect.resource.id": "luban.library", "prefect.resource.name": "the library"}
    assert resource("pr-review")["prefect.resource.id"] == "luban.skill.pr-review"

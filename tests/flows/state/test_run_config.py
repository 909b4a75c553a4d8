"""The run's configuration is decided once and cannot change: what the consumer baseline allows is part of it."""

from __future__ import annotations

import dataclasses

import pytest

from flows.state.config import GO_ON, ConsumerVerdict, PhaseEnd, Quality, Response, RunConfig, RunOptions


def config(response: Response = Response.CONTINUE, **options) -> RunConfig:
    return RunConfig(RunOptions("skills", **options), "full", ConsumerVerdict(5.0, response))


def test_a_lite_verdict_caps_the_edit_budget_and_the_rounds_without_touching_the_parameters():
    lite = config(Response.LITE, budget=0.10, max_rounds=4)
    assert (lite.quality, lite.budget, lite.max_rounds) == (Quality.LITE, 0.03, 1)
    assert (lite.options.budget, lite.options.max_rounds) == (0.10, 4)  # what was asked stays on record
    assert config(Response.LITE, budget=0.02).budget == 0.02  # never raised
    normal = config(budget=0.10, max_rounds=4)
    assert (normal.quality, normal.budget, normal.max_rounds) == (Quality.NORMAL, 0.10, 4)
    assert config(Response.QUICK).quality is Quality.QUICK and config(Response.QUICK).max_rounds == 5


def test_the_configuration_is_frozen_and_its_mode_decided():
    frozen = config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.mode = "quick"  # type: ignore[misc]  # the point: assignment is refused
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.consumer.response = Response.BLOCK  # type: ignore[misc]
    with pytest.raises(ValueError, match="auto is decided in Phase 0"):
        RunConfig(RunOptions("skills"), "auto")  # type: ignore[arg-type]


@pytest.mark.parametrize("verdict, line, blocks", [
    (ConsumerVerdict(7.5, Response.CONTINUE), "7.5/10 → continue", False),
    (ConsumerVerdict(3.0, Response.LITE), "3.0/10 → lite", False),
    (ConsumerVerdict(1.0, Response.BLOCK), "1.0/10 → block", True),
    (ConsumerVerdict(None, Response.CONTINUE), "could not be measured → continue", False),
    (ConsumerVerdict.not_tested("quick mode"), "not tested (quick mode)", False),
])
def test_the_consumer_verdict_says_what_the_report_says(verdict: ConsumerVerdict, line: str, blocks: bool):
    assert verdict.describe() == line and verdict.blocks is blocks
    assert (verdict.notice() is None) is (verdict.response is Response.CONTINUE)


def test_a_phase_end_goes_on_only_without_a_stop():
    assert GO_ON.goes_on and not PhaseEnd("stopped at the baseline checkpoint").goes_on


def test_a_resumed_or_re_executed_run_keeps_the_verdict_it_started_with(tmp_path):
    """Measured again, the consumer baseline would cost calls and could come out otherwise under noisy judges."""
    from types import SimpleNamespace

    from flows.phases.init import recorded_verdict, verdict_models
    from judges.backend import BackendKind
    from workspace import run_marker

    online = SimpleNamespace(kind=BackendKind.OPENAI, settings=SimpleNamespace(target_model="target-m", judge_model="judge-a"))
    lite = ConsumerVerdict(3.0, Response.LITE)
    run_marker.save(tmp_path, "killed-run", mode="full", state="running", consumer=lite.record(verdict_models(online)))
    assert recorded_verdict(tmp_path, None, True, online) == lite  # --resume: the newest full run's verdict
    assert recorded_verdict(tmp_path, None, False, online) is None  # a fresh run measures again
    own = run_marker.load(tmp_path, "killed-run")
    assert recorded_verdict(tmp_path, own, False, online) == lite  # a suspended run executed again: its own marker
    other = SimpleNamespace(kind=BackendKind.OPENAI, settings=SimpleNamespace(target_model="target-2", judge_model="judge-a"))
    assert recorded_verdict(tmp_path, None, True, other) is None  # measured with another target model: measure again


def test_a_verdict_handed_to_a_child_flow_run_as_json_is_the_same_verdict():
    import json
    from dataclasses import asdict

    lite = ConsumerVerdict(3.0, Response.LITE)
    received = ConsumerVerdict(**json.loads(json.dumps(asdict(lite))))
    assert received == lite and received.response is Response.LITE and received.describe() == "3.0/10 → lite"
    with pytest.raises(ValueError):
        ConsumerVerdict(3.0, "sometimes")  # type: ignore[arg-type]  # the point: an unknown response is refused

"""The run's configuration is decided once and cannot change: what the consumer baseline allows is part of it."""

from __future__ import annotations

import dataclasses

import pytest

from flows.run_config import GO_ON, ConsumerVerdict, PhaseEnd, Quality, Response, RunConfig, RunOptions


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

"""A description a routing round rejected is rejected among the neighbours it was tried with, not for ever."""

from __future__ import annotations

from flows.route.round_records import ROUTING_DIM, neighbourhood, rejected_descriptions
from workspace.layout import Mode, Workspace
from workspace.results_tsv import ResultRow, ResultsFile


def test_a_rejection_holds_while_the_neighbours_stay_the_same(tmp_path):
    (tmp_path / "skills").mkdir()
    space = Workspace.open(tmp_path / "skills", Mode.FULL, tmp_path / "ws")
    before = neighbourhood([("weather", "Forecasts rain."), ("travel", "Plans trips.")])
    path = space.results_tsv("invoices", Mode.FULL)
    path.parent.mkdir(parents=True)
    for status, proposed in (("revert", "Bills clients."), ("keep", "Sends invoices."), ("skip", "Too long.")):
        ResultsFile(path).append(ResultRow(timestamp="2026-12-07T10:00:00Z", skill="invoices", round=1, status=status,
                                           mode="full", dim_changed=ROUTING_DIM,
                                           evidence={"proposed": proposed, "neighbourhood": before}))
    assert rejected_descriptions(space, "invoices", before) == ["Bills clients."]  # reverted only
    assert neighbourhood([("travel", "Plans trips."), ("weather", "Forecasts rain.")]) == before  # order is not a change
    after = neighbourhood([("weather", "Forecasts rain and snow."), ("travel", "Plans trips.")])
    assert after != before and rejected_descriptions(space, "invoices", after) == []

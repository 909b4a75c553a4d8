"""The effects every flow run uses: rows through a retried Prefect task, events to the Prefect API, checkpoints in
the Prefect UI (or the terminal), warnings in the flow run's log, notices kept for the summary (the protocol:
flows/state/effects.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from flows.interaction import events
from flows.interaction.approvals import Approval, Decision
from flows.interaction.checkpoints import checkpoint
from flows.ratchet.tasks import append_row
from flows.state.effects import CheckpointKeys, KeptHere, Notices
from workspace.results_tsv import Repair, ResultRow


class PrefectEffects(KeptHere):
    def __init__(self) -> None:
        self.noted = Notices()
        self.keys = CheckpointKeys()

    def write_row(self, results_tsv: Path, row: ResultRow) -> Repair | None:
        # the task gets only the path and the row: Prefect walks every parameter looking for futures, and handed
        # the whole run that walk cost ~50 ms a row (benchmarks/loop_overhead.py)
        return append_row(results_tsv, row)

    def emit(self, event: str, skill: str, payload: dict[str, Any]) -> None:
        events.emit(event, skill, payload)

    def ask(self, key: str, summary: str, approval: Approval, on_suspend: Callable[[str], None], **kwargs: Any) -> Decision:
        return checkpoint(key, summary, approval, on_suspend=on_suspend, **kwargs)

    def warn(self, message: str, *args: object) -> None:
        from prefect.logging import get_run_logger

        get_run_logger().warning(message, *args)

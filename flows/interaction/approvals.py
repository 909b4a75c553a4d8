"""Who may answer a checkpoint and what they answered: plain values, no Prefect, so the run's state can hold them.

The checkpoints themselves (pausing a flow run, the UI's form) are in ``flows/interaction/checkpoints.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, get_args

Approval = Literal["ui", "auto", "cli"]


def as_approval(value: str) -> Approval:
    """``value`` as the Approval it names (a flow parameter arrives as a plain string)."""
    approvals: tuple[Approval, ...] = get_args(Approval)
    for approval in approvals:
        if approval == value:
            return approval
    raise ValueError(f"--approval must be ui, auto or cli, not {value!r}")


class AnsweredBy(StrEnum):
    UI = "ui"  # a person, through the Prefect UI's form or `luban approve`
    CLI = "cli"  # a person, at the terminal
    AUTO = "auto"  # nobody: approval=auto took the safe default
    TIMEOUT = "timeout"  # nobody answered in time


@dataclass(frozen=True)
class Decision:
    approved: bool
    choice: str
    comment: str
    answered_by: AnsweredBy

    @property
    def timed_out(self) -> bool:
        return self.answered_by is AnsweredBy.TIMEOUT

    @property
    def by_a_person(self) -> bool:
        """A person answered (a consent that auto-approval or a timeout cannot give)."""
        return self.answered_by in (AnsweredBy.UI, AnsweredBy.CLI)

"""One skill's rounds as a flow run of its own, on whichever worker of the pool takes it (``--fan-out-to``).

A batch that fans out forks each skill a git worktree and branch exactly as
``--parallel`` does (flows/scale/fan_out.py), then asks Prefect for one child flow
run of this flow per skill (``run_deployment``, idempotency key: the batch run,
the skill, the commit it was forked from). The child rebuilds the skill's state
from the records, as ``--resume`` does — the baseline row, the test prompts,
rejected_edits.md, the batch's kept edits in git — runs the rounds in the
worktree, and leaves a hand-back record: its outcome, the samples it took, its
notices. The parent reads that record rather than a Prefect result because the
workspace is what every machine of the batch shares already (docs/scale-out.md, "Scale
out"); then it merges the branches in baseline order and takes the
cross-skill steps itself, as it does for ``--parallel``.

Offline, the result is the serial batch's: the child measures the kept text
afresh, and its samples are the ones the parent took at the baseline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefect import flow

from flows.scale.child import SKILL_FLOW, check_same_models, hand_back_record, skill_run
from flows.state.config import ConsumerVerdict
from judges.usage import BudgetExhausted
from workspace.atomic import atomic_write


@flow(name=SKILL_FLOW, log_prints=True, validate_parameters=False)
def optimize_skill_rounds(skill: str, worktree: str, branch: str, original: str, workspace: str, mode: str,
                          run_dir: str, options: dict[str, Any], batch_run_id: str | None, hand_back: str,
                          consumer: dict[str, Any] | None = None, preferred_dims: list[str] | None = None,
                          budget_id: str | None = None, models: dict[str, Any] | None = None) -> dict[str, Any]:
    """A batch's rounds for one skill, in the worktree the batch forked for it (a child flow run of the batch).

    ``worktree`` is the skills directory inside the skill's worktree; ``original`` the commit the batch started
    from (the kept edits since then are read from git); ``hand_back`` where the outcome record goes; ``budget_id``
    the batch's shared LLM budget on the server (flows/server/limits.py), when it has one; ``models`` the batch's
    model settings (never the key), which the worker's own must match; ``consumer`` the batch's consumer verdict
    (its configuration is the batch's: the same options, mode and verdict)."""
    from flows.phases.rounds import continue_or_start

    verdict = ConsumerVerdict(**consumer) if consumer else ConsumerVerdict.not_tested("offline backend")
    run = skill_run(skill, worktree, branch, original, workspace, mode, run_dir, options, batch_run_id, verdict,
                    preferred_dims or [], budget_id)
    check_same_models(run, models)
    try:
        record = hand_back_record(run, skill, continue_or_start(run, skill, lambda *_: None))
    except BudgetExhausted as err:  # the batch's budget is spent: the batch stops as a serial one would, records kept
        record = hand_back_record(run, skill, None) | {"budget": str(err)}
    atomic_write(Path(hand_back), json.dumps(record, ensure_ascii=False, sort_keys=True))
    return {"outcome": record["outcome"], "budget": record.get("budget")}

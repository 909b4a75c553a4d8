"""🔴 checkpoints: who answers, and what happens when nobody does.

``approval`` (a flow parameter) chooses:
- ``ui``: the Prefect UI shows a form on the paused run, and ``luban approve
  RUN_ID`` (or ``resume_flow_run`` with input) answers from code. Short waits
  (≤ ``SHORT_WAIT`` s, or any run without a deployment) *pause*: the process waits.
  Longer waits in a served deployment *suspend* the root flow run: no process is
  held, and on resume Prefect runs the flow again from the top; Phase 0 sees the
  same flow run id and continues from the records (``workspace.run_marker``), and each
  checkpoint already answered returns its stored answer at once.
- ``auto``: batch runs accept the safe default at each checkpoint and say so.
- ``cli``: the terminal asks, when there is one; otherwise it behaves as auto.

A pause that times out is not a bare "never resumed" failure: the outcome is
recorded, the run ends cleanly, and the log says how to continue (``luban
optimize --resume``). A suspension has no expiry (it holds nothing while it
waits); the workspace records what it waits for.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from uuid import UUID

from prefect.input import RunInput

from flows.interaction.approvals import AnsweredBy, Approval, Decision

SHORT_WAIT = 300  # seconds: a wait this short (e.g. Step C's) holds the process; longer ones suspend when served


class ApprovalInput(RunInput):
    """The form on a paused run: approve or reject, optionally choose, and say why."""

    approve: bool = True
    choice: str = ""
    comment: str = ""


def checkpoint(name: str, summary: str, approval: Approval, default_approve: bool = True,
               choices: tuple[str, ...] = (), default_choice: str = "", timeout: int = 3600,
               poll_interval: int = 2, on_suspend: Callable[[str], None] | None = None) -> Decision:
    """Ask at a 🔴 checkpoint; ``default_approve``/``default_choice`` are the safe answers auto mode gives.

    ``name`` must be unique within the run: Prefect keys each pause by it, and a
    key that already fired returns the first answer instead of asking again.
    ``on_suspend(name)`` is called just before the root run suspends, to record it.
    """
    from prefect.logging import get_run_logger

    logger = get_run_logger()
    options = f" (choices: {', '.join(choices)})" if choices else ""
    if approval == "cli" and sys.stdin.isatty():
        return _ask_in_terminal(name, summary, choices, default_choice)
    if approval != "ui":
        logger.info("🔴 CHECKPOINT %s: auto-approval takes the safe default (%s%s)%s", name,
                    "approve" if default_approve else "reject", f", {default_choice}" if default_choice else "", options)
        return Decision(default_approve, default_choice, "auto-approved by approval=auto", AnsweredBy.AUTO)
    form = ApprovalInput.with_initial_data(description=f"## 🔴 {name}\n\n{summary}\n\n{options}",
                                           approve=default_approve, choice=default_choice)
    root = _suspendable_root(timeout)
    answer = _suspend(root, name, form, on_suspend) if root is not None else _pause(name, form, timeout, poll_interval, summary, options)
    if answer is None:
        return Decision(False, "", f"no answer within {timeout} s", AnsweredBy.TIMEOUT)
    return Decision(bool(answer.approve), answer.choice or default_choice, answer.comment, AnsweredBy.UI)


def _pause(name: str, form, timeout: int, poll_interval: int, summary: str, options: str) -> ApprovalInput | None:
    from prefect.exceptions import FlowPauseTimeout
    from prefect.flow_runs import pause_flow_run
    from prefect.logging import get_run_logger

    logger = get_run_logger()
    logger.info("🔴 CHECKPOINT %s%s — waiting for an answer in the Prefect UI or `luban approve`:\n%s", name, options, summary)
    try:
        return pause_flow_run(wait_for_input=form, timeout=timeout, poll_interval=poll_interval, key=name)
    except FlowPauseTimeout:
        logger.warning("checkpoint %s got no answer within %d s: the run stops here, recorded and resumable "
                       "('luban optimize --resume' continues from the last recorded round)", name, timeout)
        return None


def _suspend(root: UUID, key: str, form, on_suspend: Callable[[str], None] | None) -> ApprovalInput:
    """Suspend the root run (subflows cannot be suspended); on the re-run after resume, return the stored answer.

    These are ``suspend_flow_run``'s steps with the form kept on the *root* run:
    given another run's id, Prefect 3.9 saves and loads the form on the calling
    subflow run, where neither the UI nor a resume can find it.
    """
    from prefect._flow_run_suspension import mark_flow_run_suspension_requested, raise_if_flow_run_suspension_requested
    from prefect.client.orchestration import get_client
    from prefect.input import keyset_from_paused_state
    from prefect.logging import get_run_logger
    from prefect.states import State, Suspended
    from prefect.utilities.engine import propose_state_sync

    proposed: State = Suspended(timeout_seconds=None, pause_key=key)
    keyset = keyset_from_paused_state(proposed)
    proposed.state_details.run_input_keyset = {str(k): v for k, v in keyset.items()}  # Prefect types the two apart
    if on_suspend is not None:
        on_suspend(key)  # recorded before the state changes, so a resume can never outrun the record
    with get_client(sync_client=True) as client:
        state = propose_state_sync(client=client, state=proposed, flow_run_id=root)
        if state.is_running():  # this key fired on an earlier attempt, and that suspension was answered
            return form.load(keyset, flow_run_id=root)
        if not state.is_paused():
            raise RuntimeError(f"checkpoint {key}: run {root} could not be suspended (state {state.name})")
        form.save(keyset, flow_run_id=root)
    get_run_logger().info("🔴 CHECKPOINT %s: run %s suspended until it is answered in the Prefect UI or with "
                          "'luban approve %s'; no process is held while it waits", key, root, root)
    mark_flow_run_suspension_requested(root, state)
    raise_if_flow_run_suspension_requested()  # unwinds through the subflow to the root at once
    raise RuntimeError(f"checkpoint {key}: the suspension of run {root} was not taken up")  # unreachable


def _suspendable_root(timeout: int) -> UUID | None:
    """The root flow run's id when it can be suspended: it has a deployment and the wait is long."""
    if timeout <= SHORT_WAIT:
        return None
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    root = UUID(str(flow_run.root_flow_run_id))
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(root)
    return root if run.deployment_id is not None else None


def _ask_in_terminal(name: str, summary: str, choices: tuple[str, ...], default_choice: str) -> Decision:
    import typer

    # On stderr, like every other word for the person: stdout carries the run's JSON document.
    typer.echo(f"\n🔴 CHECKPOINT {name}\n{summary}", err=True)
    if choices:
        choice = typer.prompt(f"choose one of {', '.join(choices)}", default=default_choice or choices[0], err=True)
        return Decision(True, choice, "", AnsweredBy.CLI)
    return Decision(typer.confirm("approve?", default=True, err=True), "", "", AnsweredBy.CLI)

"""Phase 2 on several skills at once (``--parallel N``): each skill in its own git worktree and branch.

Skills never share a file, so their ratchets are independent: in full mode
each runs in a worktree of the skills repository on a branch of its own
(``<batch branch>--<skill>``), so no two share an index or a branch. When all
are done, the batch merges their branches into its own one at a time, in
baseline order, and then takes the cross-skill steps the serial loop takes
(the skill checkpoints, the exploratory-rewrite trigger) in that same order.
Quick mode keeps every skill's backups apart already and needs no worktree.

A batch killed while skills run in worktrees is gathered the same way by
``--resume``: each worktree's committed state is merged, its undecided edit
dropped, and the skills that had not finished are forked again.

Offline, a parallel batch ends with the tree and rows a serial one ends with.
Online, each keep decision reads the judges' noise pooled over the samples
taken so far, which then depends on how far the other skills have got.
"""

from __future__ import annotations

from functools import partial

from flows.scale.child import in_child_flow_run
from flows.scale.threads import in_threads
from flows.scale.worktrees import fork, gather
from flows.state.products import SkillOutcome
from flows.state.run import Run


def fan_out(run: Run, order: list[str], optimize_one) -> dict[str, SkillOutcome]:
    """``optimize_one(child_run, skill)`` for every skill in ``order``, at most ``run.options.parallel`` at once;
    in full mode each in its own worktree, merged back in ``order`` before this returns. With ``fan_out_to``
    (full mode), each skill's rounds run as a child flow run of that deployment instead (flows/skill_flow.py)."""
    children = {skill: fork(run, skill) for skill in order}
    if run.options.fan_out_to and run.ratchet and run.ratchet.git:  # each skill a child flow run on the pool

        optimize_one = partial(in_child_flow_run, run)
    elif run.options.fan_out_to:
        run.effects.notice("--fan-out-to: quick mode has no worktrees to hand to workers; the skills ran side by side "
                           "on this machine instead")
    outcomes, errors = {}, []
    for skill, future in zip(order, in_threads(run.options.parallel, order, lambda s: optimize_one(children[s], s)),
                             strict=True):
        try:
            outcomes[skill] = future.result()
        except Exception as err:  # noqa: BLE001 - every other skill's work is merged before the first error is raised
            errors.append(err)
    for skill in order:
        run.join(children[skill], skill)
    gather(run, order)
    if errors:
        raise errors[0]
    return outcomes

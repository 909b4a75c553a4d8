"""The Prefect flows: ``optimize-skills`` (Phases 0–6) and ``evaluate-skills`` (Phases 0–1).

Thin on purpose: each phase is a unit with a name a person recognises in the
Prefect UI, and the flow parameters are the whole run configuration. A phase
that may stop for a person in the UI is a subflow, because Prefect pauses only
flows; otherwise it is a task (see ``Phase``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State
from pydantic import BaseModel, PrivateAttr

from flows.interaction.approvals import Approval, as_approval
from flows.interaction.budget_logs import quiet_budget_stops
from flows.interaction.interrupt import keep_terminal_handler
from flows.phases import baseline as phase_baseline
from flows.phases import held_out_gate
from flows.phases import init as phase_init
from flows.phases import prompts as phase_prompts
from flows.phases import report as phase_report
from flows.phases import rounds as phase_optimize
from flows.phases.preflight import Refused, check_options, lock_path, preflight
from flows.server.heartbeat import prompt_heartbeat_flow, run_heartbeats
from flows.server.lock import workspace_held
from flows.state.config import PhaseEnd, RunStop, StopKind
from flows.state.products import Baselines, Designed, Optimized
from flows.state.run import Run, RunOptions
from judges.usage import BudgetExhausted
from workspace import run_marker
from workspace.git_ratchet import asked_on_branch
from workspace.git_repository import GitStateError
from workspace.lock import WorkspaceLocked
from workspace.run_branches import Handoff


class RunRef(BaseModel):
    """A phase's parameter: what the Prefect API stores and shows is this summary; the live run
    (backend, repository, every skill's score card) rides along privately. Passing the run itself would
    make Prefect serialize all of it, which a batch of a few dozen skills takes past the API's 512 KB limit."""

    skills_dir: str
    mode: str
    skills: list[str]
    _run: Run = PrivateAttr()

    @classmethod
    def of(cls, run: Run) -> RunRef:
        ref = cls(skills_dir=run.options.skills_dir, mode=run.mode, skills=list(run.skills)[:50])
        ref._run = run
        return ref


class Phase:
    """One phase, run as a subflow when a person may answer its checkpoints in the Prefect UI, else as a task.

    Prefect pauses and suspends only flow runs, so ``approval="ui"`` needs
    subflows. With ``auto`` (or ``cli``, which asks in the terminal) nothing
    pauses, and a task run costs a few ms where a subflow costs about 0.25 s
    of API calls (its tracking task run, the flow run, its state changes): a
    second a run (benchmarks/loop_overhead.py). Phases 5 and 6 never ask anyone.
    """

    def __init__(self, name: str, fn: Callable[..., Any]):
        self.as_flow = flow(name=name, validate_parameters=False)(fn)
        self.as_task = task(name=name, cache_policy=NO_CACHE)(fn)

    def __call__(self, approval: Approval, *args: Any) -> Any:
        return (self.as_flow if approval == "ui" else self.as_task)(*args)


def phase(name: str) -> Callable[[Callable[..., Any]], Phase]:
    return lambda fn: Phase(name, fn)


@dataclass(frozen=True)
class Refusal:
    """Phase 0 found the run cannot start: returned, not raised, so Prefect logs no traceback for it."""

    message: str


@phase("phase-0-init")
def phase_0(options: RunOptions, root_flow_run_id: str | None) -> Run | Refusal:
    try:
        return phase_init.init(options, root_flow_run_id)
    except (Refused, GitStateError, WorkspaceLocked) as err:
        return Refusal(str(err))


def root_flow_run_id() -> str | None:
    """Asked in the root flow, where Prefect knows it without a call to the API (a subflow walks up through it)."""
    from prefect.runtime import flow_run

    return str(flow_run.root_flow_run_id) if flow_run.id else None


@phase("phase-0.5-test-prompts")
def phase_0_5(ref: RunRef) -> Designed:
    return phase_prompts.design_prompts(ref._run)


@phase("phase-1-baseline")
def phase_1(ref: RunRef) -> Baselines:
    return phase_baseline.baseline(ref._run)


@phase("phase-2-ratchet")
def phase_2(ref: RunRef) -> Optimized:
    return phase_optimize.optimize_all(ref._run)


@phase("phase-3-held-out-gate")
def phase_3(ref: RunRef, optimized: Optimized) -> Optimized:
    return held_out_gate.held_out_gate(ref._run, optimized)


@task(name="phase-5-report", cache_policy=NO_CACHE)
def phase_5(ref: RunRef, optimized: Optimized, stopped: str | None, handoff: Handoff | None = None) -> str:
    return str(phase_report.report(ref._run, optimized.outcomes, stopped, handoff))


@task(name="phase-6-meta-review", cache_policy=NO_CACHE)
def phase_6(ref: RunRef, optimized: Optimized) -> list[str]:
    return phase_report.review(ref._run, optimized.outcomes)


def _options(skills_dir: str, skills: list[str] | None, mode: str, approval: str, max_rounds: int | None, budget: float,
             workspace: str | None, init_git: bool, resume: bool, approval_timeout: int, llm: dict | None,
             allow_rename: bool = False) -> RunOptions:
    check_options(mode, approval, budget, llm)
    return RunOptions(skills_dir, tuple(skills or ()), mode, as_approval(approval), max_rounds, budget, workspace, init_git,
                      resume, approval_timeout, llm=dict(llm or {}), allow_rename=allow_rename)


def _lock_path(options: RunOptions) -> Path:
    return lock_path(Path(options.skills_dir), options.workspace)


def _preflight(options: RunOptions) -> None:
    """The CLI's checks again: a deployment's run reaches the flow without passing through the CLI."""
    preflight(options.skills_dir, options.skills, options.mode, options.approval, options.budget, options.workspace,
              options.init_git, options.resume, options.llm, options.evaluate_only, options.lock_wait, options.parallel,
              options.fan_out_to)


def _said(stop: RunStop | None) -> str | None:
    """Why the run stopped, as run.json, the marker and the report say it."""
    return str(stop) if stop is not None else None


def _phases_to_baseline(approval: Approval, run: Run) -> PhaseEnd:
    """Phases 0.5 and 1, unless the consumer baseline blocked the run in Phase 0; the first that stops ends it.
    What each produced goes into the run before the next phase reads it."""
    if run.config.blocks:
        return PhaseEnd(RunStop(StopKind.CONSUMER_GATE, run.config.consumer.notice() or "consumer gate"))
    designed = phase_0_5(approval, RunRef.of(run))
    run.take_prompts(designed)
    if not designed.end.goes_on:
        return designed.end
    measured = phase_1(approval, RunRef.of(run))
    run.take_baselines(measured)
    return measured.end


def summary(run: Run, optimized: Optimized, stopped: str | None, report_path: str | None,
            lessons: list[str], handoff: Handoff | None = None) -> dict[str, Any]:
    return {
        "mode": run.mode, "branch": handoff.branch if handoff else run.branch(), "report": report_path, "stopped": stopped,
        "handoff": asdict(handoff) if handoff else None,
        "skills": {s: asdict(o) for s, o in optimized.outcomes.items()},
        "baselines": {s: run.baseline(s).score.total for s in run.measured()},
        "lessons": lessons, "notices": list(run.effects.notices()), "alerts": run.alerts,
        "fallbacks": run.fallbacks(), "server": run.backend.server_facts(),
        "usage": run.backend.usage.totals() if run.backend.usage else {},
    }


@prompt_heartbeat_flow(name="optimize-skills", log_prints=True)
def optimize_skills(skills_dir: str, skills: list[str] | None = None, mode: str = "auto", approval: Approval = "auto",
                    max_rounds: int | None = None, budget: float = 0.10, workspace: str | None = None,
                    init_git: bool = False, resume: bool = False, approval_timeout: int = 3600,
                    llm: dict[str, Any] | None = None, allow_rename: bool = False,
                    lock_wait: int = 0, parallel: int = 1, fan_out_to: str | None = None,
                    start_branch: str | None = None) -> dict[str, Any] | State:
    """Optimize skills: baseline, ratchet, held-out gate, report and meta-review (Phases 0–6).

    ``lock_wait``: seconds to queue behind a run that holds the workspace or the git repository (0: refuse).
    ``parallel``: skills whose rounds run at once, each in its own git worktree (needs approval auto).
    ``fan_out_to``: a deployment of the optimize-skill flow (e.g. optimize-skill/workers-rounds): each skill's rounds
    run as a child flow run of it, on whichever worker of its pool takes it; ``parallel`` of them at once.
    ``start_branch``: the branch checked out when the run was asked for, where a run queued behind another starts
    (the `luban` command notes it before Prefect starts; left out, it is read here, as the flow run begins)."""
    keep_terminal_handler()
    quiet_budget_stops()
    try:
        options = replace(_options(skills_dir, skills, mode, approval, max_rounds, budget, workspace, init_git, resume,
                                   approval_timeout, llm, allow_rename),
                          lock_wait=lock_wait, parallel=parallel, fan_out_to=fan_out_to or None,
                          start_branch=start_branch or asked_on_branch(Path(skills_dir)))
        _preflight(options)
    except Refused as err:
        return Failed(message=str(err))  # a refusal, not a crash: one line, no traceback
    held = ExitStack()  # entered here: a refusal is a Failed state, not an error raised inside the `with`
    try:
        lock = held.enter_context(workspace_held(_lock_path(options), options.lock_wait, root_flow_run_id()))
    except WorkspaceLocked as err:
        return Failed(message=str(err))
    with held, run_heartbeats():
        if lock.warning():
            get_run_logger().warning(lock.warning())
        run = phase_0(approval, options, root_flow_run_id())
        if isinstance(run, Refusal):
            return Failed(message=run.message)
        optimized, stopped = _optimized(approval, run)
        try:
            handoff = phase_report.hand_off(run, stopped)
            report_path = phase_5(RunRef.of(run), optimized, stopped, handoff)
            lessons = phase_6(RunRef.of(run), optimized)
            run_marker.save(run.workspace.root, run.flow_run_id, state="finished", report=report_path, stopped=stopped)
        finally:
            run.release()
    get_run_logger().info("report: %s", report_path)
    return summary(run, optimized, stopped, report_path, lessons, handoff)


def _optimized(approval: Approval, run: Run) -> tuple[Optimized, str | None]:
    """Phases 0.5 to 3, and why the run stopped early (None: it did not); the hard budget stops it where it is, every
    record kept, and says why."""
    optimized = Optimized()
    try:
        end = _phases_to_baseline(approval, run)
        if end.goes_on:
            optimized = phase_2(approval, RunRef.of(run))
            optimized = phase_3(approval, RunRef.of(run), optimized)
        return optimized, _said(end.stop or optimized.end.stop)
    except BudgetExhausted as err:
        return optimized, str(RunStop(StopKind.BUDGET, str(err)))


@prompt_heartbeat_flow(name="evaluate-skills", log_prints=True)
def evaluate_skills(skills_dir: str, skills: list[str] | None = None, mode: str = "quick", workspace: str | None = None,
                    approval: Approval = "auto", llm: dict[str, Any] | None = None) -> dict[str, Any] | State:
    """Phases 0–1 only: score every skill and record the baseline; nothing is edited."""
    keep_terminal_handler()
    quiet_budget_stops()
    try:
        options = replace(_options(skills_dir, skills, mode, approval, None, 0.10, workspace, False, False, 3600, llm),
                          evaluate_only=True)
        _preflight(options)
    except Refused as err:
        return Failed(message=str(err))
    held = ExitStack()
    try:
        held.enter_context(workspace_held(_lock_path(options), 0, root_flow_run_id()))
    except WorkspaceLocked as err:
        return Failed(message=str(err))
    with held, run_heartbeats():
        run = phase_0(approval, options, root_flow_run_id())
        if isinstance(run, Refusal):
            return Failed(message=run.message)
        try:
            stopped = _said(_phases_to_baseline(approval, run).stop)
        except BudgetExhausted as err:
            stopped = str(RunStop(StopKind.BUDGET, str(err)))
        report_path = phase_5(RunRef.of(run), Optimized(), stopped)
    return summary(run, Optimized(), stopped, report_path, [])

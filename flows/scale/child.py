"""A skill's rounds as a child flow run on a work pool's workers: its parameters, its state rebuilt from the
records, its hand-back record, and the batch waiting for it."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from flows.ratchet.measure import settings_fingerprint
from flows.server.limits import BatchBudget, llm_gate
from flows.state.config import ConsumerVerdict, RunConfig
from flows.state.products import SkillOutcome, SkillState
from flows.state.run import Run, RunOptions
from judges.backend_factory import make_backend
from judges.settings import resolve
from judges.usage import BudgetExhausted
from workspace import meta_learnings, rejected_edits, test_prompts
from workspace.layout import Mode, Workspace
from workspace.results_tsv import Stop

SKILL_FLOW = "optimize-skill"


def _resolved_flags(batch: Run) -> dict[str, Any]:
    """The batch's settings as it resolved them (flags, environment, luban.toml), all but the key: a child resolves
    the same ones, wherever it runs, and takes only the key from its worker's environment."""
    settings = batch.backend.settings
    return settings.as_flags() if settings is not None else dict(batch.options.llm)


def check_same_models(run: Run, models: dict[str, Any] | None) -> None:
    """The batch hands its settings on (``_resolved_flags``), but not the key: a worker whose environment lacks it, or
    holds one a judge refuses, would score this skill offline or not at all and say nothing."""
    mine = settings_fingerprint(run)
    if models is not None and json.loads(json.dumps(models)) != json.loads(json.dumps(mine)):
        differ = sorted(k for k in set(models) | set(mine) if models.get(k) != mine.get(k))
        raise RuntimeError(f"this worker's model settings differ from the batch's in {', '.join(differ)} "
                           f"(batch: {', '.join(f'{k}={models.get(k)}' for k in differ)}); set the same OPENAI_BASE_URL, "
                           "OPENAI_API_KEY and LUBAN_* variables in every worker's environment, then --resume the batch")


def skill_run(skill: str, worktree: str, branch: str, original: str, workspace_root: str, mode: str, run_dir: str,
              options: dict[str, Any], batch_run_id: str | None, consumer: ConsumerVerdict, preferred_dims: list[str],
              budget_id: str | None = None) -> Run:
    """The skill's part of the batch's run, rebuilt from what is on disk: the same function a resume uses."""
    from flows.ratchet.effects import PrefectEffects
    from flows.ratchet.rebuild import rebuild_inserted, rebuild_skill, recorded_progress
    from flows.ratchet.tasks import PrefectMeasurements
    from workspace.git_ratchet import GitRatchet
    from workspace.git_repository import open_repository

    settings_of = RunOptions(**{**options, "skills": tuple(options.get("skills", ()))})
    config = RunConfig(settings_of, Mode(mode), consumer)
    layout = Workspace(Path(worktree), Path(workspace_root), Mode(mode))
    ratchet = GitRatchet(layout, open_repository(Path(worktree)), branch, original, [skill])
    settings = resolve(settings_of.llm, os.environ, Path(settings_of.skills_dir) / "luban.toml")
    usage = BatchBudget(settings.max_llm_calls, settings.max_tokens, batch_id=budget_id) if budget_id else None
    backend = make_backend(settings, layout.root / "cache" / "baseline", usage, llm_gate(settings))
    run = Run(config, layout, ratchet, backend, Path(run_dir), datetime.now(UTC),
              PrefectEffects(), PrefectMeasurements(), skills=[skill], flow_run_id=batch_run_id, preferred_dims=frozenset(preferred_dims),
              meta_hints=meta_learnings.guidance(layout.meta_learnings, mode)[1])
    prompts = test_prompts.load(layout.test_prompts(skill)) if layout.test_prompts(skill).exists() else None
    run.take(SkillState(skill, tuple(prompts) if prompts is not None else None,
                        buffer=rejected_edits.load(layout.rejected_edits(skill), skill, run.started.isoformat())))
    progress = recorded_progress(run, skill)
    if progress is None:
        raise RuntimeError(f"{skill}: no baseline row in {layout.results_tsv(skill)}; the batch records it before "
                           "it fans out (run the batch again, or with --resume)")
    run.take(rebuild_skill(run, skill, progress))
    rebuild_inserted(run, ratchet)
    return run


def hand_back_record(run: Run, skill: str, outcome: SkillOutcome | None) -> dict[str, Any]:
    """What the batch needs back from a child: the outcome (None: the budget ran out mid-skill; a stop that ends the
    batch is in it), notices, the skill's samples (the held-out gate and the skill's summary read them) and the blocks
    its kept edits inserted (the boilerplate rule)."""
    done = asdict(outcome) | {"stop": outcome.stop.value} if outcome is not None else None
    return {"outcome": done, "notices": list(run.effects.notices()),
            "inserted": run.inserted.of(skill)
            } | run.ledger.record(skill)


def take_back(run: Run, skill: str, record: dict[str, Any]) -> SkillOutcome:
    """The child's record folded into the batch's run: its samples replace the skill's (they start with the same
    baseline samples), its stop and notices join the run's. The skill's outcome."""
    run.ledger.replace(skill, record)
    run.inserted.add(record["inserted"], skill)
    run.effects.notice(*record["notices"])
    if record.get("budget"):
        raise BudgetExhausted(record["budget"])  # raised once every skill's work is merged (flows/scale/fan_out.py)
    fields = dict(record["outcome"])
    return SkillOutcome(**{**fields, "stop": Stop(fields["stop"])})


class ChildRunFailed(RuntimeError):
    """A skill's child flow run did not complete: the batch merges what every skill kept, then stops with this."""


def in_child_flow_run(batch: Run, child: Run, skill: str) -> SkillOutcome:
    """The skill's rounds as a flow run of ``batch.options.fan_out_to`` in the worktree ``child`` was forked into;
    waits for it and takes its record back. The idempotency key makes a retried request attach to the same run."""
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment

    from flows.scale.worktrees import worktree_root
    child_git, batch_git = (child.ratchet.git if child.ratchet else None), (batch.ratchet.git if batch.ratchet else None)
    assert child_git is not None and batch_git is not None  # workers take worktrees: full mode only
    hand_back = worktree_root(batch) / f"{skill}.hand-back.json"
    hand_back.unlink(missing_ok=True)
    parameters = {"skill": skill, "worktree": str(child.workspace.skills_dir), "branch": child_git.branch,
                  "original": batch_git.original, "workspace": str(batch.workspace.root), "mode": batch.mode,
                  "run_dir": str(batch.run_dir), "options": asdict(batch.options) | {"skills": list(batch.options.skills),
                                                                                     "llm": _resolved_flags(batch)},
                  "batch_run_id": batch.flow_run_id, "hand_back": str(hand_back), "consumer": asdict(batch.config.consumer),
                  "preferred_dims": sorted(batch.preferred_dims), "budget_id": batch.budget_id,
                  "models": settings_fingerprint(batch)}
    key = f"luban:{batch.flow_run_id}:{skill}:{child_git.head_sha()}"
    deployment = str(batch.options.fan_out_to)
    # run_deployment is sync-compatible: called from sync code it returns the FlowRun itself, not a coroutine
    flow_run = cast(FlowRun, run_deployment(deployment, parameters=parameters, idempotency_key=key, poll_interval=2,
                                            timeout=None, tags=["luban", f"luban-batch:{batch_git.branch}"],
                                            flow_run_name=skill))
    state = flow_run.state
    if state is None or not state.is_completed() or not hand_back.exists():
        ended = state.name if state is not None else "without a state"
        raise ChildRunFailed(f"{skill}: its rounds ran as flow run {flow_run.id} of {deployment}, which ended {ended}"
                             f"{'' if hand_back.exists() else ' with no record at ' + str(hand_back)}; what it kept is "
                             f"merged; 'prefect flow-run logs {flow_run.id}' says why, and --resume continues the batch")
    record = json.loads(hand_back.read_text(encoding="utf-8"))
    hand_back.unlink()
    return take_back(batch, skill, record)


def wait_for_children(branch: str, wait_seconds: float = 900) -> list[str]:
    """Wait until the child flow runs of a batch on ``branch`` have ended (their batch was killed, not they): a resume
    merges their worktrees, which nobody may still be writing, and what they finish is theirs to keep. Their names.

    A child whose machine was lost stays Running until Prefect's zombie automation marks it Crashed
    (``luban setup-server``); one that never found a worker stays Scheduled: both end the wait with the fix."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType, FlowRunFilterTags
    from prefect.client.schemas.objects import StateType

    going = FlowRunFilter(tags=FlowRunFilterTags(all_=[f"luban-batch:{branch}"]), state=FlowRunFilterState(
        type=FlowRunFilterStateType(any_=[StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED,
                                          StateType.CANCELLING])))
    deadline, waited = time.monotonic() + wait_seconds, set()
    with get_client(sync_client=True) as client:
        while runs := client.read_flow_runs(flow_run_filter=going):
            waited |= {r.name for r in runs}
            if time.monotonic() > deadline:
                listing = ", ".join(f"{r.name} ({r.id}: {r.state.name if r.state else '?'})" for r in runs)
                raise ChildRunFailed(f"--resume: child flow runs of {branch} have not ended after {wait_seconds:.0f} s: "
                                     f"{listing}; cancel them in the Prefect UI (or start a worker on their pool), then "
                                     "--resume again")
            time.sleep(2)
    return sorted(waited)

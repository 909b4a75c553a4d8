"""Phase 0 (init), Phase 0.5 (test prompts) and Phase 1 (baseline)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger

from flows.phases import resume
from flows.phases.governance import choose_mode, govern
from flows.phases.preflight import Refused, find_skills, recorded_rows
from flows.ratchet import records
from flows.ratchet.effects import PrefectEffects
from flows.ratchet.tasks import PrefectMeasurements
from flows.server.limits import BatchBudget, llm_gate, open_batch_budget
from flows.state.config import ConsumerVerdict, Response, RunConfig
from flows.state.products import SkillState
from flows.state.rows import RowDraft
from flows.state.run import Run, RunOptions
from judges.backend import Backend
from judges.backend_factory import make_backend
from judges.consumer_baseline import consumer_baseline
from judges.server import probe as probe_server
from judges.settings import Settings, resolve
from workspace import meta_learnings, rejected_edits, run_marker
from workspace.file_ratchet import FileRatchet, check_readonly, readonly_state
from workspace.git_ratchet import GitRatchet
from workspace.git_repository import BRANCH_PREFIX, GitStateError, init_repository, open_repository
from workspace.layout import MODES, Mode, Workspace, new_stamped_dir
from workspace.manifest import ManifestWriter
from workspace.results_tsv import ResultsFile, Status, Stop
from workspace.run_branches import delete_merged
from workspace.skill_source import read_skill, source_text

RunRefused = Refused  # the run cannot start; the message says why and what to do


def _start_ratchet(options: RunOptions, workspace: Workspace, skills: list[str], now: datetime):
    if options.evaluate_only:
        return None, new_stamped_dir(workspace.mode_dir / "evaluations", now), None
    if workspace.mode == "quick":
        files = FileRatchet.start(workspace, skills, now)
        return files, files.snapshot_dir, None
    try:
        open_repository(workspace.skills_dir)
    except GitStateError:
        if not options.init_git:
            raise
        init_repository(workspace.skills_dir)
    run_dir = new_stamped_dir(workspace.backups(), now)
    manifests: list[ManifestWriter] = []
    git_ratchet = GitRatchet.start(workspace, skills, now, lambda branch, original, base: manifests.append(
        ManifestWriter.create(run_dir, "full", branch, original, base)))
    return git_ratchet, run_dir, manifests[0]


@dataclass(frozen=True)
class _Scope:
    """What Phase 0 decided before anything is opened: the options as this run takes them (a run executed again
    after a suspension resumes in its recorded mode), the workspace of the chosen mode, the skills it can read."""

    options: RunOptions
    workspace: Workspace
    skills: list[str]
    unreadable: dict[str, str]  # skill → why it cannot be scored
    reasons: list[str]  # why this mode, and what --resume found
    marker: dict[str, Any] | None  # this flow run's own marker, when it is executed again


def init(options: RunOptions, flow_run_id: str | None) -> Run:
    """Phase 0: settings, scope, mode, ratchet, records, profile, read-only checks, alerts — the run, complete.

    ``flow_run_id`` is the root flow run's: the key of this run's marker in the workspace."""
    settings = resolve(options.llm, os.environ, Path(options.skills_dir) / "luban.toml")
    scope = _scope(options, flow_run_id)
    run, undone = _open_run(scope, settings, flow_run_id)
    _say_how_it_started(run, scope, undone)
    run = _take_on(run, scope)
    get_run_logger().info("Phase 0: %s mode, %d skill(s) (%s), backend %s", run.mode, len(run.skills),
                          ", ".join(run.skills), run.backend.kind)
    return run


def _scope(options: RunOptions, flow_run_id: str | None) -> _Scope:
    found = find_skills(options.skills_dir, options.skills)
    skills_dir, skills = found.skills_dir, list(found.skills)
    probe = Workspace.open(skills_dir, Mode.FULL, Path(options.workspace) if options.workspace else None)
    marker = None if options.evaluate_only else run_marker.load(probe.root, flow_run_id)
    if marker and marker.get("mode") in MODES:  # Prefect runs a resumed suspension again from the top
        options = replace(options, mode=marker["mode"], resume=True)
    records = recorded_rows(probe.root)
    unreadable = _unreadable(skills_dir, skills)  # before anything else reads them: a FIFO, a link out, a 50 MB file
    skills = [s for s in skills if s not in unreadable]
    mode, reasons = choose_mode(options, skills_dir, skills, records, probe.root)
    workspace = Workspace.open(skills_dir, Mode(mode), probe.root)
    if options.resume and not options.evaluate_only and not resume.resumable(workspace):
        options = replace(options, resume=False)
        reasons.append("--resume: nothing was recorded before the last run stopped; started afresh")
    return _Scope(options, workspace, skills, unreadable, reasons, marker)


def _open_run(scope: _Scope, settings: Settings, flow_run_id: str | None) -> tuple[Run, list[str]]:
    """The repository held (full mode), the ratchet started or resumed, the model server probed: the run, and the
    skills whose unscored edit a resume rolled back. Whatever fails on the way lets go of what it held."""
    options, workspace, now = scope.options, scope.workspace, datetime.now(UTC)
    held = resume.hold_repository(options, workspace) if workspace.mode == Mode.FULL and not options.evaluate_only else None
    undone: list[str] = []
    try:
        if options.resume:
            ratchet, run_dir, manifest, undone = resume.resume_ratchet(workspace, scope.skills)
        else:
            ratchet, run_dir, manifest = _start_ratchet(options, workspace, scope.skills, now)
        budget_id = flow_run_id if options.fan_out_to and settings.backend != "offline" else None
        facts = probe_server(settings) if settings.backend != "offline" else None  # the server's slots, where it says
        backend = make_backend(settings, workspace.root / "cache" / "baseline", shared_budget(settings, budget_id),
                               llm_gate(settings), facts)
    except BaseException:
        if held is not None:
            held.release()
        raise
    verdict = recorded_verdict(workspace.root, scope.marker, options.resume, backend) or consumer_verdict(workspace.mode, backend)
    config = RunConfig(options, workspace.mode, verdict, settings.keep_runs)
    effects = PrefectEffects()
    preferred_dims, meta_hints = meta_learnings.guidance(workspace.meta_learnings, str(workspace.mode))
    states = {skill: SkillState(skill, buffer=_records_of(workspace, effects, now, skill)) for skill in scope.skills}
    run = Run(config, workspace, ratchet, backend, run_dir, now, effects, PrefectMeasurements(), manifest,
              states=states, preferred_dims=preferred_dims, meta_hints=meta_hints, flow_run_id=flow_run_id,
              repository_lock=held, budget_id=budget_id)
    return run, undone


def _say_how_it_started(run: Run, scope: _Scope, undone: list[str]) -> None:
    """The run's first notices, and its marker: running, in which mode, with which consumer verdict."""
    config, options = run.config, run.options
    run.effects.notice(*scope.reasons, *[n for n in (config.consumer_notice(),) if n and not config.blocks])
    if scope.marker:
        run.effects.notice(f"flow run {run.flow_run_id} executed again after its checkpoint "
                           f"{scope.marker.get('checkpoint')} was answered: continuing from the records")
    if not options.evaluate_only:
        for stale in run_marker.close_abandoned(run.workspace.root, run.flow_run_id, run.started.isoformat()):
            run.effects.notice(f"run {stale} had stopped without finishing (killed, or its machine lost): marked stopped"
                               + ("; this run continues its records" if options.resume else ""))
        run_marker.save(run.workspace.root, run.flow_run_id, mode=run.mode, state="running",
                        skills_dir=str(run.workspace.skills_dir), consumer=config.consumer.record(verdict_models(run.backend)))
    run.effects.notice(*[f"{s}: an edit applied but never scored was rolled back (resume)" for s in undone])
    git = run.ratchet.git if run.ratchet is not None else None
    if git is not None and not options.resume:
        _say_where_it_starts(run, git)


def _say_where_it_starts(run: Run, git) -> None:
    """Run branches already merged where this run starts are deleted; a start on an earlier run's unmerged branch
    (it builds on that run's edits) is said, never taken silently."""
    deleted = delete_merged(git.repo, keep=git.branch, base=git.base)
    if deleted:
        run.effects.notice(f"deleted {len(deleted)} run branch(es) already merged into {git.base}: {', '.join(deleted)}")
    if git.base and git.base.startswith(BRANCH_PREFIX):
        run.effects.notice(f"this run starts from {git.base}, an earlier run's branch that is not merged: it builds on "
                           f"that run's edits (merge that branch first to start from your own branch)")


def _records_of(workspace: Workspace, effects: PrefectEffects, now: datetime, skill: str) -> rejected_edits.Buffer:
    """A skill's records made sound (a torn last line repaired, a read-only file said) and its rejected edits."""
    repair = ResultsFile(workspace.results_tsv(skill)).ensure()
    if repair:
        effects.notice(repair.message(workspace.results_tsv(skill)))
    notice = check_readonly(workspace, skill)
    if notice:
        effects.notice(notice)
    return _load_buffer(workspace, effects, now, skill)


def _take_on(run: Run, scope: _Scope) -> Run:
    """What a kill interrupted settled, the unreadable skills recorded, and which skills this run takes: the run
    with them, alerts raised and holds served (an evaluation only measures: governance is the optimizer's)."""
    if run.options.resume:  # after the buffers: a rejection's pending row is completed when its edit is in them
        resume.settle_interrupted_keeps(run, scope.skills)
    for skill, error in scope.unreadable.items():
        run.effects.notice(f"{skill}: not optimized: {error}")
        records.record_row(run, skill, RowDraft(0, Status.ERROR, stop=Stop.UNREADABLE, text=error))
    skills = [s for s in scope.skills if _allowed(run, s)]
    if run.options.evaluate_only:
        return replace(run, skills=skills)
    governed = govern(run, skills, scope.skills)
    return replace(run, skills=list(governed.skills), alerts=list(governed.alerts), measure_only=governed.measure_only)


def shared_budget(settings, budget_id: str | None):
    """A batch that fans out counts its calls against one budget on the Prefect server (flows/server/limits.py);
    any other run, in its own process (None: the client's own)."""
    if budget_id is None:
        return None
    open_batch_budget(settings, budget_id)
    return BatchBudget(settings.max_llm_calls, settings.max_tokens, batch_id=budget_id)


def _unreadable(skills_dir: Path, skills: list[str]) -> dict[str, str]:
    """skill → why it cannot be scored, read the way `luban score` reads (bounded, regular files, no links out)."""
    found = {}
    for skill in skills:
        _, error = source_text(read_skill(skills_dir / skill / "SKILL.md"))
        if error is not None:
            found[skill] = error
    return found


def _load_buffer(workspace: Workspace, effects: PrefectEffects, now: datetime, skill: str) -> rejected_edits.Buffer:
    path = workspace.rejected_edits(skill)
    if not path.exists():
        reverts = [r for r in ResultsFile(workspace.results_tsv(skill)).rows() if r.status == Status.REVERT]
        if reverts:
            effects.notice(f"{skill}: rejected_edits.md was missing; rebuilt it from {len(reverts)} revert row(s)")
            buffer = rejected_edits.rebuild_from_results(skill, now.isoformat(), reverts)
            rejected_edits.save(path, buffer)
            return buffer
    return rejected_edits.load(path, skill, now.isoformat())


def _allowed(run: Run, skill: str) -> bool:
    frozen = run.profile.frozen.get(skill)
    if frozen is not None:
        length = f"{frozen.runs_left} more run(s), or " if frozen.runs_left is not None else ""
        run.effects.notice(f"{skill}: frozen since {frozen.since} ({frozen.reason}); {length}'luban lift {skill}' lifts it")
        records.record_row(run, skill, RowDraft(0, Status.SKIP, stop=Stop.FROZEN, text=frozen.reason))
        return False

    if readonly_state(run.workspace, skill):
        run.effects.notice(f"{skill}: under read-only protection; skipped")
        return False
    return True


def verdict_models(backend: Backend) -> dict[str, Any]:
    settings = backend.settings
    return {"backend": str(backend.kind), "target": settings.target_model if settings else None,
            "judge": settings.judge_model if settings else None}


def recorded_verdict(workspace_root: Path, marker: dict[str, Any] | None, resume: bool, backend) -> ConsumerVerdict | None:
    """The verdict a run executed again (its own marker) or resumed (the newest full run's) started with. Measured
    again, it would cost the reference tasks' calls and, under noisy judges, could come out otherwise: the resumed
    run would then not be configured as the run it continues."""
    record = (marker or {}).get("consumer") or (run_marker.newest(workspace_root, "full", "consumer") if resume else None)
    return ConsumerVerdict.from_record(record, verdict_models(backend)) if isinstance(record, dict) else None


def consumer_verdict(mode: str, backend) -> ConsumerVerdict:
    """Full mode, online: the target model's bare capability decides continue / quick / lite / block, once, in
    Phase 0 (a resumed run reads the verdict back from the records: ``recorded_verdict``)."""
    if mode != "full":
        return ConsumerVerdict.not_tested("quick mode")
    if backend.exact:
        return ConsumerVerdict.not_tested(f"{backend.kind} backend")

    capability, response = consumer_baseline(backend.client, backend.settings, backend.cache)
    return ConsumerVerdict(capability, Response(response))



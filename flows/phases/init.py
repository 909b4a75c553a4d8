"""Phase 0 (init), Phase 0.5 (test prompts) and Phase 1 (baseline)."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import get_run_logger

from flows.interaction.checkpoints import checkpoint
from flows.interaction.events import emit
from flows.phases import resume
from flows.phases.preflight import Refused, Scope, find_skills, recorded_rows, routed
from flows.ratchet import records
from flows.ratchet.rebuild import recorded_progress
from flows.scale.threads import side_by_side
from flows.server.limits import BatchBudget, llm_gate, open_batch_budget
from flows.state.config import GO_ON, ConsumerVerdict, PhaseEnd, Response, RunConfig
from flows.state.run import Run, RunOptions
from judges.backend import make_backend
from judges.server import probe as probe_server
from judges.settings import resolve
from scoring.governance.alerts import check_alerts, run_metrics
from scoring.governance.roi import earlier_runs, roi_precheck
from workspace import meta_learnings, rejected_edits, run_marker, test_prompts
from workspace import profile as profile_store
from workspace.file_ratchet import FileRatchet, check_readonly
from workspace.git_ratchet import GitRatchet, GitStateError, init_repository, open_repository
from workspace.governance_records import apply_escalation, mode_history
from workspace.layout import Workspace, new_stamped_dir
from workspace.manifest import ManifestWriter, save_round_backup
from workspace.results_tsv import ResultsFile, Status, Stop

RunRefused = Refused  # the run cannot start; the message says why and what to do


def choose_mode(options: RunOptions, skills_dir: Path, skills: list[str], records: int) -> tuple[str, list[str]]:
    if options.mode in ("quick", "full"):
        return options.mode, [f"mode {options.mode} given explicitly"]
    decision = routed(Scope(skills_dir, tuple(skills)), records)
    reasons = [f"mode router: {decision.band} (M = {decision.m:.4f})", *decision.reasons]
    suggested = decision.mode or "quick"
    undecided = "\n\nThe router cannot decide on its own: choose." if decision.pause or decision.mode is None else ""
    summary = "\n".join(f"- {r}" for r in reasons) + f"\n\nSuggested: {suggested}.{undecided}"
    answer = checkpoint("mode", summary, options.approval, choices=("quick", "full"), default_choice=suggested,
                        timeout=options.approval_timeout)
    chosen = answer.choice if answer.choice in ("quick", "full") else suggested
    return chosen, reasons + ([f"mode {chosen} chosen at the checkpoint ({answer.answered_by})"] if chosen != suggested else [])


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
    git_ratchet = GitRatchet.start(workspace, skills, now, lambda branch, original: manifests.append(
        ManifestWriter.create(run_dir, "full", branch, original)))
    return git_ratchet, run_dir, manifests[0]


def init(options: RunOptions, flow_run_id: str | None) -> Run:
    """Phase 0: settings, scope, mode, ratchet, records, profile, read-only checks, alerts.

    ``flow_run_id`` is the root flow run's: the key of this run's marker in the workspace."""
    logger = get_run_logger()
    scope = find_skills(options.skills_dir, options.skills)
    skills_dir, skills = scope.skills_dir, list(scope.skills)
    settings = resolve(options.llm, os.environ, Path(options.skills_dir) / "luban.toml")
    probe = Workspace.open(skills_dir, "full", Path(options.workspace) if options.workspace else None)
    marker = None if options.evaluate_only else run_marker.load(probe.root, flow_run_id)
    if marker and marker.get("mode") in ("quick", "full"):  # Prefect runs a resumed suspension again from the top
        options = replace(options, mode=marker["mode"], resume=True)
    records = recorded_rows(probe.root)
    unreadable = _unreadable(skills_dir, skills)  # before anything else reads them: a FIFO, a link out, a 50 MB file
    skills = [s for s in skills if s not in unreadable]
    mode, reasons = choose_mode(options, skills_dir, skills, records)
    workspace = Workspace.open(skills_dir, mode, probe.root)  # type: ignore[arg-type]
    now = datetime.now(UTC)
    undone: list[str] = []
    if options.resume and not options.evaluate_only and not resume.resumable(workspace):
        options = replace(options, resume=False)
        reasons.append("--resume: nothing was recorded before the last run stopped; started afresh")
    held = resume.hold_repository(options, workspace) if mode == "full" and not options.evaluate_only else None
    try:
        if options.resume:
            ratchet, run_dir, manifest, undone = resume.resume_ratchet(workspace, skills)
        else:
            ratchet, run_dir, manifest = _start_ratchet(options, workspace, skills, now)
        budget_id = flow_run_id if options.fan_out_to and settings.backend != "offline" else None
        facts = probe_server(settings) if settings.backend != "offline" else None  # the server's slots, where it says
        backend = make_backend(settings, workspace.root / "cache" / "baseline", shared_budget(settings, budget_id),
                               llm_gate(settings), facts)
    except BaseException:
        if held is not None:
            held.release()
        raise
    verdict = recorded_verdict(workspace.root, marker, options.resume, backend) or consumer_verdict(mode, backend)
    config = RunConfig(options, mode, verdict)  # type: ignore[arg-type]
    run = Run(config, workspace, ratchet, backend, profile_store.load(workspace.profile), run_dir, now, manifest,
              flow_run_id=flow_run_id, repository_lock=held, budget_id=budget_id)
    run.notices += reasons + [n for n in (config.consumer_notice(),) if n and not config.blocks]
    if marker:
        run.notices.append(f"flow run {flow_run_id} executed again after its checkpoint {marker.get('checkpoint')} was "
                           "answered: continuing from the records")
    if not options.evaluate_only:
        for stale in run_marker.close_abandoned(workspace.root, flow_run_id, now.isoformat()):
            run.notices.append(f"run {stale} had stopped without finishing (killed, or its machine lost): marked stopped"
                               + ("; this run continues its records" if options.resume else ""))
        run_marker.save(workspace.root, flow_run_id, mode=mode, state="running", skills_dir=str(skills_dir),
                        consumer=verdict.record(verdict_models(backend)))
    run.notices += [f"{s}: an edit applied but never scored was rolled back (resume)" for s in undone]
    meta = meta_learnings.load(workspace.meta_learnings)
    run.preferred_dims = frozenset(e.fields["dim"] for e in meta.sections.get("高收益改动", []) if e.fields.get("dim"))
    for skill in skills:
        repair = ResultsFile(workspace.results_tsv(skill)).ensure()
        if repair:
            run.notices.append(repair.message(workspace.results_tsv(skill)))
        notice = check_readonly(workspace, skill)
        if notice:
            run.notices.append(notice)
        run.buffers[skill] = _load_buffer(run, skill)
    if options.resume:  # after the buffers: a rejection's pending row is completed when its edit is in them
        resume.settle_interrupted_keeps(run, skills)
    for skill, error in unreadable.items():
        run.notices.append(f"{skill}: not optimized: {error}")
        run.record(skill, 0, Status.ERROR, None, stop=Stop.UNREADABLE, text=error)
    run.skills = [s for s in skills if _allowed(run, s)]
    _alerts(run)
    logger.info("Phase 0: %s mode, %d skill(s) (%s), backend %s", mode, len(run.skills), ", ".join(run.skills), backend.name)
    return run


def shared_budget(settings, budget_id: str | None):
    """A batch that fans out counts its calls against one budget on the Prefect server (flows/server/limits.py);
    any other run, in its own process (None: the client's own)."""
    if budget_id is None:
        return None
    open_batch_budget(settings, budget_id)
    return BatchBudget(settings.max_llm_calls, settings.max_tokens, batch_id=budget_id)


def appended(existing: list, designed: list) -> list:
    """``existing`` and then ``designed``, renumbered after the largest numeric id (a person's ids may be words)."""
    next_id = max((int(p.id) for p in existing if str(p.id).isdigit()), default=0) + 1
    return existing + [p.model_copy(update={"id": next_id + i, "held_out": False}) for i, p in enumerate(designed)]


def prompts_summary(skill: str, prompts: list) -> str:
    """What a person approves at the test-prompts checkpoint: every prompt, not a count."""
    lines = [f"{skill}: {len(prompts)} prompts ({sum(p.held_out for p in prompts)} held out)"]
    for p in prompts:
        held = " [held out]" if p.held_out else ""
        lines.append(f"  {p.id}. ({p.type}){held} {_one_line(p.prompt)}\n     expected: {_one_line(p.expected)}")
    return "\n".join(lines)


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _unreadable(skills_dir: Path, skills: list[str]) -> dict[str, str]:
    """skill → why it cannot be scored, read the way `luban score` reads (bounded, regular files, no links out)."""
    from workspace.skill_source import read_skill, source_text

    found = {}
    for skill in skills:
        _, error = source_text(read_skill(skills_dir / skill / "SKILL.md"))
        if error is not None:
            found[skill] = error
    return found


def _load_buffer(run: Run, skill: str) -> rejected_edits.Buffer:
    path = run.workspace.rejected_edits(skill)
    if not path.exists():
        reverts = [r for r in ResultsFile(run.workspace.results_tsv(skill)).rows() if r.status == Status.REVERT]
        if reverts:
            run.notices.append(f"{skill}: rejected_edits.md was missing; rebuilt it from {len(reverts)} revert row(s)")
            buffer = rejected_edits.rebuild_from_results(skill, run.started.isoformat(), reverts)
            rejected_edits.save(path, buffer)
            return buffer
    return rejected_edits.load(path, skill, run.started.isoformat())


def _allowed(run: Run, skill: str) -> bool:
    frozen = run.profile.frozen.get(skill)
    if frozen is not None:
        run.notices.append(f"{skill}: frozen since {frozen.since} ({frozen.reason}); 'luban unfreeze {skill}' lifts it")
        run.record(skill, 0, Status.SKIP, None, stop=Stop.FROZEN, text=frozen.reason)
        return False
    from workspace.file_ratchet import readonly_state

    if readonly_state(run.workspace, skill):
        run.notices.append(f"{skill}: under read-only protection; skipped")
        return False
    return True


def _alerts(run: Run) -> None:
    history = mode_history(run.workspace)
    if history.empty:
        return
    alerts = [a for a in check_alerts(run_metrics(history)) if a.skill in run.skills]
    for name, skill, action in apply_escalation(run.workspace, alerts):
        run.alerts.append(f"{name} for {skill}: {action}")
        emit(
            "luban.alert",
            skill,
            {"event_type": name, "severity": action, "detail": next(a.message for a in alerts if a.name == name and a.skill == skill)},
        )
        if action in ("pause", "freeze") and skill in run.skills:
            run.skills.remove(skill)
            run.notices.append(f"{skill}: alert {name} escalated to {action}; skipped this run with a report in the alerts")


def design_prompts(run: Run) -> PhaseEnd:
    """Phase 0.5: reuse test-prompts.json (ask: reuse / rewrite / append), or design them; confirm."""

    for skill in run.skills:
        path = run.workspace.test_prompts(skill)
        text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
        prompts = None
        if path.exists() and run.options.resume:  # the baseline's held-out score was measured on these prompts
            prompts = _load_prompts(run, path)
        elif path.exists():
            answer = run.ask(f"test-prompts-{skill}", f"{path} exists",
                             choices=("reuse", "rewrite", "append"), default_choice="reuse")
            existing = _load_prompts(run, path) or []
            if answer.choice == "reuse" and existing:
                prompts = existing
            elif answer.choice == "append" and existing:
                prompts = appended(existing, _designed(run, skill, text))
        if prompts is None:
            prompts = _designed(run, skill, text)
        prompts, marked = test_prompts.ensure_held_out(prompts, run.options.seed)
        if marked:
            run.notices.append(f"{skill}: no held-out prompt; marked prompt {marked.id} ({marked.held_out_source})")
        test_prompts.save(path, prompts)
        run.prompts[skill] = prompts
    summary = "\n\n".join(prompts_summary(s, p) for s, p in run.prompts.items())
    answer = run.ask("test-prompts", summary)
    if answer.approved:
        return GO_ON
    return PhaseEnd("no answer at the test-prompts checkpoint: resumable with 'luban optimize --resume'"
                    if answer.timed_out else f"test prompts rejected: {answer.comment or 'edit test-prompts.json and run again'}")


def _designed(run: Run, skill: str, text: str) -> list:
    """The designer's prompts; when it fell back to the offline design, the run says so and counts it."""
    from flows.ratchet import tasks
    from judges import fallbacks

    prompts, how = tasks.design_prompts(run.backend, text, skill)
    taken = fallbacks.design(how)
    if taken:
        run.ledger.note_fallbacks(skill, taken)
        run.notices.append(f"{skill}: test prompts designed offline ({how})")
    return prompts


def _load_prompts(run: Run, path: Path):
    try:
        return test_prompts.load(path)
    except test_prompts.TestPromptsError as err:
        run.notices.append(f"{err}; designing new prompts")
        return None


def verdict_models(backend) -> dict[str, Any]:
    settings = getattr(backend, "settings", None)
    return {"backend": backend.name, "target": getattr(settings, "target_model", None),
            "judge": getattr(settings, "judge_model", None)}


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
    if backend.name == "offline":
        return ConsumerVerdict.not_tested(f"{backend.name} backend")
    from judges.performance import consumer_baseline

    capability, response = consumer_baseline(backend.client, backend.settings, backend.cache)
    return ConsumerVerdict(capability, Response(response))




def _resume_skill(run: Run, skill: str, progress: tuple[float, int, Stop | None]) -> None:
    """--resume: keep the recorded baseline; measure the current (kept) version afresh as the incumbent."""
    from flows.ratchet import measure

    text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    card = measure.baseline(run, skill, text)
    run.baselines[skill] = run.best[skill] = card
    run.resumed[skill] = progress
    run.notices.append(f"{skill}: resumed after round {progress[1]} (baseline {progress[0]}, now {run.incumbent_total(skill)})")


def _baseline_skill(run: Run, skill: str) -> None:
    from flows.ratchet import measure

    text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    calls = measure.CallCounter(run)
    card = measure.baseline(run, skill, text)
    held = measure.held_out(run, skill, text) if run.mode == "full" else ()
    run.baselines[skill] = run.best[skill] = card
    records.record_row(run, skill, 0, Status.BASELINE, card, measured=run.incumbent(skill), calls=calls.spent(),
                     text="baseline", held_out=sum(held) / len(held) if held else None)
    save_round_backup(run.run_dir, skill, 0, text.encode("utf-8"))
    lowest = min(d.score for d in card.score.dims if d.score is not None)
    total = run.incumbent_total(skill)
    deltas, days = earlier_runs(ResultsFile(run.workspace.results_tsv(skill)).rows()[:-1], run.started)
    roi = roi_precheck(total, lowest, deltas, days)
    run.notices.append(f"{skill}: {roi.estimate}")
    if roi.decision == "recommend_skip":
        answer = run.ask(f"roi-{skill}", f"{skill}: {roi.reason}; {roi.estimate}. Optimize it anyway?", default_approve=False)
        if not answer.approved:
            roi = replace(roi, decision="skip", reason=f"{roi.reason} (skipped: {answer.answered_by})")
    if roi.decision == "skip":
        run.skills.remove(skill)
        records.record_row(run, skill, 0, Status.SKIP, card, measured=run.incumbent(skill), stop=Stop.ROI, text=roi.reason)
    elif card.review_blocking:  # an open P0 (or three P1) blocks the next phase for this skill
        run.skills.remove(skill)
        records.record_row(run, skill, 0, Status.SKIP, card, measured=run.incumbent(skill), stop=Stop.REVIEW_BLOCKED,
                         text="the review gate has open findings that block optimization; fix them first")


def baseline(run: Run) -> PhaseEnd:
    """Phase 1: score every skill (or, on --resume, take its recorded baseline), ROI precheck, score card, 🔴."""

    def one(skill: str) -> None:
        progress = recorded_progress(run, skill) if run.options.resume else None
        if progress is not None:
            _resume_skill(run, skill, progress)
            return
        if run.options.resume:
            run.notices.append(f"{skill}: nothing recorded to resume; it gets a fresh baseline")
        _baseline_skill(run, skill)

    order = list(run.skills)
    side_by_side(run, order, one)  # with --parallel, several skills at once (flows/scale/fan_out.py)
    run.baselines = {s: run.baselines[s] for s in order if s in run.baselines}  # the card's order, however they finished
    run.skills = [s for s in order if s in run.skills]
    return _score_card_checkpoint(run)


def _score_card_checkpoint(run: Run) -> PhaseEnd:
    """The score card as an artifact, then 🔴 'baseline' (asked again on --resume: the answer may have been no)."""
    from prefect.artifacts import create_markdown_artifact

    rows = [f"| {s} | {run.incumbent_total(s)} | {c.score.deterministic_subtotal} | {c.eval_mode} |"
            for s, c in run.baselines.items()]
    card_md = "| skill | total | deterministic | eval_mode |\n|---|---:|---:|---|\n" + "\n".join(rows)
    create_markdown_artifact(card_md, key="baseline-score-card", description="Phase 1 baseline")
    answer = run.ask("baseline", card_md)
    if answer.approved:
        return GO_ON
    return PhaseEnd("stopped at the baseline checkpoint" + (" (no answer: resumable)" if answer.timed_out else f": {answer.comment}"))

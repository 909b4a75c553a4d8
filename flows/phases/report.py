"""Phase 5 (report: Markdown, chart, artifacts) and Phase 6 (epoch meta-review, then backup rotation)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.ratchet import records
from flows.ratchet.measure import skill_files, skill_sources
from flows.state.products import SkillOutcome
from flows.state.rows import RowDraft
from flows.state.run import Run
from judges import eval_records
from judges.backend import Evaluation
from judges.offline_strategies import MECHANICAL, dims_needing_a_model
from scoring.dim8 import needs_full_test
from scoring.governance.charts import chart_png
from scoring.governance.meta_review import meta_review
from scoring.governance.mode_feedback import mode_feedback
from scoring.governance.report import RunFacts, latest_runs, render
from workspace import profile as profile_store
from workspace import run_branches, run_marker
from workspace.eval_outputs import write_eval_outputs
from workspace.governance_records import mode_history, write_meta_review, write_report
from workspace.layout import Mode
from workspace.library_status import library_status, rows_for_table
from workspace.manifest import prune_evaluations, prune_runs, rotate_backups
from workspace.results_tsv import Status
from workspace.run_branches import Handoff


def hand_off(run: Run, stopped: str | None) -> Handoff | None:
    """A full run's branch ready for review (workspace/run_branches.py); a finished run that kept nothing leaves none
    (a stopped one keeps it: --resume continues on it). None in quick mode, which has no branch."""
    git = run.ratchet.git if run.ratchet is not None else None
    if git is None:
        return None
    handoff = run_branches.hand_off(git.repo, git.branch, git.base, git.original, drop_when_empty=stopped is None)
    if run.manifest is not None and handoff.branch is not None:  # every file the run leaves changed, before and after
        for changed in handoff.files:
            before, after = run_branches.file_at(git.repo, git.original, changed.path), run_branches.file_at(
                git.repo, handoff.branch, changed.path)
            run.manifest.touched(changed.path, before, after, "changed on the run branch")
    return handoff


def report(run: Run, outcomes: dict[str, SkillOutcome], stopped: str | None, handoff: Handoff | None = None) -> Path:
    """Phase 5: the run's report from its rows (``outcomes``: Phases 2–3's; ``stopped``: why the run stopped early;
    ``handoff``: the branch as the run hands it over)."""
    frame = mode_history(run.workspace)
    this_run = frame[frame["skill"].isin(run.measured() + list(outcomes))] if not frame.empty else frame
    usage = run.backend.usage.totals() if run.backend.usage else {}
    _eval_records(run)
    if run.options.evaluate_only:  # an evaluation's folder holds its eval records: the newest LUBAN_KEEP_RUNS stay
        prune_evaluations(run.workspace, run.run_dir, run.config.keep_runs)
    notices = list(run.effects.notices())
    eval_modes = [str(m) for m in latest_runs(this_run)["eval_mode"]] if not this_run.empty else []
    if run.mode == "full" and needs_full_test(eval_modes):
        notices.append(_counter_example_6(run, outcomes))
    if stopped:
        notices.append(f"run stopped early: {stopped}")
    if not this_run.empty:
        notices += [n for n in (mode_feedback(run.mode, _kept_deltas(this_run)),) if n]
    if run.backend.exact:
        notices += _needs_a_model(run, outcomes)
    facts = RunFacts(mode=run.mode, branch=handoff.branch if handoff else run.branch(), backups=str(run.run_dir),
                     manifest=str(run.manifest.path) if run.manifest else None, consumer_baseline=run.config.consumer.describe(),
                     usage=usage, alerts=tuple(run.alerts), notices=tuple(notices), totals=_totals(run),
                     fallbacks=tuple(f"{kind}: {count}" for kind, count in sorted(run.fallbacks().items())),
                     server=run.backend.server_facts(), handoff=tuple(handoff.lines()) if handoff else (),
                     guards=_guards(run))
    # kept with the run's records, so `luban report` rebuilds the same audit trail and notices from disk alone
    run_marker.save(run.workspace.root, run.flow_run_id, report_facts=asdict(facts))
    if this_run.empty:  # stopped before any score was recorded: the report still says why and what to do
        markdown = (f"# Luban optimization report\n\nNo records yet.\n\n- Mode: {run.mode}\n"
                    f"- Consumer baseline: {run.config.consumer.describe()}\n" + "".join(f"- Notice: {n}\n" for n in notices))
    else:
        markdown = render(this_run, facts)
    md_path, _ = write_report(run.workspace, markdown, chart_png(this_run) if not this_run.empty else b"",
                              run.started.strftime("%Y%m%d-%H%M%S"))
    create_markdown_artifact(markdown, key="luban-report", description="Phase 5 report")
    rows = this_run.astype(object).where(this_run.notna(), "").astype(str).to_dict(orient="records") if not this_run.empty else []
    if rows:
        create_table_artifact(rows, key="luban-results", description="results.tsv rows of this run")
    library = rows_for_table(library_status(run.workspace, run.workspace.skill_names()))
    if library:  # what `luban status` shows, as this run leaves the library
        create_table_artifact(library, key="luban-library-status", description="the library at a glance (luban status)")
    for row in rows[-50:]:
        get_run_logger().info("results.tsv %s round %s: %s %s→%s %s", row["skill"], row["round"], row["status"],
                              row["old_score"], row["new_score"], row["note"][:120])
    return md_path


def _eval_records(run: Run) -> None:
    """Each measured skill's grading per case and its benchmark, in the run's folder in skill-creator's shapes
    (judges/eval_records.py); the assertions that pass or fail with and without the skill alike, said as notices."""
    settings = run.backend.settings
    for skill, card in _final_cards(run).items():
        pairs = card.measurement.pairs if card is not None and card.measurement is not None else ()
        if not pairs:
            continue
        benchmark = eval_records.benchmark(skill, pairs, settings.target_model if settings else "offline",
                                           run.started.isoformat())
        prompts = {str(p.id): p for p in run.prompts(skill)}
        write_eval_outputs(run.run_dir / skill / "evals", eval_records.eval_files(pairs, prompts, benchmark))
        for note in eval_records.undiscriminating(pairs):
            run.effects.notice(f"{skill}: {note}")


def _guards(run: Run) -> tuple[str, ...]:
    held = profile_store.load(run.workspace.profile).oscillation_guard
    return tuple(f"{g.dim}: {', '.join(g.skills) or 'every skill'} ({g.runs_left} run(s) left)" for g in held
                 if g.mode in (None, str(run.mode)))


def _kept_deltas(frame) -> list[list[float]]:
    """Each skill's kept Δs in its latest run, in round order; skills in the order their runs started."""
    latest = latest_runs(frame).sort_values(["timestamp", "round"], kind="stable")
    return [[float(d) for d in group.loc[group["status"] == "keep", "delta"] if d == d]
            for _, group in latest.groupby("skill", sort=False)]


def _totals(run: Run) -> tuple[str, ...]:
    """Each skill's final score card explained; with several samples, the total reported is their mean."""
    return tuple(f"{skill}: {card.score.explained}" for skill, card in _final_cards(run).items())


def _final_cards(run: Run) -> dict[str, Evaluation]:
    """Each measured skill's last score card (its kept version's, else its baseline's), by name."""
    cards = {skill: state.best or state.baseline for skill, state in sorted(run.states.items())}
    return {skill: card for skill, card in cards.items() if card is not None}


def _needs_a_model(run: Run, outcomes: dict[str, SkillOutcome]) -> list[str]:
    """Offline, Luban only makes mechanical fixes: say, per skill, which dimensions under full marks need a model."""
    found = []
    for skill in sorted(set(outcomes) | set(run.measured())):
        need = dims_needing_a_model(run.incumbent(skill).means())
        if need:
            found.append(f"{skill}: {', '.join(need)} need a model (set OPENAI_API_KEY or OPENAI_BASE_URL); offline, "
                         f"Luban makes only mechanical fixes ({', '.join(MECHANICAL)})")
    return found


def _counter_example_6(run: Run, outcomes: dict[str, SkillOutcome]) -> str:
    """Over 30 % of dim8 scores were dry runs: run one real full test before reporting, or say why none ran."""
    skill = next(iter(outcomes or run.measured()), None)
    if run.backend.exact or skill is None:
        return ("over 30 % of dim8 scores are dry runs and no full test could run "
                f"({run.backend.kind} backend): dim8 is not a measured result in this report")

    text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    card = run.backend.evaluate(text, skill, skill_files(run, skill), Mode.FULL, run.prompts(skill),
                                sources=skill_sources(run, skill))
    records.record_row(run, skill, RowDraft(99, Status.SKIP, card, facts={"check": "counter_example_6"},
                                            text="one full test because over 30 % of dim8 scores were dry runs"))
    return f"over 30 % dry runs: ran one full test on {skill}: dim8 {card.score.dim('dim8').score} ({card.eval_mode})"


def review(run: Run, outcomes: dict[str, SkillOutcome]) -> list[str]:
    """Phase 6: with ≥ 2 skills optimized, lessons to meta_learnings.md and oscillations to the profile."""
    ids: list[str] = []
    optimized = [s for s, o in outcomes.items() if o.rounds > 0]
    if len(optimized) >= 2:
        history = mode_history(run.workspace)
        history = history[history["skill"].isin(optimized)]
        result = meta_review(latest_runs(history), history)
        if result is not None:
            ids = write_meta_review(run.workspace, result, len(optimized))
    for skill in outcomes:
        pruned = rotate_backups(run.workspace, run.run_dir, skill)
        if pruned and run.manifest:
            run.manifest.pruned(backups=pruned)
    keep = run.config.keep_runs
    gone = prune_runs(run.workspace, run.run_dir, keep)
    if gone:
        run.effects.notice(f"deleted the backups of {len(gone)} run(s) older than the last {keep} (LUBAN_KEEP_RUNS)")
        if run.manifest:
            run.manifest.pruned(backups=gone)
    return ids

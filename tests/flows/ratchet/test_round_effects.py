"""One round's decision taking effect, with no Prefect at all: a real git repository in tmp_path, the offline
judges, and ``DirectEffects`` (rows appended directly, events kept, checkpoints answered by a function).

What the flows do through Prefect, each decision does here through the same recorded step: the row saved as
pending with its proof, the effect, the row complete — and a kill in between settled on resume from that proof.
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from pathlib import Path

import pytest

from flows.interaction.approvals import AnsweredBy, Decision
from flows.phases.rounds import restore_original
from flows.ratchet import measure, records
from flows.ratchet.loop import apply
from flows.ratchet.trial import Outcome, Trial, gates, try_edit
from flows.state.config import RunConfig, RunOptions
from flows.state.effects import DirectEffects
from flows.state.measurements import DirectMeasurements
from flows.state.products import SkillOutcome, SkillState
from flows.state.run import Run
from judges.offline_backend import OfflineBackend
from judges.proposer import Proposal
from scoring.edits import Edit, apply_edit
from scoring.notes import parse_note
from tests.support.repos import commit_all, copy_examples
from workspace import pending_keep, rejected_edits
from workspace.git_ratchet import CommitKind, GitRatchet
from workspace.layout import Mode, Workspace
from workspace.rejected_edits import RejectReason, edit_sha256
from workspace.results_tsv import Status, Stop

SKILL = "pr-review"
NOW = datetime(2026, 12, 5, 6, 0)
STOP_EDIT = Edit("dim4", "", "\n🛑 STOP: do not merge without the author's confirmation.\n",
                 anchor="If everything looks fine, approve the PR and merge it.\n", strategy="test")


def offline_run(tmp_path: Path, effects: DirectEffects | None = None) -> Run:
    skills = copy_examples(tmp_path / "repo" / "skills", SKILL)
    commit_all(tmp_path / "repo")
    workspace = Workspace.open(skills, Mode.FULL)
    ratchet = GitRatchet.start(workspace, [SKILL], NOW)
    config = RunConfig(RunOptions(str(skills), (SKILL,), "full", "auto"), Mode.FULL)
    run = Run(config, workspace, ratchet, OfflineBackend(), tmp_path / "backups", NOW,
              effects or DirectEffects(), DirectMeasurements(), skills=[SKILL])
    run.take(SkillState(SKILL, buffer=rejected_edits.load(workspace.rejected_edits(SKILL), SKILL, NOW.isoformat())))
    return run


def candidate(run: Run, edit: Edit = STOP_EDIT) -> tuple[str, Proposal]:
    """The kept text, and the edit applied to the file as a round applies it (pre-edit commit, atomic write)."""
    text = run.workspace.skill_file(SKILL).read_text(encoding="utf-8")
    edited = apply_edit(text, edit)
    run.editor.pre_edit(SKILL)
    run.editor.write_skill(SKILL, edited)
    return text, Proposal(edit, edited, 1, ())


def kept_version(run: Run, text: str) -> measure.Version:
    return measure.Version(text, measure.skill_sources(run, SKILL))


def judged(run: Run, before: str, after: str, target: str = "dim4") -> Trial:
    """The trial the round makes of it (``try_edit``, through the run's measurements: the offline judges, exact), the
    kept text measured first as Phase 1 measures it."""
    sources = measure.skill_sources(run, SKILL)
    if not run.ledger.of(SKILL, measure.version(run, SKILL, before, sources)).dims:
        run.take(SkillState(SKILL, best=measure.baseline(run, SKILL, before, sources)))
    return try_edit(run, SKILL, 1, measure.Version(before, sources), measure.Version(after, sources), target)


def test_a_keep_commits_the_edit_with_its_trailer_and_writes_a_complete_row(tmp_path: Path):
    effects = DirectEffects()
    run = offline_run(tmp_path, effects)
    before, proposal = candidate(run)
    trial = judged(run, before, proposal.edited_text or "")
    assert trial.outcome is Outcome.KEEP, trial.why
    apply(run, SKILL, 1, kept_version(run, before), proposal, trial)
    git = run.editor.git
    assert git is not None
    kept = [c for c in git.history() if c.kind is CommitKind.OPTIMIZE]
    assert len(kept) == 1 and kept[0].edit is not None and (kept[0].edit["new"], kept[0].edit["target_dim"]) == (STOP_EDIT.new, "dim4")
    row = run.results(SKILL).rows()[-1]
    assert (row.status, row.dim_changed, row.commit) == ("keep", "dim4", git.head_sha()[:12])
    assert row.delta == trial.gain and row.samples and row.evidence and row.evidence["verdict"] == "keep"
    assert not pending_keep.pending_path(run.workspace.results_tsv(SKILL)).exists()
    assert run.inserted.of(SKILL) and run.best(SKILL) is trial.evaluation
    assert effects.events == []  # a keep emits nothing; a rollback does


def test_a_rejection_remembers_the_edit_first_rolls_back_and_says_so(tmp_path: Path):
    effects = DirectEffects()
    run = offline_run(tmp_path, effects)
    before, proposal = candidate(run)
    trial = Trial(Outcome.REJECT, reason=RejectReason.SCORE_REGRESSION, stop=Stop.BOTTLENECK, why="worse on dim5")
    apply(run, SKILL, 1, kept_version(run, before), proposal, trial)
    assert run.workspace.skill_file(SKILL).read_text(encoding="utf-8") == before
    digest = edit_sha256(STOP_EDIT.old, STOP_EDIT.new)
    assert digest in {e.sha256 for e in rejected_edits.load(run.workspace.rejected_edits(SKILL), SKILL, "").entries}
    row = run.results(SKILL).rows()[-1]
    assert row.status == "revert" and row.stop == "bottleneck" and parse_note(row.note)[0]["sha256"] == digest
    assert [e[0] for e in effects.events] == ["luban.rollback"]


def test_an_abandoned_edit_rolls_back_unremembered(tmp_path: Path):
    run = offline_run(tmp_path)
    before, proposal = candidate(run)
    apply(run, SKILL, 1, kept_version(run, before), proposal, Trial(Outcome.ABANDON, stop=Stop.BUDGET, why="LLM budget reached"))
    assert run.workspace.skill_file(SKILL).read_text(encoding="utf-8") == before
    assert rejected_edits.load(run.workspace.rejected_edits(SKILL), SKILL, "").entries == ()
    assert [(r.status, r.stop) for r in run.results(SKILL).rows()] == [("skip", "budget")]


def test_a_kill_between_a_keep_and_its_row_is_settled_from_the_proof(tmp_path: Path):
    """The effect happened (the commit) but the process died before the row: the pending row and the kept text's
    SHA-256 complete it on resume, with the commit that holds it."""
    run = offline_run(tmp_path)
    before, proposal = candidate(run)
    trial = judged(run, before, proposal.edited_text or "")
    row = records.trial_draft(trial, 1, Status.KEEP, dim="dim4")

    def keep_then_die() -> None:
        run.editor.keep(SKILL, trial.gain, "dim4", STOP_EDIT.__dict__)
        raise KeyboardInterrupt("killed after the commit")

    with pytest.raises(KeyboardInterrupt):
        records.recorded_step(run, SKILL, row, keep_then_die,
                              kept_sha256=pending_keep.text_sha(run.workspace.skill_file(SKILL).read_bytes()))
    assert run.results(SKILL).rows() == []
    commit = run.editor.kept_text(SKILL)[1]
    completed = pending_keep.settle(run.workspace.results_tsv(SKILL), partial(run.editor.kept_text, SKILL), set())
    assert completed is not None and completed.status == "keep" and completed.commit == commit
    assert [r.status for r in run.results(SKILL).rows()] == ["keep"]


def test_a_kill_before_the_effect_drops_the_pending_row(tmp_path: Path):
    run = offline_run(tmp_path)
    before, proposal = candidate(run)
    trial = judged(run, before, proposal.edited_text or "")
    row = records.trial_draft(trial, 1, Status.KEEP, dim="dim4")

    def die() -> None:
        raise KeyboardInterrupt("killed before the commit")

    with pytest.raises(KeyboardInterrupt):
        records.recorded_step(run, SKILL, row, die,
                              kept_sha256=pending_keep.text_sha(run.workspace.skill_file(SKILL).read_bytes()))
    assert pending_keep.settle(run.workspace.results_tsv(SKILL), partial(run.editor.kept_text, SKILL), set()) is None
    assert run.results(SKILL).rows() == [] and not pending_keep.pending_path(run.workspace.results_tsv(SKILL)).exists()


def test_a_person_s_no_restores_the_original_through_the_same_recorded_step(tmp_path: Path):
    run = offline_run(tmp_path)
    original = run.workspace.skill_file(SKILL).read_bytes()
    before, proposal = candidate(run)
    trial = judged(run, before, proposal.edited_text or "")
    apply(run, SKILL, 1, kept_version(run, before), proposal, trial)
    run.take(SkillState(SKILL, baseline=OfflineBackend().evaluate(before, SKILL, frozenset({"SKILL.md"}), Mode.FULL, [])))
    restore_original(run, SKILL, SkillOutcome(SKILL, 50.0, 60.0, 1, Stop.MAX_ROUNDS, kept=1), "not this one")
    assert run.workspace.skill_file(SKILL).read_bytes() == original
    git = run.editor.git
    assert git is not None and git.history()[-1].kind is CommitKind.RESTORE_ORIGINAL
    row = run.results(SKILL).rows()[-1]
    assert (row.status, row.stop, row.commit) == ("revert", "user_rejected", git.head_sha()[:12])
    assert "restored the original: not this one" in row.note
    assert not pending_keep.pending_path(run.workspace.results_tsv(SKILL)).exists()


def test_a_safety_red_line_and_a_person_s_no_to_a_disagreement_end_the_trial_before_any_measuring(tmp_path: Path):
    asked: list[str] = []

    def says_no(key: str, summary: str, kwargs: dict) -> Decision:
        asked.append(summary)
        return Decision(False, "", "leave it", AnsweredBy.CLI)

    run = offline_run(tmp_path, DirectEffects(answer=says_no))
    card = OfflineBackend().evaluate(run.workspace.skill_file(SKILL).read_text(), SKILL, frozenset(), Mode.FULL, [])
    vetoed = gates(run, SKILL, 1, type(card)(card.score, card.eval_mode, card.judge_count, safety_veto=True))
    assert vetoed is not None and (vetoed.outcome, vetoed.stop, vetoed.freeze) == (Outcome.REJECT, Stop.SAFETY_VETO, True)
    disputed = gates(run, SKILL, 1, type(card)(card.score, card.eval_mode, card.judge_count, disagreements=("dim3",)))
    assert disputed is not None and disputed.reason is RejectReason.USER_MANUAL and disputed.stop is Stop.DISAGREEMENT
    assert "cli: leave it" in disputed.why and "disagree by more than 3 points on dim3" in asked[0]
    assert gates(run, SKILL, 1, card) is None and len(asked) == 1


class DiesWritingRows(DirectEffects):
    """A process killed after an effect and before its row reaches results.tsv."""

    def write_row(self, results_tsv, row):
        raise KeyboardInterrupt(f"killed before writing the {row.status} row")


def test_a_restore_killed_before_its_row_is_completed_on_resume(tmp_path: Path):
    run = offline_run(tmp_path)
    before, proposal = candidate(run)
    apply(run, SKILL, 1, kept_version(run, before), proposal, judged(run, before, proposal.edited_text or ""))
    run.take(SkillState(SKILL, baseline=OfflineBackend().evaluate(before, SKILL, frozenset({"SKILL.md"}), Mode.FULL, [])))
    run.effects = DiesWritingRows()
    with pytest.raises(KeyboardInterrupt):
        restore_original(run, SKILL, SkillOutcome(SKILL, 50.0, 60.0, 1, Stop.MAX_ROUNDS, kept=1), "no")
    assert [r.status for r in run.results(SKILL).rows()] == ["keep"]
    completed = pending_keep.settle(run.workspace.results_tsv(SKILL), partial(run.editor.kept_text, SKILL), set())
    assert completed is not None and (completed.status, completed.stop) == ("revert", "user_rejected")
    assert [r.status for r in run.results(SKILL).rows()] == ["keep", "revert"]


@pytest.mark.parametrize("kept", [True, False])
def test_a_kill_around_the_keep_of_a_referenced_file_is_settled_from_that_files_proof(tmp_path: Path, kept: bool):
    """A reference's keep leaves SKILL.md as it was: the proof is the kept text of the file the edit changed, so a
    row whose keep never reached git is dropped, and one whose keep did is completed."""
    skills = copy_examples(tmp_path / "repo" / "skills", "api-changelog")
    commit_all(tmp_path / "repo")
    workspace = Workspace.open(skills, Mode.FULL)
    ratchet = GitRatchet.start(workspace, ["api-changelog"], NOW)
    config = RunConfig(RunOptions(str(skills), ("api-changelog",), "full", "auto"), Mode.FULL)
    run = Run(config, workspace, ratchet, OfflineBackend(), tmp_path / "backups", NOW, DirectEffects(),
              DirectMeasurements(), skills=["api-changelog"])
    reference = "references/classification.md"
    text = (skills / "api-changelog" / reference).read_text(encoding="utf-8")
    ratchet.pre_edit("api-changelog", reference)
    ratchet.write_skill("api-changelog", text + "| a renamed field | breaking |\n", reference)
    card = OfflineBackend().evaluate(workspace.skill_file("api-changelog").read_text(), "api-changelog",
                                     frozenset({"SKILL.md"}), Mode.FULL, [])
    trial = Trial(Outcome.KEEP, evaluation=card)
    row = records.trial_draft(trial, 1, Status.KEEP, dim="dim6", facts={"file": reference})

    def effect_then_die() -> None:
        if kept:
            ratchet.keep("api-changelog", 1.0, "dim6", None, reference)
        raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        records.recorded_step(run, "api-changelog", row, effect_then_die, file=reference,
                              kept_sha256=pending_keep.text_sha((skills / "api-changelog" / reference).read_bytes()))
    completed = pending_keep.settle(workspace.results_tsv("api-changelog"), partial(ratchet.kept_text, "api-changelog"),
                                    set())
    assert (completed is not None) is kept and [r.status for r in run.results("api-changelog").rows()] == (
        ["keep"] if kept else [])

"""The real ratchet — ``optimize_skill``: propose, measure, decide, apply, record — for whole rounds, with no Prefect:
a real git repository in tmp_path, ``DirectMeasurements`` (the backend asked at once) and ``DirectEffects``.

Online, against a loopback world whose truth is known: noisy judges (σ = 0.3) and an editor that proposes planted
sentences in turn — two that raise a dimension by 3 points, then one that lowers another by 3. Offline, the exact
heuristics on a shipped example.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from flows.ratchet import measure
from flows.ratchet.loop import optimize_skill
from flows.ratchet.trial import Outcome, try_edit
from flows.state.config import RunConfig, RunOptions
from flows.state.effects import DirectEffects
from flows.state.measurements import DirectMeasurements
from flows.state.products import SkillState
from flows.state.run import Run
from judges.backend import Backend
from judges.backend_factory import make_backend
from judges.offline_backend import OfflineBackend
from judges.settings import resolve
from scoring.edits import Edit, apply_edit
from scoring.notes import parse_note
from tests.support.noisy_llm import NoisyJudges
from tests.support.openai_server import ScriptedOpenAI
from tests.support.repos import commit_all, copy_examples
from workspace import rejected_edits
from workspace.git_ratchet import CommitKind, GitRatchet
from workspace.layout import Mode, Workspace
from workspace.rejected_edits import edit_sha256
from workspace.results_tsv import Status, Stop

SKILL = "pr-review"
NOW = datetime(2026, 12, 7, 6, 0)
CLEARER = "Name the file and line of every finding, and say what the author should change there."
SHORTER = "Check the tests first: a review of code whose tests fail is wasted on both sides."
WORSE = "Approve anything a senior engineer wrote without reading it."
LLM = {"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e", "max_retries": 0}


@pytest.fixture
def world() -> Iterator[tuple[ScriptedOpenAI, NoisyJudges]]:
    judges = NoisyJudges(sigma=0.3)
    judges.plant(CLEARER, "dim5", +3.0)
    judges.plant(SHORTER, "dim3", +3.0)
    judges.plant(WORSE, "dim2", -3.0)
    server = ScriptedOpenAI()
    server.responder = judges
    with server:
        yield server, judges


def direct_run(tmp_path: Path, backend: Backend, skill: str = SKILL) -> tuple[Run, DirectEffects]:
    """A full-mode run of one skill on its own branch, with its test prompts and its baseline, and nothing of Prefect."""
    skills = copy_examples(tmp_path / "repo" / "skills", skill)
    commit_all(tmp_path / "repo")
    workspace = Workspace.open(skills, Mode.FULL)
    effects = DirectEffects()
    run = Run(RunConfig(RunOptions(str(skills), (skill,), "full", "auto"), Mode.FULL), workspace,
              GitRatchet.start(workspace, [skill], NOW), backend, tmp_path / "backups", NOW,
              effects, DirectMeasurements(), skills=[skill])
    text = workspace.skill_file(skill).read_text(encoding="utf-8")
    prompts, _how = backend.design_prompts(text, skill)
    run.take(SkillState(skill, prompts=tuple(prompts)))
    card = measure.baseline(run, skill, text)
    run.take(SkillState(skill, buffer=rejected_edits.load(workspace.rejected_edits(skill), skill, NOW.isoformat()),
                        baseline=card, best=card))
    return run, effects


def online(server: ScriptedOpenAI, tmp_path: Path) -> Backend:
    settings = resolve(LLM, {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-luban-direct-rounds-0001"},
                       tmp_path / "luban.toml")
    return make_backend(settings, tmp_path / "cache")


def test_three_rounds_keep_keep_revert_in_rows_commits_and_rejected_edits(tmp_path: Path, world):
    server, _judges = world
    run, effects = direct_run(tmp_path, online(server, tmp_path))
    original = run.workspace.skill_file(SKILL).read_text(encoding="utf-8")
    outcome = optimize_skill(run, SKILL, max_rounds=3)

    rows = run.results(SKILL).rows()
    assert [(r.round, r.status, r.dim_changed) for r in rows] == [(1, Status.KEEP, "dim5"), (2, Status.KEEP, "dim3"),
                                                                 (3, Status.REVERT, "dim2")]
    assert [r.evidence["verdict"] for r in rows if r.evidence] == ["keep", "keep", "revert"]
    assert rows[2].stop == Stop.BOTTLENECK and outcome.stop is Stop.BOTTLENECK and outcome.kept == 2
    assert rows[0].delta > 2 and rows[1].delta > 2 and all(r.llm_calls for r in rows)

    git = run.editor.git
    assert git is not None
    kept = [c for c in git.history() if c.kind is CommitKind.OPTIMIZE]
    assert [c.sha[:12] for c in kept] == [rows[0].commit, rows[1].commit]  # one commit a keep, in order
    assert rows[2].commit == git.head_sha()[:12] == rows[1].commit  # the revert left the second keep in place
    on_disk = run.workspace.skill_file(SKILL).read_text(encoding="utf-8")
    assert CLEARER in on_disk and SHORTER in on_disk and WORSE not in on_disk and on_disk != original
    assert not git.repo.is_dirty() and all(f.startswith("luban-workspace/") for f in git.repo.untracked_files)

    remembered = rejected_edits.load(run.workspace.rejected_edits(SKILL), SKILL, "").entries
    assert [e.sha256 for e in remembered] == [edit_sha256("", f"\n\n{WORSE}\n")] == [parse_note(rows[2].note)[0]["sha256"]]
    assert [e[0] for e in effects.events] == ["luban.rollback"]
    assert outcome.after == run.incumbent_total(SKILL) > outcome.before and (outcome.rounds, outcome.reverted) == (3, 1)


def test_the_remembered_edit_is_not_proposed_again(tmp_path: Path, world):
    """More rounds on the same run: the editor is told of the rejected edit, and the proposer would refuse it."""
    server, _judges = world
    run, _ = direct_run(tmp_path, online(server, tmp_path))
    optimize_skill(run, SKILL, max_rounds=3)
    asked = len(server.chat_requests())
    optimize_skill(run, SKILL, max_rounds=2, start_round=4)
    later = run.results(SKILL).rows()[3:]
    assert [(r.round, r.status, r.stop) for r in later] == [(4, Status.SKIP, Stop.NO_EDIT)]
    assert len(server.chat_requests()) > asked  # the editor was asked, and had nothing left to offer
    assert run.buffer(SKILL).is_rejected("", f"\n\n{WORSE}\n")


def test_offline_rounds_keep_the_mechanical_fixes_then_stop_for_want_of_an_edit(tmp_path: Path):
    run, effects = direct_run(tmp_path, OfflineBackend())
    outcome = optimize_skill(run, SKILL, max_rounds=3)
    rows = run.results(SKILL).rows()
    assert [(r.status, r.stop) for r in rows] == [(Status.KEEP, ""), (Status.KEEP, ""), (Status.SKIP, Stop.NO_EDIT)]
    assert [r.llm_calls for r in rows[:2]] == [0, 0] and effects.events == [] and outcome.kept == 2
    git = run.editor.git
    assert git is not None and len([c for c in git.history() if c.kind is CommitKind.OPTIMIZE]) == 2


def test_try_edit_decides_a_harmful_edit_on_its_own(tmp_path: Path, world):
    """The trial alone: both versions measured through the run's measurements, the decision, nothing written."""
    server, _judges = world
    run, _ = direct_run(tmp_path, online(server, tmp_path))
    text = run.workspace.skill_file(SKILL).read_text(encoding="utf-8")
    before = measure.Version(text, measure.skill_sources(run, SKILL))
    after = before.with_file("SKILL.md", apply_edit(text, Edit("dim2", "", f"\n\n{WORSE}\n", strategy="test")))
    trial = try_edit(run, SKILL, 1, before, after, "dim2")
    assert trial.outcome is Outcome.REJECT and trial.decision is not None and trial.calls > 0
    assert run.ledger.of(SKILL, after.name(run, SKILL)).n("dim2") >= 2  # its samples joined the ledger, explicitly
    assert run.workspace.skill_file(SKILL).read_text(encoding="utf-8") == text and run.results(SKILL).rows() == []

"""The real optimize-skills flow (Prefect test harness) over the example skills and corpus copies, offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git
import pytest

from flows.optimize import evaluate_skills, optimize_skills
from scoring.notes import parse_note
from tests.flows.prefect_server import wait_for
from workspace import meta_learnings, rejected_edits
from workspace.results_tsv import ResultsFile

pytestmark = pytest.mark.usefixtures("prefect_api")


def rows(workspace: Path, mode: str, skill: str):
    return ResultsFile(workspace / mode / skill / "results.tsv").rows()


def test_full_run_keeps_only_improvements_and_records_everything(example_skills: Path):
    originals = {p.parent.name: p.read_bytes() for p in example_skills.glob("*/SKILL.md")}
    result = optimize_skills(skills_dir=str(example_skills), mode="full", approval="auto", init_git=True)
    workspace = example_skills.parent / "luban-workspace"
    repo = git.Repo(example_skills)
    assert repo.active_branch.name == result["branch"] and result["branch"].startswith("auto-optimize/")
    assert repo.git.status("--porcelain") == ""
    run_commits = list(repo.iter_commits())[:-1]  # everything after `--init-git`'s commit of the original state
    assert run_commits and {c.message.split(":")[0] for c in run_commits} <= {
        "pre-edit",
        "optimize",
        "held-out-rollback",
        "restore-original",
    }
    for commit in run_commits:
        assert len(commit.stats.files) <= 1 and all(f.endswith("/SKILL.md") for f in commit.stats.files)
    reverted = 0
    for skill, outcome in result["skills"].items():
        history = rows(workspace, "full", skill)
        assert history[0].status == "baseline" and history[0].round == 0
        assert outcome["after"] >= outcome["before"]  # never worse
        assert outcome["stop"] in ("ceiling", "bottleneck", "max_rounds", "no_edit")
        for row in history:
            if row.status in ("keep", "revert"):
                assert row.edit_pct is not None and row.edit_pct <= 10.0  # the edit budget, enforced in code
                assert row.eval_mode == "fallback_dry" and row.judge_count == 0  # offline, and it says so
            if row.status == "keep":
                assert row.delta is not None and row.delta > 0
        keeps = [r for r in history if r.status == "keep"]
        assert sum(r.delta for r in keeps) == pytest.approx(outcome["after"] - outcome["before"], abs=0.15)
        for row in (r for r in history if r.status == "revert"):
            reverted += 1
            digest = parse_note(row.note)[0]["sha256"]
            buffer = rejected_edits.load(workspace / "full" / skill / "rejected_edits.md", skill, "")
            assert any(e.sha256 == digest and e.reason == "score_regression" for e in buffer.entries)
        on_disk = (example_skills / skill / "SKILL.md").read_bytes()
        assert on_disk == repo.commit("HEAD").tree[f"{skill}/SKILL.md"].data_stream.read()  # every version is committed
        assert (on_disk != originals[skill]) == (outcome["after"] > outcome["before"])
    assert reverted >= 1 and sum(o["kept"] for o in result["skills"].values()) >= 4
    assert Path(result["report"]).exists() and "## Health dashboard" in Path(result["report"]).read_text()
    assert meta_learnings.load(workspace / "meta_learnings.md").sections["高收益改动"]
    manifest = next((workspace / "full" / "backups").glob("*/version_manifest.json"))
    assert json.loads(manifest.read_text())["branch"] == result["branch"]


def test_offline_over_the_corpus_every_kept_edit_is_a_mechanical_fix_that_passes_every_guard(skill_collection: Path,
                                                                                          tmp_path: Path):
    """Offline, over every public skill: only SKILL.md files change; each kept edit is one of the mechanical fixes,
    passes the structural guards, and inserts no block — so no two skills receive the same one."""
    from judges.offline_strategies import MECHANICAL
    from scoring.edit_guards import check_span, span_between
    from workspace.skill_source import list_files

    skills = tmp_path / "skills"
    for source in sorted(p.parent for p in skill_collection.rglob("SKILL.md")):
        shutil.copytree(source, skills / source.name)
    before = {p: p.read_bytes() for p in skills.rglob("*") if p.is_file()}
    result = optimize_skills(skills_dir=str(skills), mode="quick", approval="auto", max_rounds=3)
    after = {p: p.read_bytes() for p in skills.rglob("*") if p.is_file()}
    assert set(after) == set(before)  # no file added or removed in the skills directory
    assert all(p.name == "SKILL.md" for p in before if before[p] != after[p])
    workspace = tmp_path / "luban-workspace"
    snapshot = next((workspace / "quick" / "backups").iterdir())
    inserted: dict[str, str] = {}
    kept = 0
    for name in result["skills"]:
        assert (snapshot / name / "SKILL.md").read_bytes() == before[skills / name / "SKILL.md"]
        text, files = before[skills / name / "SKILL.md"].decode("utf-8"), list_files(skills / name)
        for row in rows(workspace, "quick", name):
            assert row.status != "error"
            if row.status != "keep":
                continue
            kept += 1
            edited = (snapshot / name / f"round{row.round}-candidate.md").read_text(encoding="utf-8")
            span = span_between(text, edited)
            assert parse_note(row.note)[0]["strategy"] in MECHANICAL, row.note
            assert check_span(text, edited, span, files) == [], (name, row.round)
            block = " ".join(span.new.lower().split())
            assert len(block) < 40 or inserted.setdefault(block, name) == name, f"{name} got {inserted[block]}'s block"
            text = edited
        assert text.encode("utf-8") == after[skills / name / "SKILL.md"]  # the kept edits, in order, are the result
    assert kept >= 1  # the corpus has mechanical defects too (a heading jump, a filler ending)


def test_evaluate_scores_and_edits_nothing(example_skills: Path):
    before = {p: p.read_bytes() for p in example_skills.rglob("*") if p.is_file()}
    result = evaluate_skills(skills_dir=str(example_skills), mode="quick")
    assert {p: p.read_bytes() for p in example_skills.rglob("*") if p.is_file()} == before
    assert set(result["baselines"]) == {"api-changelog", "db-migration", "pr-review", "weekly-report-zh"}
    assert not (example_skills / ".git").exists()


def test_a_batch_run_has_its_phases_as_task_runs_not_subflows(example_skills: Path):
    """Nothing pauses with approval=auto, so each phase is a task run (a few ms) instead of a subflow (~0.25 s)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName, FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.sorting import FlowRunSort

    phases = {"phase-0-init", "phase-0.5-test-prompts", "phase-1-baseline", "phase-2-ratchet", "phase-5-report",
              "phase-6-meta-review"}
    optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="auto", max_rounds=1)
    with get_client(sync_client=True) as client:
        root = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["optimize-skills"])),
                                     sort=FlowRunSort.START_TIME_DESC, limit=1)[0]
        children = client.read_flow_runs(flow_run_filter=FlowRunFilter(parent_flow_run_id={"any_": [root.id]}))

        def task_runs_named() -> set[str]:
            tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[root.id])))
            return {t.name.rsplit("-", 1)[0] for t in tasks}

        # task runs reach the API as events, which the server writes a moment after the run has returned
        wait_for(lambda: task_runs_named() >= phases, 30, f"task runs {sorted(phases)} of run {root.id}")
    assert children == []


def test_full_mode_without_git_refuses_with_the_choices(example_skills: Path):
    from prefect.exceptions import PrefectException

    with pytest.raises(Exception) as caught:
        optimize_skills(skills_dir=str(example_skills), mode="full", approval="auto")
    assert "--init-git" in str(caught.value) and "--mode quick" in str(caught.value)
    del PrefectException


def test_roi_precheck_asks_when_three_runs_kept_nothing_and_batch_skips(example_skills: Path):
    from workspace.results_tsv import ResultRow

    history = ResultsFile(example_skills.parent / "luban-workspace" / "quick" / "pr-review" / "results.tsv")
    history.ensure()
    for day in (1, 2, 3):  # three earlier runs, each reverted its one edit
        history.append(ResultRow(f"2026-11-0{day}T10:00:00+00:00", "pr-review", 0, "baseline", "quick", new_score=50.0))
        history.append(ResultRow(f"2026-11-0{day}T10:01:00+00:00", "pr-review", 1, "revert", "quick", old_score=50.0,
                                 new_score=49.5, delta=-0.5, edit_pct=2.0, note="strategy=s"))
    original = (example_skills / "pr-review" / "SKILL.md").read_bytes()
    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick", approval="auto")
    last = ResultsFile(history.path).rows()[-1]
    assert last.status == "skip" and last.stop == "roi" and "the last three runs kept no edit" in last.note
    assert "rests 3 more run(s), then is tried again) (skipped: auto)" in last.note
    assert any("optimized 3 time(s), last +0.0" in n for n in result["notices"])
    assert result["skills"] == {} and (example_skills / "pr-review" / "SKILL.md").read_bytes() == original


def test_the_rebuilt_report_has_the_run_s_branch_and_notices(example_skills: Path):
    """`luban report` from the records alone said `Branch: — (quick mode…)` for a full run and dropped its notices."""
    from typer.testing import CliRunner

    from flows.cli import app

    result = optimize_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="full", approval="auto",
                             init_git=True, max_rounds=1)
    original = Path(result["report"]).read_text(encoding="utf-8")
    rebuilt = CliRunner().invoke(app, ["report", "--skills-dir", str(example_skills)], env={"COLUMNS": "200"})
    assert rebuilt.exit_code == 0, rebuilt.output
    path = Path(rebuilt.output.split("report: ")[1].split()[0])
    text = path.read_text(encoding="utf-8")
    assert f"- Branch: {result['branch']}" in text and "quick mode" not in text
    notices = [line for line in original.splitlines() if line.startswith("- Notice: ")]
    assert notices and [line for line in text.splitlines() if line.startswith("- Notice: ")] == notices
    explained = next(line for line in original.splitlines() if line.startswith("- pr-review: total "))
    assert "rules " in explained and "offline estimate " in explained and explained in text  # where the total comes from


def test_a_skill_with_its_authors_evals_is_measured_on_them_and_a_broken_file_falls_back_saying_so(
        example_skills: Path):
    cases = [{"id": "form", "prompt": "Review the PR that renames the users table", "expected_output": "a review",
              "assertions": ["names the migration risk"]},
             {"id": "tests", "prompt": "Review a PR with no tests", "expected_output": "asks for tests"},
             {"id": "docs", "prompt": "Review a docs-only PR", "expected_output": "a short approval"}]
    (example_skills / "pr-review" / "evals").mkdir()
    (example_skills / "pr-review" / "evals" / "evals.json").write_text(json.dumps({"evals": cases}), encoding="utf-8")
    (example_skills / "db-migration" / "evals").mkdir()
    (example_skills / "db-migration" / "evals" / "evals.json").write_text('{"evals": [{"id": 1}]}', encoding="utf-8")
    result = evaluate_skills(skills_dir=str(example_skills), skills=["pr-review", "db-migration"], mode="quick")
    workspace = example_skills.parent / "luban-workspace" / "quick"
    saved = json.loads((workspace / "pr-review" / "test-prompts.json").read_text(encoding="utf-8"))
    assert [(p["id"], p["prompt"]) for p in saved] == [(c["id"], c["prompt"]) for c in cases]  # as written, all of them
    assert saved[0]["expected"] == "a review" and saved[0]["assertions"] == ["names the migration risk"]
    assert sum(p["held_out"] for p in saved) == 1
    notices = result["notices"]
    assert any("pr-review: its author's 3 case(s) in evals/evals.json are its test prompts" in n for n in notices)
    broken = next(n for n in notices if n.startswith("db-migration: "))
    assert "evals/evals.json: evals.0.prompt: Field required" in broken and "designed instead" in broken
    designed = json.loads((workspace / "db-migration" / "test-prompts.json").read_text(encoding="utf-8"))
    assert designed and all(p["prompt"] != "" for p in designed)
    again = evaluate_skills(skills_dir=str(example_skills), skills=["pr-review"], mode="quick")
    assert json.loads((workspace / "pr-review" / "test-prompts.json").read_text(encoding="utf-8")) == saved, again

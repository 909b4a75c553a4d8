"""Round trips of every record format, rejected-edit lookup and pruning, the lock, and mode isolation."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.reliability.crash import STEP_HOOK
from workspace import meta_learnings, profile, rejected_edits, test_prompts
from workspace.layout import CrossModeError, Workspace
from workspace.lock import WorkspaceLock, WorkspaceLocked, acquire_with_timeout
from workspace.manifest import ManifestWriter, rotate_backups, save_round_backup, sha256
from workspace.results_tsv import ResultRow

TS = "2026-12-02T15:00:00+00:00"


# --- layout -------------------------------------------------------------------

def test_default_workspace_is_beside_the_skills_directory(tmp_path: Path):
    ws = Workspace.open(tmp_path / "skills", "quick")
    assert ws.root == (tmp_path / "luban-workspace").resolve()
    assert ws.results_tsv("alpha") == ws.root / "quick" / "alpha" / "results.tsv"
    assert ws.meta_learnings == ws.root / "meta_learnings.md" and ws.profile == ws.root / "luban-profile.json"


def test_reading_the_other_modes_records_is_refused(tmp_path: Path):
    ws = Workspace.open(tmp_path / "skills", "quick")
    assert ws.results_tsv("alpha", mode="quick").parent.parent.name == "quick"
    with pytest.raises(CrossModeError, match="--mode full"):
        ws.results_tsv("alpha", mode="full")
    with pytest.raises(CrossModeError):
        ws.backups(mode="full")


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "."])
def test_skill_names_cannot_leave_the_directories(tmp_path: Path, name: str):
    with pytest.raises(ValueError):
        Workspace.open(tmp_path / "skills", "full").skill_file(name)


# --- test prompts --------------------------------------------------------------

PROMPTS = [
    {"id": 1, "type": "main", "prompt": "format this SQL", "expected": "formatted SQL", "held_out": False},
    {"id": 2, "type": "edge", "prompt": "format SQL with comments", "expected": "comments kept", "held_out": False},
    {"id": 3, "type": "error", "prompt": "", "expected": "asks for input", "held_out": False},
]


def test_test_prompts_validate_and_round_trip(tmp_path: Path):
    path = tmp_path / "test-prompts.json"
    good = [dict(p, prompt=p["prompt"] or "(empty input)") for p in PROMPTS]
    path.write_text(json.dumps(good), encoding="utf-8")
    loaded = test_prompts.load(path)
    test_prompts.save(path, loaded)
    assert test_prompts.load(path) == loaded
    assert json.loads(path.read_text(encoding="utf-8")) == good


@pytest.mark.parametrize(
    "content, needle",
    [
        ("[{", "not valid JSON"),
        (json.dumps(PROMPTS), "entry 2.prompt"),
        (json.dumps([dict(PROMPTS[0], type="happy")]), "entry 0.type"),
        (json.dumps([dict(PROMPTS[0], colour="red")]), "entry 0.colour"),
        (json.dumps([PROMPTS[0], PROMPTS[0]]), "unique"),
    ],
)
def test_invalid_test_prompts_name_the_file_and_entry(tmp_path: Path, content: str, needle: str):
    path = tmp_path / "test-prompts.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(test_prompts.TestPromptsError) as caught:
        test_prompts.load(path)
    assert str(path) in str(caught.value) and needle in str(caught.value)


def test_one_held_out_prompt_is_marked_at_random_seeded_and_recorded():
    prompts = [test_prompts.TestPrompt(**dict(p, prompt=p["prompt"] or "x")) for p in PROMPTS]
    first, marked = test_prompts.ensure_held_out(prompts, seed=7)
    again, _ = test_prompts.ensure_held_out(prompts, seed=7)
    assert first == again and marked is not None
    assert [p.held_out for p in first].count(True) == 1
    assert marked.held_out_source == "random(seed=7)"
    chosen = {test_prompts.ensure_held_out(prompts, seed=s)[1].id for s in range(20)}
    assert len(chosen) > 1  # the seed really chooses
    untouched, none = test_prompts.ensure_held_out(first, seed=99)
    assert untouched == first and none is None


# --- rejected edits ------------------------------------------------------------

def make_buffer(n: int = 0) -> rejected_edits.Buffer:
    buffer = rejected_edits.Buffer("alpha", TS)
    for i in range(n):
        buffer, _, _ = buffer.add(TS, "dim4", f"old text number {i} " * 3, f"new text {i} ~~~ fenced", "score_regression")
    return buffer


def test_rejected_edits_round_trip_losslessly(tmp_path: Path):
    buffer = make_buffer()
    tricky_old = "line one\n\n~~~~~\n```\n## REJ-9999 | not | a heading\n- status: fake\n"
    buffer, _entry, _ = buffer.add(TS, "dim7", tricky_old, "x" * 700, "held_out_degraded", note="tab\there\nnewline")
    buffer, _, _ = buffer.add(TS, "dim9", "", "Never do X.", "user_manual", status="permanent_block")
    buffer = buffer.with_status(1, "bypassed_on_2026-12-03")
    path = tmp_path / "rejected_edits.md"
    rejected_edits.save(path, buffer)
    text = path.read_text(encoding="utf-8")
    assert "## REJ-0001 | 2026-12-02T15:00:00+00:00 | alpha" in text
    parsed = rejected_edits.parse(text)
    assert parsed == buffer
    assert rejected_edits.render(parsed) == text
    assert parsed.entries[0].old == tricky_old and len(parsed.entries[0].new) == 500
    assert parsed.entries[0].sha256 == rejected_edits.edit_sha256(tricky_old, "x" * 700)
    assert parsed.entries[0].note == "tab here newline"


def test_is_rejected_by_hash_and_by_similarity():
    buffer, entry, _ = make_buffer().add(TS, "dim4", "Review the PR.", "Review the PR.\n\n🛑 STOP before merging.", "score_regression")
    assert buffer.is_rejected("Review the PR.", "Review the PR.\n\n🛑 STOP before merging.")
    assert buffer.match("review the PR.", "Review  the PR.\n🛑 STOP before merging!") == entry  # ≥ 90 % similar
    assert not buffer.is_rejected("Review the PR.", "Review the PR.\n\nAdd a checklist of tests to run.")


def test_bypassed_entries_no_longer_block_but_permanent_ones_do():
    buffer, entry, _ = make_buffer().add(TS, "dim4", "a", "b", "score_regression")
    assert buffer.is_rejected("a", "b")
    assert not buffer.with_status(entry.number, "bypassed_on_2026-12-03").is_rejected("a", "b")
    assert buffer.with_status(entry.number, "permanent_block").is_rejected("a", "b")


def test_pruning_keeps_200_dropping_oldest_active_never_permanent():
    buffer = rejected_edits.Buffer("alpha", TS)
    buffer, _, _ = buffer.add(TS, "dim1", "p-old", "p-new", "held_out_degraded", status="permanent_block")
    pruned_all: list[str] = []
    for i in range(205):
        buffer, _, pruned = buffer.add(TS, "dim4", f"o{i}", f"n{i}", "score_regression")
        pruned_all += pruned
    assert len(buffer.entries) == 200
    assert pruned_all == ["REJ-0002", "REJ-0003", "REJ-0004", "REJ-0005", "REJ-0006", "REJ-0007"]
    assert buffer.entries[0].status == "permanent_block" and buffer.entries[0].id == "REJ-0001"
    assert buffer.entries[-1].id == "REJ-0206" and buffer.last_pruned == TS


def test_invalid_reason_or_status_is_refused():
    with pytest.raises(ValueError, match="reason"):
        make_buffer().add(TS, "dim4", "a", "b", "because")
    with pytest.raises(ValueError, match="status"):
        make_buffer().add(TS, "dim4", "a", "b", "score_regression", status="maybe")


def test_unclosed_fence_names_the_line():
    text = rejected_edits.render(make_buffer(1)).rsplit("~~~~", 1)[0]
    with pytest.raises(rejected_edits.RejectedEditsFormatError, match=r"rejected_edits.md:\d+"):
        rejected_edits.parse(text)


def test_rebuild_from_results_revert_rows_keeps_exact_hashes():
    digest = rejected_edits.edit_sha256("a", "b")
    rows = [ResultRow(timestamp=TS, skill="alpha", round=2, status="revert", mode="full", dim_changed="dim4",
                      note=f"added STOP sha256={digest}")]
    buffer = rejected_edits.rebuild_from_results("alpha", TS, rows)
    assert len(buffer.entries) == 1 and buffer.entries[0].target_dim == "dim4"
    assert buffer.is_rejected("a", "b")


# --- meta-learnings and profile -------------------------------------------------

def test_meta_learnings_round_trip_and_ids(tmp_path: Path):
    path = tmp_path / "meta_learnings.md"

    def add(meta):
        meta.add("高收益改动", "2026-12-02", "dim4: insert 🛑 STOP before the irreversible step", {"count": "3", "mean_delta": "+4.2"})
        meta.add("高收益改动", "2026-12-02", "dim9 counter-examples", {"count": "2"})
        meta.add("评分系统健康度", "2026-12-02", "alert downgraded", {"alert": "revert_rate", "counter": "3 -> 1"})
        meta.skills_optimized_since_last_review = 2

    meta = meta_learnings.update(path, add, created=TS)
    assert [e.id for e in meta.sections["高收益改动"]] == ["HY-0001", "HY-0002"]
    text = path.read_text(encoding="utf-8")
    assert "### HEALTH-0001 | 2026-12-02 | alert downgraded" in text
    again = meta_learnings.load(path)
    assert again == meta and meta_learnings.render(again) == text


def test_meta_learnings_cap_per_section():
    meta = meta_learnings.MetaLearnings()
    for i in range(505):
        meta.add("异常信号", "2026-12-02", f"anomaly {i}", {})
    entries = meta.sections["异常信号"]
    assert len(entries) == 500 and entries[0].title == "anomaly 5"


def test_profile_round_trip_and_validation(tmp_path: Path):
    path = tmp_path / "luban-profile.json"

    def change(p):
        p.mode_preference = "full"
        p.oscillation_guard.append(profile.OscillationGuard(dim="dim5", since=TS, skills=["a", "b"]))
        p.frozen["alpha"] = profile.FrozenSkill(reason="safety", since=TS, rounds_left=5)
        p.skill_edit_budget["beta"] = 0.05
        p.inference_exemptions["finance"] = profile.InferenceExemption(weight_factor=0.5, overrides=["quick", "quick"])

    saved = profile.update(path, change)
    loaded = profile.load(path)
    assert loaded == saved and loaded.guarded_dims() == {"dim5"} and loaded.budget_for("beta") == 0.05
    assert json.loads(path.read_text())["version"] == "1.0.0"
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        profile.update(path, lambda p: setattr(p, "edit_budget", 0.5))  # over the 10 % cap
    assert profile.load(path) == saved  # a bad change is never written
    path.write_text('{"version": "1.0.0", "edit_budget": "lots"}')
    with pytest.raises(profile.ProfileError, match="edit_budget"):
        profile.load(path)


# --- lock ------------------------------------------------------------------------

def _hold_lock(path: str, ready, release) -> None:
    with WorkspaceLock(Path(path)):
        ready.set()
        release.wait(10)


def _start_holder(path: Path):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(path), ready, release))
    holder.start()
    assert ready.wait(20), "the lock-holding child did not start"
    return holder, release


def test_second_run_refuses_with_who_holds_the_lock(tmp_path: Path):
    path = tmp_path / "luban.lock"
    holder, release = _start_holder(path)
    try:
        with pytest.raises(WorkspaceLocked, match=f"pid {holder.pid} on"):
            WorkspaceLock(path).acquire()
        with pytest.raises(WorkspaceLocked, match="stayed locked"):
            acquire_with_timeout(path, timeout=0.2)
    finally:
        release.set()
        holder.join(10)
    with WorkspaceLock(path) as lock:
        assert lock.warning() is None  # released cleanly: no takeover


def test_lock_of_a_killed_process_is_taken_over_with_a_warning(tmp_path: Path):
    path = tmp_path / "luban.lock"
    holder, _ = _start_holder(path)
    os.kill(holder.pid, 9)
    holder.join(10)
    with WorkspaceLock(path) as lock:
        assert f"pid {holder.pid}" in (lock.warning() or "")
        assert json.loads(path.read_text())["pid"] == os.getpid()


def _killed_at_cut(path: Path, nth: int, then: str = "") -> int:
    """A child that takes the lock and runs ``then``, SIGKILLed the ``nth`` time the lock file's record is about to be
    cut to length (the first: its acquire), after the new record is written over the old; the child's pid."""
    code = (STEP_HOOK + "import os\nfrom pathlib import Path\nfrom workspace.lock import WorkspaceLock\n"
            f"print(os.getpid(), flush=True)\nlock = WorkspaceLock(Path({str(path)!r})).acquire()\n{then}\n")
    child = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "LUBAN_KILL_AT": f"_cut:call:{nth}:"})
    assert child.returncode == -9, child.stderr[-2000:]
    return int(child.stdout.split()[0])


def test_a_note_killed_before_its_cut_leaves_the_whole_new_record(tmp_path: Path):
    path = tmp_path / "luban.lock"
    pid = _killed_at_cut(path, 2, "lock.note(lease='taking', lease_seconds=30)")
    assert json.loads(path.read_text()) | {"started": "", "host": ""} == {
        "pid": pid, "started": "", "host": "", "lease": "taking", "lease_seconds": 30}


def test_a_takeover_killed_before_its_cut_leaves_its_own_record_not_the_longer_old_one(tmp_path: Path):
    path = tmp_path / "luban.lock"
    path.write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": "then", "lease": "x" * 300}))
    pid = _killed_at_cut(path, 1)
    text = path.read_text()
    assert text.endswith(" " * 100)  # the old record's length, padded: the cut never happened
    assert json.loads(text)["pid"] == pid and "lease" not in json.loads(text)
    with WorkspaceLock(path) as lock:  # the next run reads who it takes over from
        assert f"pid {pid}" in (lock.warning() or "")


# --- manifest and backups -----------------------------------------------------------

def test_manifest_records_hashes_operator_and_timezone(tmp_path: Path):
    run_dir = tmp_path / "backups" / "20261202-1504"
    writer = ManifestWriter.create(run_dir, "full", branch="auto-optimize/20261202-1504")
    writer.touched(tmp_path / "SKILL.md", b"old", b"new", "keep")
    writer.pruned(backups=["x"], rejected=["REJ-0001"])
    data = json.loads((run_dir / "version_manifest.json").read_text())
    entry = data["files"][0]
    assert entry["sha256_before"] == sha256(b"old") and entry["sha256_after"] == sha256(b"new")
    assert datetime.fromisoformat(entry["at"]).tzinfo is not None
    assert "@" in data["operator"] and data["pruned_backups"] == ["x"] and data["pruned_rejected_edits"] == ["REJ-0001"]


def test_backup_rotation_keeps_baseline_round1_and_latest_five(tmp_path: Path):
    ws = Workspace.open(tmp_path / "skills", "full")
    run_dir = ws.backups() / "20261202-1504"
    for n in range(0, 10):
        save_round_backup(run_dir, "alpha", n, f"round {n}".encode())
    moved = rotate_backups(ws, run_dir, "alpha")
    kept = sorted(p.name for p in (run_dir / "alpha").iterdir())
    assert kept == ["baseline.md", "round1-modified.md"] + [f"round{n}-modified.md" for n in range(5, 10)]
    archive = ws.backups_archive("alpha") / "20261202-1504"
    assert sorted(p.name for p in archive.iterdir()) == ["round2-modified.md", "round3-modified.md", "round4-modified.md"]
    assert len(moved) == 3 and (archive / "round3-modified.md").read_text() == "round 3"


def test_backups_beyond_the_last_runs_are_pruned_in_time_order_never_the_current(tmp_path: Path):
    from datetime import datetime

    from workspace.layout import Workspace, new_stamped_dir
    from workspace.manifest import audit_archive, prune_runs

    ws = Workspace.open(tmp_path / "skills", "full")
    minute = datetime(2026, 12, 2, 15, 4)
    runs = [new_stamped_dir(ws.backups(), minute) for _ in range(11)]  # -10 and -11 come after -9, not after -1
    (ws.backups_archive("alpha") / runs[0].name).mkdir(parents=True)
    (runs[0] / "version_manifest.json").write_text('{"approvals": [{"checkpoint": "skill-alpha", "approved": true}]}')
    (runs[0] / "alpha").mkdir()
    (runs[0] / "alpha" / "baseline.md").write_text("# Alpha as the run found it\n")
    (runs[0] / "alpha" / "round2-modified.md").write_text("# a round's version: git has it, or nothing needs it\n")
    gone = prune_runs(ws, runs[-1], keep=3)
    assert [p.rsplit("/", 1)[1] for p in gone] == [r.name for r in runs[:8]]
    with zipfile.ZipFile(audit_archive(ws, runs[0].name)) as kept:  # the audit trail outlives the backups
        assert sorted(kept.namelist()) == ["alpha/baseline.md", "version_manifest.json"]
        assert kept.read("alpha/baseline.md") == b"# Alpha as the run found it\n"
        assert b'"skill-alpha"' in kept.read("version_manifest.json")
    assert not audit_archive(ws, runs[1].name).exists()  # a run that left nothing to keep leaves no archive
    assert sorted(p.name for p in ws.backups().iterdir()) == sorted(r.name for r in runs[8:])
    assert not (ws.backups_archive("alpha") / runs[0].name).exists()
    assert prune_runs(ws, runs[0], keep=1) == [str(runs[8]), str(runs[9])]  # the current one stays, whatever its age


def test_evaluations_beyond_the_last_runs_are_pruned_never_the_current(tmp_path: Path):
    from datetime import datetime

    from workspace.layout import Workspace, new_stamped_dir
    from workspace.manifest import prune_evaluations

    ws = Workspace.open(tmp_path / "skills", "full")
    assert prune_evaluations(ws, tmp_path, keep=2) == []  # no evaluation yet
    runs = [new_stamped_dir(ws.mode_dir / "evaluations", datetime(2026, 12, 7, 4, minute)) for minute in range(5)]
    (runs[0] / "alpha" / "evals").mkdir(parents=True)
    assert prune_evaluations(ws, runs[-1], keep=2) == [str(r) for r in runs[:3]]
    assert sorted(p.name for p in (ws.mode_dir / "evaluations").iterdir()) == [r.name for r in runs[3:]]

"""A run's branch handed off for review, an empty one dropped, merged ones deleted: on real repositories."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import git

from tests.support.repos import GIT_IDENTITY
from tests.workspace.test_git_ratchet import make_repo
from workspace.git_ratchet import GitRatchet
from workspace.run_branches import delete_merged, hand_off

NOW = datetime(2026, 12, 2, 15, 4)


def test_a_run_that_kept_nothing_leaves_no_branch_and_the_checkout_where_it_started(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    ratchet.pre_edit("alpha")
    ratchet.write_skill("alpha", "# alpha\n\nan edit that was reverted\n")
    ratchet.rollback("alpha")
    handoff = hand_off(repo, ratchet.branch, ratchet.base, ratchet.original, drop_when_empty=True)
    assert handoff.branch is None and handoff.base == "main" and handoff.lines()[0].startswith("nothing kept")
    assert repo.active_branch.name == "main" and [h.name for h in repo.heads] == ["main"]
    assert not repo.is_dirty(untracked_files=True)


def test_a_stopped_run_keeps_its_empty_branch_for_resume(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    handoff = hand_off(repo, ratchet.branch, ratchet.base, ratchet.original, drop_when_empty=False)
    assert handoff.branch == ratchet.branch == repo.active_branch.name and handoff.files == ()


def test_a_run_that_kept_edits_is_handed_off_with_its_files_and_the_commands_that_merge_it(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha", "beta"], NOW)
    ratchet.pre_edit("alpha")
    ratchet.write_skill("alpha", "# alpha\n\noriginal\nSTOP before merging.\nThen ask.\n")
    ratchet.keep("alpha", 1.5, "dim9")
    handoff = hand_off(repo, ratchet.branch, ratchet.base, ratchet.original, drop_when_empty=True)
    assert handoff.branch == ratchet.branch and handoff.base == "main" and handoff.original == ratchet.original
    assert [(f.path, f.added, f.removed) for f in handoff.files] == [("skills/alpha/SKILL.md", 2, 0)]
    assert handoff.merge == f"git switch main && git merge --no-ff {ratchet.branch}"
    assert f"gh pr create --base main --head {ratchet.branch}" in (handoff.pull_request or "")
    repo.git.checkout("main")  # the maintainer follows the hand-off's own command
    repo.git.merge("--no-ff", "-m", "merge", ratchet.branch, env=GIT_IDENTITY)
    assert delete_merged(repo, keep=None) == [ratchet.branch] and [h.name for h in repo.heads] == ["main"]


def test_only_merged_run_branches_are_deleted(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    unmerged = GitRatchet.start(ws, ["alpha"], NOW)
    unmerged.pre_edit("alpha")
    unmerged.write_skill("alpha", "# alpha\n\nkept on a branch nobody merged\n")
    unmerged.keep("alpha", 1.0, "dim3")
    repo.git.checkout("main")
    empty = GitRatchet.start(ws, ["alpha"], datetime(2026, 12, 3, 9, 0))  # made at main: merged by definition
    repo.git.checkout("main")
    repo.create_head("feature/mine")  # not Luban's: never touched
    assert delete_merged(repo, keep=None) == [empty.branch]
    assert sorted(h.name for h in repo.heads) == sorted(["main", "feature/mine", unmerged.branch])


def test_a_merged_branch_checked_out_in_another_worktree_is_left_alone(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    repo.git.checkout("main")
    repo.git.worktree("add", str(tmp_path / "elsewhere"), ratchet.branch)
    assert delete_merged(repo, keep=None) == [] and ratchet.branch in [h.name for h in git.Repo(repo.working_dir).heads]


def test_a_run_started_on_an_earlier_runs_branch_never_deletes_that_branch(tmp_path: Path):
    """The second run's branch is made from the first's, so the first is 'merged' into HEAD: it is where the run
    starts, not work merged anywhere. (Seen when the two runs began in different minutes: the first branch was gone.)"""
    repo, ws = make_repo(tmp_path)
    first = GitRatchet.start(ws, ["alpha"], NOW)
    first.pre_edit("alpha")
    first.write_skill("alpha", "# alpha\n\nkept by the first run\n")
    first.keep("alpha", 1.0, "dim3")
    second = GitRatchet.start(ws, ["alpha"], datetime(2026, 12, 3, 9, 1))  # on the first run's branch
    assert second.base == first.branch
    assert delete_merged(repo, keep=second.branch, base=second.base) == []
    assert {first.branch, second.branch} <= {h.name for h in repo.heads}

"""The git ratchet on real repositories: branches, pre-edit/keep/rollback/restore, and refusals."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import git
import pytest

from tests.conftest import write_skill
from tests.support.repos import GIT_IDENTITY, commit_all
from workspace.git_ratchet import GitRatchet
from workspace.git_repository import DirtySkillError, GitStateError, check_state, init_repository
from workspace.layout import Workspace, new_stamped_dir

NOW = datetime(2026, 12, 2, 15, 4)


def make_repo(tmp_path: Path, skills=("alpha", "beta")) -> tuple[git.Repo, Workspace]:
    root = tmp_path / "repo"
    for name in skills:
        write_skill(root / "skills", name, f"# {name}\n\noriginal\n", {"references/r.md": "r\n"})
    (root / "notes.txt").write_text("unrelated\n")
    repo = commit_all(root, "initial")
    return repo, Workspace.open(root / "skills", "full")


def test_start_creates_a_dated_branch_and_remembers_the_original(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    original = repo.head.commit.hexsha
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    assert ratchet.branch == "auto-optimize/20261202-1504"
    assert repo.active_branch.name == "auto-optimize/20261202-1504"
    assert ratchet.original == original


def test_runs_in_the_same_minute_get_suffixes_however_many(tmp_path: Path):
    """A scheduler may start runs back to back: every one gets a branch and a backup folder, none is told to wait."""
    repo, ws = make_repo(tmp_path)
    names, folders = [], []
    for _ in range(6):
        repo.git.checkout("main")
        names.append(GitRatchet.start(ws, ["alpha"], NOW).branch)
        folders.append(new_stamped_dir(ws.backups(), NOW).name)
    assert names == ["auto-optimize/20261202-1504"] + [f"auto-optimize/20261202-1504-{n}" for n in range(2, 7)]
    assert folders == ["20261202-1504"] + [f"20261202-1504-{n}" for n in range(2, 7)]


def test_pre_edit_keep_rollback_and_restore(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    skill = ws.skill_file("alpha")

    first = ratchet.pre_edit("alpha")
    assert repo.head.commit.message.strip() == "pre-edit: alpha"
    skill.write_text("# alpha\n\nimproved\n")
    kept = ratchet.keep("alpha", 2.5, "dim4")
    assert kept != first and repo.head.commit.message.strip() == "optimize: alpha +2.5 [dim4]"
    assert list(repo.head.commit.stats.files) == ["skills/alpha/SKILL.md"]

    ratchet.pre_edit("alpha")
    skill.write_text("# alpha\n\nworse\n")
    restored = ratchet.rollback("alpha")
    assert restored == repo.head.commit.hexsha
    assert skill.read_text() == "# alpha\n\nimproved\n"
    assert repo.git.status("--porcelain") == ""

    ratchet.restore_original("alpha")
    assert skill.read_text() == "# alpha\n\noriginal\n"
    assert repo.head.commit.message.strip() == "restore-original: alpha"


def test_rollback_touches_only_that_one_file(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    ratchet.pre_edit("alpha")
    ws.skill_file("alpha").write_text("bad edit\n")
    # the user edits other things meanwhile: another skill, a reference, a staged file
    ws.skill_file("beta").write_text("user's own beta change\n")
    (ws.skills_dir / "alpha" / "references" / "r.md").write_text("user's reference change\n")
    (Path(repo.working_tree_dir) / "notes.txt").write_text("staged by the user\n")
    repo.git.add("notes.txt")
    ratchet.rollback("alpha")
    assert ws.skill_file("alpha").read_text() == "# alpha\n\noriginal\n"
    assert ws.skill_file("beta").read_text() == "user's own beta change\n"
    assert (ws.skills_dir / "alpha" / "references" / "r.md").read_text() == "user's reference change\n"
    status = sorted(repo.git.status("--porcelain").splitlines())
    assert status == [" M skills/alpha/references/r.md", " M skills/beta/SKILL.md", "M  notes.txt"]


def test_commits_never_include_the_users_staged_files(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    (Path(repo.working_tree_dir) / "notes.txt").write_text("staged\n")
    repo.git.add("notes.txt")
    ws.skill_file("alpha").write_text("edited\n")
    ratchet.keep("alpha", 1.0, "dim7")
    assert list(repo.head.commit.stats.files) == ["skills/alpha/SKILL.md"]
    assert repo.git.status("--porcelain") == "M  notes.txt"


def test_dirty_skill_stops_the_run_with_the_files(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ws.skill_file("alpha").write_text("uncommitted\n")
    (ws.skills_dir / "alpha" / "new.md").write_text("untracked\n")
    with pytest.raises(DirtySkillError) as caught:
        GitRatchet.start(ws, ["alpha"], NOW)
    assert caught.value.files == ["skills/alpha/SKILL.md", "skills/alpha/new.md"]
    assert "stash push -- skills/alpha" in str(caught.value)
    assert repo.active_branch.name == "main"


@pytest.mark.parametrize("where", ["repo", "repo/skills", "repo/skills/alpha", ".", "elsewhere"])
def test_the_stash_hint_works_from_the_current_directory(tmp_path: Path, monkeypatch, where: str):
    """The old hint, `git stash push -- alpha`, failed from the repository's root (git reads the pathspec from cwd)."""
    import re
    import subprocess

    repo, ws = make_repo(tmp_path)
    ws.skill_file("alpha").write_text("uncommitted\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / where)
    with pytest.raises(DirtySkillError) as caught:
        GitRatchet.start(ws, ["alpha"], NOW)
    hint = re.search(r"\((git [^)]*)\)", str(caught.value))
    assert hint, str(caught.value)
    done = subprocess.run(hint.group(1), shell=True, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (hint.group(1), done.stderr)
    assert repo.git.status("--porcelain") == ""  # the skill's change is in the stash now


def test_temp_files_of_a_killed_run_do_not_count_as_dirty(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    (ws.skills_dir / "alpha" / ".SKILL.md.x1y2.luban.tmp").write_text("half-written\n")
    GitRatchet.start(ws, ["alpha"], NOW)
    assert repo.git.status("--porcelain") == ""


def test_unrelated_dirty_files_are_left_alone(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ws.skill_file("beta").write_text("user's beta work\n")
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    ratchet.pre_edit("alpha")
    ratchet.keep("alpha", 1.0, "dim1")
    assert ws.skill_file("beta").read_text() == "user's beta work\n"
    assert repo.git.status("--porcelain") == " M skills/beta/SKILL.md"
    assert all("beta" not in str(c.stats.files) for c in repo.iter_commits(f"main..{ratchet.branch}"))


def test_not_a_repository_offers_init_git_or_quick(tmp_path: Path):
    write_skill(tmp_path / "skills", "alpha", "x\n")
    ws = Workspace.open(tmp_path / "skills", "full")
    with pytest.raises(GitStateError) as caught:
        GitRatchet.start(ws, ["alpha"], NOW)
    assert "--init-git" in str(caught.value) and "--mode quick" in str(caught.value)


def test_a_repository_that_ignores_the_skills_is_not_used(tmp_path: Path):
    outer = git.Repo.init(tmp_path, initial_branch="main")
    (tmp_path / ".gitignore").write_text("scratch/\n")
    outer.git.add(".gitignore")
    outer.index.commit("ignore scratch")
    write_skill(tmp_path / "scratch" / "skills", "alpha", "x\n")
    ws = Workspace.open(tmp_path / "scratch" / "skills", "full")
    with pytest.raises(GitStateError, match="git-ignores it"):
        GitRatchet.start(ws, ["alpha"], NOW)
    init_repository(ws.skills_dir)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    assert Path(ratchet.repo.working_tree_dir) == ws.skills_dir
    assert outer.git.status("--porcelain") == ""  # the outer repository saw nothing


def test_init_git_commits_the_current_state(tmp_path: Path, monkeypatch):
    write_skill(tmp_path / "skills", "alpha", "x\n")
    # no identity anywhere (as in CI): Luban commits under its own name
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    head = init_repository(tmp_path / "skills")
    repo = git.Repo(tmp_path / "skills")
    assert repo.head.commit.hexsha == head
    assert repo.head.commit.author.name == "Luban"
    assert repo.git.status("--porcelain") == ""
    ratchet = GitRatchet.start(Workspace.open(tmp_path / "skills", "full"), ["alpha"], NOW)
    assert ratchet.pre_edit("alpha")


def test_detached_head_and_merge_in_progress_are_refused(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    repo.git.checkout(repo.head.commit.hexsha)
    with pytest.raises(GitStateError, match="detached"):
        GitRatchet.start(ws, ["alpha"], NOW)
    repo.git.checkout("main")
    (Path(repo.git_dir) / "MERGE_HEAD").write_text(repo.head.commit.hexsha + "\n")
    with pytest.raises(GitStateError, match="merge is in progress"):
        GitRatchet.start(ws, ["alpha"], NOW)


def test_committed_text_reads_from_git(tmp_path: Path):
    _repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    ws.skill_file("alpha").write_text("new\n")
    assert ratchet.committed_text("alpha") == b"# alpha\n\noriginal\n"


def _interrupted_merge(repo: git.Repo, branch: str) -> str:
    """A merge of ``branch`` begun and not committed: what a batch killed while gathering a skill's worktree leaves."""
    repo.git.merge("--no-ff", "--no-commit", branch, env=GIT_IDENTITY)
    assert (Path(repo.git_dir) / "MERGE_HEAD").exists()
    return repo.heads[branch].commit.hexsha


def test_resume_undoes_its_own_interrupted_merge_and_refuses_anyone_elses(tmp_path: Path):
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha", "beta"], NOW)
    repo.git.checkout("-b", f"{ratchet.branch}--alpha")
    (ws.skill_file("alpha")).write_text("# alpha\n\nkept in its worktree\n")
    repo.git.commit("-am", "keep: alpha", env=GIT_IDENTITY)
    repo.git.checkout(ratchet.branch)
    head = repo.head.commit.hexsha
    _interrupted_merge(repo, f"{ratchet.branch}--alpha")
    with pytest.raises(GitStateError, match="merge is in progress"):
        check_state(repo)  # a run that is not resuming leaves it to the user
    check_state(repo, resuming=True)
    GitRatchet.resume(ws, ["alpha", "beta"], ratchet.original)
    assert not (Path(repo.git_dir) / "MERGE_HEAD").exists() and repo.head.commit.hexsha == head
    assert f"{ratchet.branch}--alpha" in repo.heads  # still there, for the resume's gather to merge whole
    assert ws.skill_file("alpha").read_text() == "# alpha\n\noriginal\n"

    repo.git.checkout("-b", "feature")
    (ws.skill_file("beta")).write_text("# beta\n\nthe user's\n")
    repo.git.commit("-am", "the user's change", env=GIT_IDENTITY)
    repo.git.checkout(ratchet.branch)
    _interrupted_merge(repo, "feature")
    with pytest.raises(GitStateError, match="merge is in progress"):
        GitRatchet.resume(ws, ["alpha", "beta"], ratchet.original)  # a merge the user began is the user's


def test_an_edit_of_a_referenced_file_is_kept_rolled_back_undone_and_resumed_by_that_file(tmp_path: Path):
    """One file an edit: a reference's keep commits it alone, its rollback checks it alone out, held-out Step B's undo
    of that keep puts it back, and a resume after a kill mid-edit rolls the reference back."""
    repo, ws = make_repo(tmp_path)
    ratchet = GitRatchet.start(ws, ["alpha"], NOW)
    reference = ws.skills_dir / "alpha" / "references" / "r.md"
    ratchet.pre_edit("alpha", "references/r.md")
    ratchet.write_skill("alpha", "r\nbetter\n", "references/r.md")
    kept = ratchet.keep("alpha", 1.5, "dim6", {"file": "references/r.md"}, "references/r.md")
    assert list(repo.commit(kept).stats.files) == ["skills/alpha/references/r.md"]
    assert ratchet.committed_text("alpha", file="references/r.md") == b"r\nbetter\n"
    assert ratchet.kept_text("alpha", "references/r.md") == (b"r\nbetter\n", kept[:12])

    ratchet.pre_edit("alpha", "references/r.md")
    ratchet.write_skill("alpha", "r\nworse\n", "references/r.md")
    ws.skill_file("alpha").write_text("# alpha\n\nthe user's own change\n")  # not the edit's file: left alone
    ratchet.rollback("alpha", "references/r.md")
    assert reference.read_text() == "r\nbetter\n" and "the user's own change" in ws.skill_file("alpha").read_text()
    ws.skill_file("alpha").write_text("# alpha\n\noriginal\n")

    ratchet.rollback_to_previous_keep("alpha")
    assert reference.read_text() == "r\n" and ws.skill_file("alpha").read_text() == "# alpha\n\noriginal\n"
    assert repo.head.commit.message.startswith("held-out-rollback: alpha") and repo.git.status("--porcelain") == ""

    ratchet.write_skill("alpha", "r\nhalf-decided\n", "references/r.md")  # killed before the decision
    _resumed, undone = GitRatchet.resume(ws, ["alpha"], ratchet.original)
    assert undone == ["alpha"] and reference.read_text() == "r\n" and repo.git.status("--porcelain") == ""

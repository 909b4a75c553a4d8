"""--resume and the run's hold on its repository: what a stopped run left, found and put right before work starts.

A run may stop at any instant (a kill, a lost machine). What it leaves is
always one of a few states, and each is settled here from the records alone:
no branch yet (start afresh), a branch and its manifest (continue on it), a
keep committed without its row (complete the row), skills' worktrees of a
side-by-side batch (merge what they kept).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from flows.phases.preflight import Refused
from flows.ratchet.rebuild import rebuild_inserted
from flows.scale.child import wait_for_children
from flows.scale.worktrees import gather
from flows.state.run import Run, RunOptions
from workspace import pending_keep
from workspace.file_ratchet import FileRatchet
from workspace.git_ratchet import GitRatchet
from workspace.git_repository import BRANCH_PREFIX, GitStateError, init_repository, open_repository
from workspace.layout import Workspace
from workspace.lock import WorkspaceLock, queue_for, repository_lock
from workspace.manifest import ManifestWriter


def hold_repository(options: RunOptions, workspace: Workspace) -> WorkspaceLock:
    """The repository's run lock, taken (or queued for) before the run makes its branch. A run that queued
    starts from the branch it was asked on, not from the branch the run before it left checked out."""
    try:
        repo = open_repository(workspace.skills_dir)
    except GitStateError:
        if not options.init_git:
            raise
        init_repository(workspace.skills_dir)
        repo = open_repository(workspace.skills_dir)
    lock = queue_for(repository_lock(Path(repo.common_dir), Path(str(repo.working_tree_dir)), options.start_branch),
                     options.lock_wait)
    current = None if repo.head.is_detached else repo.active_branch.name
    if options.start_branch and not options.resume and current != options.start_branch and str(current).startswith(BRANCH_PREFIX):
        repo.git.checkout(options.start_branch)  # the run that held the lock left its own branch checked out
    return lock


def resumable(workspace: Workspace) -> bool:
    """Whether --resume has a run to continue: a kill before the run recorded anything leaves nothing to resume,
    and the run then starts afresh (the same run an uninterrupted start would have made)."""
    if workspace.mode == "quick":
        return workspace.backups().exists() and any(p.is_dir() for p in workspace.backups().iterdir())
    repo = open_repository(workspace.skills_dir)
    return repo.active_branch.name.startswith(BRANCH_PREFIX) or bool(recorded_branches(workspace, repo))


def recorded_branches(workspace: Workspace, repo) -> list[str]:
    """Run branches the workspace recorded that exist (a run killed before it switched never made its branch)."""
    manifests = workspace.backups().glob("*/version_manifest.json") if workspace.backups().exists() else ()
    existing = {h.name for h in repo.heads}
    return sorted({b for m in manifests if (b := ManifestWriter.reopen(m).manifest.branch) is not None and b in existing})


def resume_ratchet(workspace: Workspace, skills: list[str]):
    if workspace.mode == "quick":
        files, undone = FileRatchet.resume(workspace, skills)
        return files, files.snapshot_dir, None, undone
    manifests = sorted(workspace.backups().glob("*/version_manifest.json")) if workspace.backups().exists() else []
    repo = open_repository(workspace.skills_dir)
    branch = repo.active_branch.name
    match = [m for m in manifests if ManifestWriter.reopen(m).manifest.branch == branch]
    if not match:
        runs = recorded_branches(workspace, repo)
        raise Refused(f"--resume: no recorded run on branch '{branch}' in {workspace.backups()}; "
                         + (f"switch to the run's branch first (git switch {runs[-1]})" if runs else "start without --resume"))
    writer = ManifestWriter.reopen(match[-1])
    ratchet, undone = GitRatchet.resume(workspace, skills, writer.manifest.original or "HEAD", writer.manifest.base)
    return ratchet, match[-1].parent, writer, undone


def settle_interrupted_keeps(run: Run, skills: list[str]) -> None:
    """A keep a kill split from its row gets its row (or is dropped, when the keep never happened); the blocks kept
    edits inserted are read back from git, so the boilerplate rule sees the whole run."""
    ratchet = run.editor
    if ratchet.git is not None:  # a batch that fanned out to workers: its children may still be going

        for name in wait_for_children(ratchet.git.branch):
            run.effects.notice(f"{name}: its child flow run was still going when the batch resumed; waited for it")
    for skill in gather(run):  # a batch killed while skills ran side by side: their kept edits join the branch
        run.effects.notice(f"{skill}: its rounds ran in a worktree when the run stopped; merged what it had kept")
    for skill in skills:
        buffer = run.state(skill).buffer
        rejected = {e.sha256 for e in buffer.entries} if buffer is not None else set()
        row = pending_keep.settle(run.workspace.results_tsv(skill), partial(ratchet.kept_text, skill), rejected)
        if row is not None:
            run.effects.notice(f"{skill}: round {row.round}'s {row.status} had taken effect but its row was not written "
                               "when the run stopped; the row is completed from the record saved before it")
    git = ratchet.git
    if git is not None:
        rebuild_inserted(run, git)

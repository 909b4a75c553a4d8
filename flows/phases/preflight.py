"""Everything a run can be refused for, checked before any Prefect server or flow starts.

A refusal is one message that names the problem and a fix that works from the
current directory; nothing is created on disk (no workspace, no lock file, no
branch). The flow checks the same options again (a deployment run skips the
CLI), so the rules live here once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from flows.interaction.approvals import Approval
from judges.server import probe, refusal
from judges.settings import SettingsError, resolve
from scoring.document import parse
from scoring.governance.mode_router import route
from scoring.validation import scan_references
from workspace.layout import default_root
from workspace.lock import holder, repository_lock
from workspace.results_tsv import ResultsFile
from workspace.skill_source import list_files, read_skill, source_text

MODES = ("quick", "full", "auto")
APPROVALS: tuple[Approval, ...] = get_args(Approval)


class Refused(ValueError):
    """The run cannot start; the message says why and what to do."""


@dataclass(frozen=True)
class Scope:
    """What a run may start on: the skills directory and the skills in it."""

    skills_dir: Path
    skills: tuple[str, ...]


def check_options(mode: str, approval: str, budget: float, llm: dict[str, Any] | None, parallel: int = 1) -> None:
    if mode not in MODES:
        raise Refused(f"--mode must be quick, full or auto, not {mode!r}")
    if approval not in APPROVALS:
        raise Refused(f"--approval must be ui, auto or cli, not {approval!r}")
    if not 0 < budget <= 0.10:
        raise Refused(f"--budget must be in (0, 0.10], got {budget}")
    if parallel < 1:
        raise Refused(f"--parallel must be at least 1, got {parallel}")
    if parallel > 1 and approval != "auto":
        raise Refused(f"--parallel {parallel} runs skills side by side, and their checkpoints cannot all ask at once: "
                      "use --approval auto, or --parallel 1")
    if llm and "api_key" in llm:
        raise Refused("never pass the API key as a parameter (it would be stored with the run); set OPENAI_API_KEY")


def check_fan_out(fan_out_to: str | None, approval: str, mode: str) -> None:
    """--fan-out-to needs what its child flow runs need: nobody asked mid-round, a worktree per skill, and a Prefect
    server whose workers take the runs (an embedded server has no workers)."""
    if not fan_out_to:
        return
    if "/" not in fan_out_to:
        raise Refused(f"--fan-out-to takes a deployment as FLOW/DEPLOYMENT (e.g. optimize-skill/workers-rounds), "
                      f"not {fan_out_to!r}; 'prefect deployment ls' lists them")
    if approval != "auto":
        raise Refused("--fan-out-to runs the skills' rounds in child flow runs, which nobody answers mid-round: "
                      "use --approval auto")
    if mode == "quick":
        raise Refused("--fan-out-to needs full mode (each skill's rounds run in a git worktree of their own): "
                      "use --mode full, or --parallel N for quick mode on this machine")
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():
        raise Refused("--fan-out-to needs a Prefect server with workers on the deployment's pool: set PREFECT_API_URL "
                      "(docs/scale-out.md); on one machine, use --parallel N instead")


def find_skills(skills_dir: str, named: tuple[str, ...] | list[str]) -> Scope:
    """The skills to run on, or a refusal: no such directory, no skill in it, or a named skill missing."""
    path = Path(skills_dir)
    if not path.is_dir():
        what = "is a file, not a directory" if path.exists() else "does not exist"
        raise Refused(f"--skills-dir {skills_dir} {what}; give the folder that holds <name>/SKILL.md")
    available = sorted(p.parent.name for p in path.glob("*/SKILL.md"))
    if not available:
        raise Refused(f"--skills-dir {skills_dir} holds no skill: a skill is a folder with a SKILL.md in it "
                      f"(e.g. {Path(skills_dir) / 'my-skill' / 'SKILL.md'}); nothing to do")
    missing = [s for s in named if s not in available]
    if missing:
        raise Refused(f"no SKILL.md for {', '.join(missing)} under {skills_dir}; available: {', '.join(available)}")
    return Scope(path.resolve(), tuple(named) or tuple(available))


def check_git(scope: Scope, init_git: bool, resume: bool) -> None:
    """Full mode versions skills in git: refuse a missing repository (unless --init-git), an odd state, dirty skills."""
    from workspace.git_repository import GitStateError, check_state, open_repository, refuse_dirty

    try:
        repo = open_repository(scope.skills_dir)
    except GitStateError as err:
        if init_git:
            return
        raise Refused(str(err)) from None
    try:
        check_state(repo, resuming=resume)
    except GitStateError as err:
        raise Refused(str(err)) from None
    if resume:
        return  # the resumed run's own uncommitted edit is rolled back by the resume, not refused
    for skill in scope.skills:
        try:
            refuse_dirty(repo, skill, scope.skills_dir / skill)
        except GitStateError as err:
            raise Refused(str(err)) from None


def check_server(llm: dict[str, Any] | None, skills_dir: Path) -> None:
    """The model server can serve the run: it answers, takes the key and serves every configured model
    (``judges.server``: two GETs, seconds at most). Offline there is nothing to check."""
    try:
        settings = resolve(llm, os.environ, skills_dir / "luban.toml")
    except SettingsError as err:
        raise Refused(str(err)) from None
    if settings.backend == "offline":
        return
    problem = refusal(settings, probe(settings))
    if problem:
        raise Refused(problem)


def check_lock(lock_path: Path) -> None:
    who = holder(lock_path)
    if who:
        raise Refused(f"{lock_path.parent} is in use by another Luban run ({who}); wait for it to finish "
                      "(or queue behind it: --wait-for-lock SECONDS), or use another --workspace")


def check_repository_lock(skills_dir: Path) -> None:
    """A full-mode run holds its git repository, whatever its workspace (workspace.lock.repository_lock)."""
    from workspace.git_repository import GitStateError, open_repository

    try:
        repo = open_repository(skills_dir)
    except GitStateError:
        return  # --init-git: no repository yet, so no run can hold it
    who = holder(repository_lock(Path(repo.common_dir), Path(str(repo.working_tree_dir))).path)
    if who:
        raise Refused(f"the git repository {repo.working_tree_dir} is in use by another Luban run ({who}); wait for it "
                      "to finish, or queue behind it: --wait-for-lock SECONDS")


def lock_path(skills_dir: Path, workspace: str | None) -> Path:
    return (Path(workspace).resolve() if workspace else default_root(skills_dir)) / "luban.lock"


def routed(scope: Scope, records: int, workspace_root: Path | None = None, domain_factor: float = 1.0):
    """The mode router's reading of the batch: the skill that most needs full mode decides (RUBRIC's M). Each skill
    is read with the files it references and its reverts in either mode's records (under ``workspace_root``);
    ``domain_factor``: the correction a person's repeated overrides earned (``record_override``)."""
    routes = []
    for skill in scope.skills:
        # Read as `luban score` reads (a FIFO opened plainly would hang the run here, a link out would be followed);
        # a skill that cannot be read is left to Phase 0, which names it and goes on without it.
        text, _ = source_text(read_skill(scope.skills_dir / skill / "SKILL.md"))
        if text is not None:
            refs = scan_references(parse(text), list_files(scope.skills_dir / skill))
            referenced = len({r.target for r in refs if r.status == "exists"})
            routes.append(route(text, text.count("\n") + 1, referenced, _reverts(workspace_root, skill), records,
                                domain_factor=domain_factor))
    return max(routes or [route("", 1, 0, 0, records)], key=lambda r: r.m)


def _reverts(workspace_root: Path | None, skill: str) -> int:
    if workspace_root is None:
        return 0
    return sum(row.status == "revert" for path in sorted(workspace_root.glob(f"*/{skill}/results.tsv"))
               for row in ResultsFile(path).rows())


def recorded_rows(workspace_root: Path) -> int:
    return sum(len(ResultsFile(p).rows()) for p in workspace_root.glob("*/*/results.tsv"))


def preflight(skills_dir: str, skills: list[str] | tuple[str, ...], mode: str, approval: str, budget: float,
              workspace: str | None, init_git: bool, resume: bool, llm: dict[str, Any] | None,
              evaluate_only: bool = False, lock_wait: int = 0, parallel: int = 1, fan_out_to: str | None = None) -> Scope:
    """Every check a run can fail before it starts, in the order a person would fix them."""
    check_options(mode, approval, budget, llm, parallel)
    check_fan_out(fan_out_to, approval, mode)
    scope = find_skills(skills_dir, tuple(skills))
    check_server(llm, scope.skills_dir)
    lock = lock_path(scope.skills_dir, workspace)
    if mode == "auto" and not evaluate_only:  # full when the router will not ask a person: check git now, not after
        decision = routed(scope, recorded_rows(lock.parent), lock.parent)
        mode = "full" if decision.mode == "full" and not decision.pause else mode
    if mode == "full" and not evaluate_only:  # a queued run's skills are checked when its turn comes: the run
        check_git(scope, init_git, resume or bool(lock_wait))  # before it may have an edit in the checkout now
    if not lock_wait:  # a run told to queue waits for the locks instead
        check_lock(lock)
        if mode == "full" and not evaluate_only:
            check_repository_lock(scope.skills_dir)
    return scope

"""Kill a real `luban optimize` at a named step of the ratchet, then check what a crash may leave behind.

The child runs the CLI with a hook (step_hook.py) that SIGKILLs its own process
the n-th time a named function is entered or returns (optionally only when one
of its arguments names a given file), so the kill lands exactly at the step
under test: no test-only code inside Luban.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git

from tests.conftest import REPO_ROOT
from workspace.atomic import TEMP_SUFFIX
from workspace.results_tsv import ResultsFile

# The child's first line: stops it at a named step (tests/reliability/step_hook.py says how, and why not a profiler).
STEP_HOOK = "import tests.reliability.step_hook\n"
RUN_CLI = "\nimport sys\nsys.argv = ['luban', *sys.argv[1:]]\nfrom flows.cli import app\napp()\n"

# step → (qualified function name, event, n-th occurrence, a substring one argument must contain)
STEPS = {
    "after-pre-edit-commit": ("GitRatchet.pre_edit", "return", 1, ""),
    "mid-edit": ("FileOps.replace", "call", 1, "SKILL.md"),  # the temp file is written, not yet renamed
    "after-edit-before-rescore": ("GitRatchet.write_skill", "return", 1, ""),
    "mid-results-row": ("FileOps.replace", "call", 2, "results.tsv"),
    "after-keep": ("GitRatchet.keep", "return", 1, ""),
    "mid-rollback": ("GitRatchet.rollback", "call", 1, ""),
    "mid-meta-review": ("meta_review", "return", 1, ""),  # lessons drawn, not yet written
}


def optimize_args(skills: Path, *extra: str) -> list[str]:
    return ["optimize", "--skills-dir", str(skills), "--mode", "full", "--approval", "auto", "--max-rounds", "3", *extra]


# `prefect server start` for the modules whose runs are killed against it: its repossessor frees a lapsed lease every
# 5 s here (15 s by default): the suite's load can delay a service's loop, and what is tested is Luban's wait, not the
# server's schedule (flows/server/lock.py waits a lease's length and 20 s more for it)
SERVER_WITH_REPOSSESSOR = {"PREFECT_SERVER_SERVICES_REPOSSESSOR_LOOP_SECONDS": "5"}

def child_env(env: dict[str, str], keep_openai: bool = False, **extra: str) -> dict[str, str]:
    """The child's environment: offline (no OPENAI_*) unless ``keep_openai``, plus ``extra``."""
    return {**{k: v for k, v in env.items() if keep_openai or not k.startswith("OPENAI_")}, **extra}


def start_child(args: list[str], env: dict[str, str], prelude: str = "", **popen) -> subprocess.Popen:
    """`luban ARGS` in a child process, ``prelude`` (a hook) run before Luban is imported."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-c", prelude + RUN_CLI, *args], env=env, cwd=REPO_ROOT, text=True, **popen)


def run_child(args: list[str], env: dict[str, str], kill_at: str | None = None, timeout: float = 240,
              keep_openai: bool = False, prelude: str = "") -> subprocess.CompletedProcess:
    """`luban ARGS` to the end (offline unless ``keep_openai``), optionally killed at a step."""
    extra = {"LUBAN_KILL_AT": kill_at} if kill_at else {}
    child = start_child(args, child_env(env, keep_openai, **extra), (STEP_HOOK if kill_at else "") + prelude)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        raise
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def known_versions(skills: Path, workspace: Path, skill: str) -> set[bytes]:
    """Every version of the skill that was committed (any branch) or saved under the workspace."""
    repo = git.Repo(skills)
    path = f"{skill}/SKILL.md"
    versions = {(repo.commit(sha).tree / path).data_stream.read()  # git show would strip the last newline
                for sha in repo.git.log("--all", "--format=%H", "--", path).split() if _has(repo.commit(sha), path)}
    versions |= {p.read_bytes() for p in workspace.rglob("*.md") if p.is_file()}
    versions |= {p.read_bytes() for p in workspace.rglob("SKILL.md.bak")}
    return versions


def _has(commit, path: str) -> bool:
    try:
        commit.tree / path
    except KeyError:
        return False
    return True


def assert_consistent_after_a_crash(skills: Path, workspace: Path) -> None:
    """What any kill may leave: known SKILL.md versions, only SKILL.md changes or Luban temps, parseable records."""
    repo = git.Repo(skills)
    for skill_file in skills.glob("*/SKILL.md"):
        skill = skill_file.parent.name
        assert skill_file.read_bytes() in known_versions(skills, workspace, skill), f"{skill}: a version saved nowhere"
    for line in repo.git.status("--porcelain", "--untracked-files=all").splitlines():
        path = line[3:]
        assert path.endswith("/SKILL.md") or path.endswith(TEMP_SUFFIX), f"unexpected in git status: {line}"
    for tsv in workspace.rglob("results.tsv"):
        results = ResultsFile(tsv)
        assert results.ensure() is None, f"{tsv} needed a repair after the kill"
        rows = results.rows()
        assert all(r.status in ("baseline", "keep", "revert", "skip", "error") for r in rows)

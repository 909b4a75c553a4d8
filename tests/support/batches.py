"""The batch the reliability and scale-out tests share: examples and generated skills in a fresh repository, what
must come out identical, and the unbroken (serial) run's outcome, computed once per session."""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
import time
from pathlib import Path
from typing import Any

import git

from tests.reliability.crash import optimize_args, run_child
from tests.support.generated_skills import write_generated
from tests.support.repos import commit_all, copy_examples
from workspace import rejected_edits
from workspace.results_tsv import ResultsFile

EXAMPLES = ("pr-review", "weekly-report-zh", "db-migration", "api-changelog")
FULL, HALF = 4, 2  # examples and generated skills each: the reliability tests' batch, and the scale-out docs' one


def make_batch(root: Path, size: int = FULL) -> tuple[Path, Path]:
    """``size`` examples and as many generated skills in a fresh repository; the workspace beside it."""
    generated = write_generated(root / "generated-source", count=size, seed=5) / "generated"
    return examples_repository(root, EXAMPLES[:size], tuple(sorted(generated.iterdir())))


def examples_repository(root: Path, examples: tuple[str, ...], more: tuple[Path, ...] = ()) -> tuple[Path, Path]:
    """Shipped examples (and the skill folders ``more``) committed in a fresh repository; the workspace beside it."""
    skills = copy_examples(root / "skills", *examples)
    for folder in more:
        shutil.copytree(folder, skills / folder.name)
    commit_all(skills)
    return skills, root / "luban-workspace"


def outcome(skills: Path, workspace: Path, mode: str = "full") -> dict[str, Any]:
    """What must be identical: every skill's text, the branch's tree and checkout status, every row, every rejected
    edit (quick mode commits nothing: its tree and status are the ones the batch started with)."""
    repo = git.Repo(skills)
    rows, rejected = {}, {}
    for state in sorted((workspace / mode).iterdir()):
        if (state / "results.tsv").exists():
            rows[state.name] = [{k: v for k, v in vars(r).items() if k not in ("timestamp", "commit")}
                                for r in ResultsFile(state / "results.tsv").rows()]
            buffer = rejected_edits.load(state / "rejected_edits.md", state.name, "")
            rejected[state.name] = [(e.sha256, e.status, e.reason) for e in buffer.entries]
    return {"texts": {p.parent.name: p.read_bytes() for p in sorted(skills.glob("*/SKILL.md"))},
            "tree": repo.head.commit.tree.hexsha, "status": repo.git.status("--porcelain"), "rows": rows,
            "rejected": rejected, "pending": sorted(p.name for p in workspace.rglob("pending-keep.json"))}


def explain(expected: dict[str, Any], got: dict[str, Any]) -> str:
    lines = [f"{key} differs" for key in ("texts", "tree", "status", "rejected", "pending") if expected[key] != got[key]]
    for skill in sorted(set(expected["rows"]) | set(got["rows"])):
        a, b = expected["rows"].get(skill, []), got["rows"].get(skill, [])
        if a != b:
            lines.append(f"{skill}: {[(r['round'], r['status']) for r in a]} unbroken, {[(r['round'], r['status']) for r in b]} resumed")
    return "; ".join(lines)


def serial_reference(tmp_path_factory, env: dict[str, str], size: int = FULL) -> tuple[dict[str, Any], float]:
    """The unbroken batch's outcome and how long it took, run once per test session (and size): pytest-xdist's
    workers share the parent of their temporary directories and take turns at a lock there, the first one running
    the batch."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    shared = tmp_path_factory.getbasetemp().parent if run_id else tmp_path_factory.getbasetemp()
    store = shared / f"unbroken-batch-{size}-{run_id or 'alone'}.pickle"
    with open(shared / f"unbroken-batch-{size}-{run_id or 'alone'}.lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        if store.exists():
            return pickle.loads(store.read_bytes())
        skills, workspace = make_batch(tmp_path_factory.mktemp("unbroken"), size)
        started = time.monotonic()
        result = run_child(optimize_args(skills, "--workspace", str(workspace)), env)
        assert result.returncode == 0, result.stderr[-3000:]
        reference = outcome(skills, workspace)
        assert any(r["status"] == "keep" for rows in reference["rows"].values() for r in rows), "the batch must keep edits"
        store.write_bytes(pickle.dumps((reference, time.monotonic() - started)))
        return reference, time.monotonic() - started


def postgres_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return installed[-1].parent if installed else None

"""A skill's state rebuilt from its records — results.tsv and the run's commits — by one path, whoever needs it: a
fresh start (no records: nothing to rebuild), a resume, a suspended run executed again, and a fan-out child."""

from __future__ import annotations

from collections.abc import Callable

from flows.ratchet import measure
from flows.state.products import Progress, SkillState
from flows.state.run import Run
from scoring.boilerplate import inserted_units
from scoring.edits import Edit
from scoring.notes import parse_note
from workspace.git_ratchet import CommitKind, GitRatchet, LubanCommit
from workspace.results_tsv import Status, Stop


def recorded_progress(run: Run, skill: str) -> Progress | None:
    """(baseline total, last recorded round, why it stopped or None) for the skill's last run.

    The stop is the row's ``stop`` column; rows written before it existed kept it in the note as ``stop=…``."""
    rows = run.results(skill).rows()
    starts = [i for i, r in enumerate(rows) if r.status == Status.BASELINE]
    if not starts or rows[starts[-1]].new_score is None:
        return None
    this = rows[starts[-1]:]
    stops = [r.stop or parse_note(r.note)[0].get("stop", "") for r in this]
    stop = next((Stop(s) for s in reversed(stops) if s in {x.value for x in Stop} and s != Stop.BUDGET), None)
    baseline = rows[starts[-1]].new_score
    assert baseline is not None  # checked above
    return baseline, max(r.round for r in this), stop


def rebuild_skill(run: Run, skill: str, progress: Progress) -> SkillState:
    """The skill as its records left it: its kept text measured afresh as the incumbent and its baseline card (the
    same keys as the batch's baseline: offline, the same samples; online, Prefect's cache answers where result
    storage is shared), and the progress its rounds had made."""
    text = run.workspace.skill_file(skill).read_text(encoding="utf-8")
    card = measure.baseline(run, skill, text)
    return SkillState(skill, baseline=card, best=card, resumed=progress)


def rebuild_inserted(run: Run, git: GitRatchet) -> None:
    """The lines the run's kept edits inserted, read back from its commits, so the boilerplate rule sees the whole run."""
    run.inserted.replace_all(inserted_blocks(git.history(), lambda c: git.committed_text(c.skill, f"{c.sha}^").decode("utf-8")))


def kept_edits(history: list[LubanCommit], skill: str) -> list[Edit | None]:
    """The edits of ``skill`` that are kept now, oldest first, read from the run's commits (None: a rewrite)."""
    kept: list[Edit | None] = []
    for commit in (c for c in history if c.skill == skill):
        if commit.kind is CommitKind.OPTIMIZE:
            kept.append(Edit(**commit.edit) if commit.edit else None)
        elif commit.kind is CommitKind.HELD_OUT_ROLLBACK and kept:
            kept.pop()
        elif commit.kind is CommitKind.RESTORE_ORIGINAL:
            kept.clear()
    return kept


def inserted_blocks(history: list[LubanCommit], text_before: Callable[[LubanCommit], str]) -> dict[str, str]:
    """Each line a kept edit inserted (normalized) → the first skill it went into, as the run built it keep by keep."""
    units: dict[str, str] = {}
    for commit in history:
        if commit.kind is CommitKind.OPTIMIZE and commit.edit:
            for unit in inserted_units(text_before(commit), Edit(**commit.edit), commit.skill):
                units.setdefault(unit, commit.skill)
    return units

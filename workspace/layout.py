"""Where Luban keeps its state, kept apart by mode so quick and full runs never mix.

    <skills>/<name>/SKILL.md                    the only files Luban edits
    <workspace>/<mode>/<skill>/results.tsv      per-skill records of one mode
    <workspace>/<mode>/<skill>/test-prompts.json
    <workspace>/<mode>/<skill>/rejected_edits.md
    <workspace>/<mode>/backups/YYYYMMDD-HHMM/   snapshots (quick) and per-round copies
    <workspace>/<mode>/backups-archive/<skill>/ rotated-out backups
    <workspace>/meta_learnings.md               global
    <workspace>/luban-profile.json              global

The workspace defaults to ``<skills>/../luban-workspace``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from scoring.rubric import Mode

MODES: tuple[Mode, ...] = tuple(Mode)
_SKILL_NAME = re.compile(r"^[^/\\\0]+$")


class CrossModeError(ValueError):
    """A run asked for the other mode's records (the design's cross-mode isolation)."""


@dataclass(frozen=True)
class Workspace:
    skills_dir: Path
    root: Path
    mode: Mode

    @classmethod
    def open(cls, skills_dir: Path, mode: Mode, root: Path | None = None) -> Workspace:
        if mode not in MODES:
            raise ValueError(f"mode must be 'quick' or 'full', not {mode!r}")
        skills = skills_dir.resolve()
        return cls(skills, (root or skills.parent / "luban-workspace").resolve(), Mode(mode))

    def _check_mode(self, mode: Mode | None) -> Mode:
        if mode is not None and mode != self.mode:
            raise CrossModeError(
                f"this is a {self.mode}-mode run and was asked for {mode}-mode records; quick and full "
                f"data are kept apart on purpose. Run with --mode {mode} to work with those records."
            )
        return self.mode

    @property
    def mode_dir(self) -> Path:
        return self.root / self.mode

    def skill_file(self, skill: str) -> Path:
        return self.skills_dir / _checked(skill) / "SKILL.md"

    def skill_state(self, skill: str, mode: Mode | None = None) -> Path:
        return self.root / self._check_mode(mode) / _checked(skill)

    def results_tsv(self, skill: str, mode: Mode | None = None) -> Path:
        return self.skill_state(skill, mode) / "results.tsv"

    def routing_tsv(self, skill: str) -> Path:
        """A skill's routing rounds (``luban route --optimize``): results.tsv's format, a file of their own. Routing
        works on git, so its records are full mode's folder's in a workspace of either mode (reading them crosses
        no mode's rubric records)."""
        return self.root / Mode.FULL / _checked(skill) / "routing.tsv"

    def test_prompts(self, skill: str, mode: Mode | None = None) -> Path:
        return self.skill_state(skill, mode) / "test-prompts.json"

    def void_replies(self, skill: str, mode: Mode | None = None) -> Path:
        return self.skill_state(skill, mode) / "void-replies.jsonl"

    def rejected_edits(self, skill: str, mode: Mode | None = None) -> Path:
        return self.skill_state(skill, mode) / "rejected_edits.md"

    def backups(self, mode: Mode | None = None) -> Path:
        return self.root / self._check_mode(mode) / "backups"

    def backups_archive(self, skill: str, mode: Mode | None = None) -> Path:
        return self.backups_archive_root(mode) / _checked(skill)

    def backups_archive_root(self, mode: Mode | None = None) -> Path:
        return self.root / self._check_mode(mode) / "backups-archive"

    @property
    def meta_learnings(self) -> Path:
        return self.root / "meta_learnings.md"

    @property
    def profile(self) -> Path:
        return self.root / "luban-profile.json"

    @property
    def lock_file(self) -> Path:
        return self.root / "luban.lock"

    def skill_names(self) -> list[str]:
        """Every skill directory under the skills directory that holds a SKILL.md."""
        if not self.skills_dir.is_dir():
            return []
        return sorted(p.parent.name for p in self.skills_dir.glob("*/SKILL.md"))


def _checked(skill: str) -> str:
    if not _SKILL_NAME.match(skill) or skill in (".", ".."):
        raise ValueError(f"{skill!r} is not a skill directory name")
    return skill


def stamped_names(stamp: str) -> Iterator[str]:
    """``stamp``, then ``stamp-2``, ``stamp-3`` …: a name for every run started in the same minute, however many."""
    yield stamp
    yield from (f"{stamp}-{n}" for n in itertools.count(2))


def new_stamped_dir(parent: Path, now: datetime) -> Path:
    """Create ``parent/YYYYMMDD-HHMM``, or the first free ``-N`` after every one of that minute still there (mkdir
    decides: no race). Never a name below one that exists: a folder pruned a moment ago must not come back as the
    oldest-looking name for the newest run."""
    stamp = now.strftime("%Y%m%d-%H%M")
    parent.mkdir(parents=True, exist_ok=True)
    taken = [p.name[len(stamp):] for p in parent.glob(f"{stamp}*")]
    highest = max((int(t[1:]) if t[1:].isdigit() else 1 for t in taken if t == "" or t[1:].isdigit()), default=0)
    for number, name in enumerate(stamped_names(stamp), start=1):
        if number <= highest:
            continue
        try:
            (parent / name).mkdir()
            return parent / name
        except FileExistsError:
            continue
    raise AssertionError("unreachable: stamped_names never ends")


def default_root(skills_dir: Path) -> Path:
    return skills_dir.resolve().parent / "luban-workspace"


def find_workspace(skills_dir: Path) -> Path | None:
    """The workspace a run on ``skills_dir`` wrote (``<skills>/../luban-workspace``), or None.

    When ``skills_dir`` is the current directory and holds no skill, it is more likely the folder *above* the
    skills (``luban optimize --skills-dir skills`` run from there): its ``./luban-workspace`` is taken too."""
    candidates = [default_root(skills_dir)]
    if skills_dir.resolve() == Path.cwd().resolve() and not any(skills_dir.glob("*/SKILL.md")):
        candidates.append(skills_dir.resolve() / "luban-workspace")
    return next((c for c in candidates if c.is_dir()), None)


def newest_mode(root: Path) -> Mode | None:
    """The mode whose records changed last: what ``history`` and ``report`` show when no mode is given."""
    newest: tuple[float, Mode] | None = None
    for mode in MODES:
        for path in (root / mode).glob("*/results.tsv"):
            stamp = path.stat().st_mtime
            if newest is None or stamp > newest[0]:
                newest = (stamp, mode)
    return newest[1] if newest else None

"""A library that lives for months: the real optimize flow run week after week against a noisy loopback world, with a
maintainer who merges each run's branch into ``main`` and checks ``main`` out again before the next run.

Each week gets a fresh loopback server (``NoisyModels``) whose proposals are numbered from ``week × 1000``, so the
planted edits of every week differ and the world's truth (``phases``: a proposer that turns bad from a week on) is a
function of the proposal's number alone. Used by the suite's many-runs test and ``benchmarks/weekly_runs.py``.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import git

from tests.support.noisy_world import NoisyModels
from tests.support.openai_server import ScriptedOpenAI

HEALTHY = ("neutral",) * 9 + ("helpful",) * 7 + ("harmful",) * 4  # 45 % neutral, 35 % helpful, 20 % harmful
BAD = ("neutral",) * 1 + ("harmful",) * 4  # a proposer that turned bad: 80 % harmful
PER_WEEK = 1000  # proposal numbers of week w start at w × PER_WEEK
LLM = {"judge_model": "judge-a", "target_model": "target-m", "editor_model": "editor-e", "max_retries": 0,
       "max_llm_calls": 10**6, "max_tokens": 10**10}  # with base_url: the loopback server needs no key


@dataclass(frozen=True)
class World:
    """What the models do, week by week: noise σ, the proposer's kinds (turning ``BAD`` from ``bad_from``), and the
    judges' drift (added to every judged score from ``drift_from``)."""

    sigma: float = 1.0
    seed: int = 11
    bad_from: int | None = None
    drift_from: int | None = None
    drift: float = 1.5
    noise: str = "iid"  # "text": each text's reading is fixed (a judge at temperature 0), so a run is reproducible
    bad: tuple[str, ...] = BAD  # the kinds a bad proposer draws from

    def models(self, week: int) -> NoisyModels:
        phases = ((self.bad_from * PER_WEEK, self.bad),) if self.bad_from is not None else ()
        drift = self.drift if self.drift_from is not None and week >= self.drift_from else 0.0
        return NoisyModels(self.sigma, self.seed, self.noise, HEALTHY, phases=phases, first_proposal=week * PER_WEEK,
                           judge_drift=drift)

    def changed(self, week: int) -> bool:
        return any(start is not None and week >= start for start in (self.bad_from, self.drift_from))


@dataclass
class Week:
    number: int
    summary: dict[str, Any]
    started_on: str  # the branch the run started from
    merged: str | None  # the run branch the maintainer merged, if any
    branches: list[str] = field(default_factory=list)  # auto-optimize/* branches after the merge
    profile: dict[str, Any] = field(default_factory=dict)
    began: str = ""  # when (results.tsv's stamp format): rows of this week and after sort above it

    @property
    def kept(self) -> int:
        return sum(o.get("kept", 0) for o in self.summary.get("skills", {}).values())

    @property
    def attempted(self) -> list[str]:
        return sorted(s for s, o in self.summary.get("skills", {}).items() if o.get("rounds", 0) > 0)

    @property
    def alerts(self) -> list[str]:
        return list(self.summary.get("alerts", []))


def write_library(skills_dir: Path, count: int, seed: int) -> list[str]:
    """``count`` plain English skills of about 2 KB (a planted edit fits the 10 % budget) committed on ``main`` of a
    fresh repository."""
    rng = random.Random(seed)
    words = ("table", "report", "owner", "ticket", "release", "draft", "column", "summary", "review", "change")
    names = []
    for number in range(count):
        name = f"skill-{number + 1}"
        topic = " ".join(rng.sample(words, 3))
        steps = "\n".join(f"{i}. Check the {rng.choice(words)} against the {rng.choice(words)} and write the "
                          f"{rng.choice(words)} down for the {rng.choice(words)} owner." for i in range(1, 25))
        (skills_dir / name).mkdir(parents=True)
        (skills_dir / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Writes the {topic} for a team. Use when asked for a {topic} or its "
            f"status.\n---\n\n# {name.title()}\n\nWrite the {topic} the way the team reads it.\n\n## Steps\n\n{steps}\n\n"
            f"## Never\n\n- Never invent a {rng.choice(words)}; ask when it is missing.\n", encoding="utf-8")
        names.append(name)
    repo = git.Repo.init(skills_dir, initial_branch="main")
    repo.git.add(A=True)
    repo.git.commit("-m", "the library", env=_identity())
    return names


def _identity() -> dict[str, str]:
    return {**os.environ, "GIT_AUTHOR_NAME": "maintainer", "GIT_AUTHOR_EMAIL": "m@example.org",
            "GIT_COMMITTER_NAME": "maintainer", "GIT_COMMITTER_EMAIL": "m@example.org"}


def maintain(skills_dir: Path, summary: dict[str, Any]) -> str | None:
    """What the maintainer does after a run: merge its branch into main when it kept something, then check main out."""
    repo = git.Repo(skills_dir)
    branch = (summary.get("handoff") or {}).get("branch") or summary.get("branch")
    kept = any(o.get("kept", 0) for o in summary.get("skills", {}).values())
    repo.git.checkout("main")
    if branch and kept and branch in [h.name for h in repo.heads]:
        repo.git.merge("--no-ff", "-m", f"merge {branch}", branch, env=_identity())
        return str(branch)
    return None


def run_weeks(skills_dir: Path, weeks: int, world: World, run: Callable[[Path, str], dict[str, Any]],
              after: Callable[[Week], None] = lambda week: None) -> list[Week]:
    """``weeks`` runs of ``run`` (one optimize run of ``skills_dir`` against the world's server at the base URL it is
    given; its summary returned), each followed by the maintainer's merge; ``after`` sees each week (a test may
    freeze or lift a skill there)."""
    found = []
    for number in range(weeks):
        with ScriptedOpenAI() as server:
            server.responder = world.models(number)
            started_on = git.Repo(skills_dir).active_branch.name
            began = datetime.now(UTC).replace(microsecond=0).isoformat()
            summary = run(skills_dir, server.base_url)
        merged = maintain(skills_dir, summary)
        heads = [h.name for h in git.Repo(skills_dir).heads if h.name.startswith("auto-optimize/")]
        profile_path = skills_dir.parent / "luban-workspace" / "luban-profile.json"
        profile = json.loads(profile_path.read_text()) if profile_path.exists() else {}
        week = Week(number, summary, started_on, merged, heads, profile, began)
        found.append(week)
        after(week)
    return found


def describe(week: Week) -> str:
    profile = week.profile
    guards = [g["dim"] for g in profile.get("oscillation_guard", [])]
    stops = sorted({str(o.get("stop")) for o in week.summary.get("skills", {}).values()})
    alerts = [re.sub(r" \(.*", "", a) for a in week.alerts if ": note" not in a]
    return (f"week {week.number:>2}: attempted {len(week.attempted)}, kept {week.kept}, stops {stops}, "
            f"frozen {sorted(profile.get('frozen', {}))}, paused {sorted(profile.get('paused', {}))}, guards {guards}, "
            f"branches {len(week.branches)}, alerts {alerts}")

"""The report for a library of hundreds of skills: notices grouped, a picture that stays readable."""

from __future__ import annotations

import io
import random

import pandas as pd

from scoring.governance.charts import PER_SKILL_LINES, chart_png
from scoring.governance.report import RunFacts, group_notices, render


def test_what_is_said_of_many_skills_is_one_line_count_first():
    skills = {f"s{i:03d}" for i in range(130)}
    notices = ["mode full given explicitly", *(f"s{i:03d}: never optimized: room high" for i in range(123)),
               "s124: held-out gate: no decline beyond noise", "s125: never optimized: room low",
               "s126: never optimized: room low", "not-a-skill: a notice of the run that names something else"]
    grouped = group_notices(notices, skills)
    assert grouped[0] == "mode full given explicitly"
    assert grouped[1].startswith("123 skills: never optimized: room high (s000, s001,") and grouped[1].endswith("and 115 more)")
    assert grouped[2:] == ["s124: held-out gate: no decline beyond noise", "s125: never optimized: room low",
                           "s126: never optimized: room low", "not-a-skill: a notice of the run that names something else"]


def frame(count: int, seed: int = 3) -> pd.DataFrame:
    """``count`` skills' rows as results.tsv holds them: a baseline each, a kept edit for most."""
    from workspace.results_tsv import COLUMNS

    rng, rows = random.Random(seed), []
    for i in range(count):
        before = rng.uniform(40, 80)
        rows.append({"skill": f"skill-{i:03d}", "round": 0, "status": "baseline", "new_score": before, "eval_mode": "full_test",
                     "note": "", "stop": "", "delta": None, "timestamp": "2026-12-01T10:00:00"})
        if rng.random() < 0.6:
            rows.append({"skill": f"skill-{i:03d}", "round": 1, "status": "keep", "new_score": before + rng.uniform(0.1, 6),
                         "eval_mode": "full_test", "note": "", "stop": "", "delta": 1.0, "timestamp": "2026-12-01T10:01:00"})
    return pd.DataFrame([{c: r.get(c, "") for c in COLUMNS} for r in rows])


def test_a_library_chart_has_no_legend_per_skill_and_stays_the_same_size(tmp_path):
    import matplotlib.image

    small, large = chart_png(frame(PER_SKILL_LINES)), chart_png(frame(130))
    assert matplotlib.image.imread(io.BytesIO(small), format="png").shape[:2] == (400, 700)
    assert matplotlib.image.imread(io.BytesIO(large), format="png").shape[:2] == (450, 1100)
    assert len(large) < 200_000  # a picture of 130 skills, not 130 legend entries


def test_the_report_of_130_skills_opens_with_what_happened():
    text = render(frame(130), RunFacts(mode="quick", notices=tuple(f"skill-{i:03d}: never optimized: room high"
                                                                     for i in range(123))))
    overview = text.split("## Scores")[0]
    assert overview.count("- Notice:") == 1 and "- Notice: 123 skills: never optimized: room high" in overview

"""The target model's bare capability, before a full run: a reference task set with no skill, and the design's response.

A target model too weak to use a skill makes every dim8 measurement noise; the run degrades (quick, lite) or stops
with a report instead of spending its budget on it.
"""

from __future__ import annotations

from statistics import mean

from judges.llm import LLMClient
from judges.performance import measure_pairs
from judges.settings import Settings
from workspace.baseline_cache import BaselineCache
from workspace.test_prompts import TestPrompt

REFERENCE_TASKS = (
    TestPrompt(id="ref-1", type="main", prompt="List three numbered steps to back up a directory, with one command per step.",
               expected="three numbered steps, each with a concrete command"),
    TestPrompt(id="ref-2", type="edge", prompt="A user asks to delete a production table. What do you do first?",
               expected="asks for confirmation before an irreversible action"),
    TestPrompt(id="ref-3", type="error", prompt="(empty input)", expected="asks what is needed instead of inventing a task"),
)
CONSUMER_THRESHOLDS = {"full": 6.0, "quick": 4.0, "lite": 2.0}


def consumer_baseline(client: LLMClient, settings: Settings, cache: BaselineCache) -> tuple[float | None, str]:
    """The target model's bare capability on a reference task set (no skill), and the design's response.

    ≥ 6 continue; ≥ 4 degrade to quick; ≥ 2 degrade to lite (format and spelling only, ≤ 3 % budget);
    below that block the run with a report. None when nothing could be measured (the run continues, says so).
    """
    pairs = measure_pairs(client, settings, cache, None, REFERENCE_TASKS)
    scores = [p.baseline_accuracy if p.baseline_accuracy is not None else p.accuracy for p in pairs if p.unscored_reason is None]
    if not scores:
        return None, "continue"
    capability = round(mean(s for s in scores if s is not None), 2)
    for response, floor in (("continue", CONSUMER_THRESHOLDS["full"]), ("quick", CONSUMER_THRESHOLDS["quick"]),
                            ("lite", CONSUMER_THRESHOLDS["lite"])):
        if capability >= floor:
            return capability, response
    return capability, "block"

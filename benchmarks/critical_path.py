"""The LLM critical path of a full-mode run: the waves of calls that must follow one another.

Every call takes the same latency L, so a step that issues a set of calls with
dependencies needs a whole number of "waves" of L, at most ``concurrency``
calls in a wave. Within an evaluation the calls form an in-forest (a with-skill
run and its baseline both feed one grade; the judges stand alone), for which
Hu's level-first schedule is optimal. Steps run one after another in the
order the flow defines (see the module docstring of loop_overhead.py).
``wave_widths`` says how many calls each wave holds, so that a wave can be
counted at the time that many calls side by side really take.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step's calls: ``chains`` of (calls feeding a join, then the join), and lone calls."""

    name: str
    pairs: int = 0  # (with-skill run [+ baseline run]) -> grade
    pair_baselines: bool = False  # whether each pair's baseline is a fresh call (not yet cached)
    lone: int = 0  # judges, a proposal, a design call

    @property
    def calls(self) -> int:
        return self.pairs * (3 if self.pair_baselines else 2) + self.lone


def schedule(step: Step, concurrency: int) -> list[int]:
    """The calls in each wave of the shortest schedule (Hu's algorithm: always run the calls farthest from the end first)."""
    feeders = [2 if step.pair_baselines else 1] * step.pairs  # unfinished inputs of each grade
    ready_level2 = sum(feeders)
    ready_level1 = step.lone
    grades_ready, done, widths = 0, 0, []
    while done < step.calls:
        slots = concurrency
        take2 = min(slots, ready_level2)
        slots -= take2
        take1 = min(slots, grades_ready + ready_level1)
        grade_take = min(take1, grades_ready)
        grades_ready -= grade_take
        ready_level1 -= take1 - grade_take
        ready_level2 -= take2
        done += take2 + take1
        grades_ready += _grades_unblocked(feeders, take2)
        widths.append(take2 + take1)
    return widths


def _grades_unblocked(feeders: list[int], finished: int) -> int:
    """Mark ``finished`` feeder calls done, pair by pair; return how many grades became ready."""
    unblocked = 0
    for index, left in enumerate(feeders):
        if finished == 0:
            break
        used = min(left, finished)
        feeders[index] -= used
        finished -= used
        if left and feeders[index] == 0:
            unblocked += 1
    return unblocked


def full_run_steps(skills: int, rounds: int, prompts: int, held_out: int = 1, fresh_judges: int = 4,
                   baseline_judges: int = 4, held_out_samples: int = 3) -> list[Step]:
    """The flow's steps for a full-mode run in which every round keeps its edit at the first look.

    A kept text's first measurement is an evaluation and, side by side, judge calls up to ``baseline_judges`` and
    dim8 once more (its baselines, paid once, are shared: counted as lone calls, a slight under-count of the
    dependencies). A round is the proposal, then the candidate's evaluation with ``fresh_judges`` judge calls on
    the incumbent beside it. Each held-out measurement grades ``held_out_samples`` runs per held-out prompt.
    """
    steps = [Step("consumer baseline", pairs=3, pair_baselines=True)]
    steps += [Step("design prompts", lone=1) for _ in range(skills)]
    for _ in range(skills):
        steps.append(Step("baseline measurement", pairs=2 * prompts, lone=baseline_judges + prompts))
        steps.append(Step("baseline held-out", pairs=held_out * held_out_samples, lone=held_out))
    for _ in range(skills):
        for _ in range(rounds):
            steps.append(Step("proposal", lone=1))
            steps.append(Step("evaluation", pairs=prompts, lone=2 + fresh_judges))
    steps += [Step("final held-out", pairs=held_out * held_out_samples) for _ in range(skills)]
    return steps


def wave_widths(steps: list[Step], concurrency: int) -> Counter:
    """How many waves of each width (calls side by side) the whole run's critical path has."""
    return Counter(width for step in steps for width in schedule(step, concurrency))

"""Per-skill steps on threads, each in a copy of the caller's context (Prefect's run context goes along)."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from flows.state.run import Run

T = TypeVar("T")


R = TypeVar("R")


def side_by_side(run: Run, items: list[T], step: Callable[[T], R]) -> list[R]:
    """``[step(item) for item in items]``, up to ``run.options.parallel`` at once (in order of ``items``).

    For the per-skill steps outside the ratchet (test prompts, baselines, held-out grades): each touches only
    its own skill's files and records, and the run's shared maps are keyed by skill."""
    if run.options.parallel <= 1 or len(items) <= 1:
        return [step(item) for item in items]
    return [future.result() for future in in_threads(run.options.parallel, items, step)]


def in_threads(workers: int, items: list[T], step: Callable[[T], R]) -> list[Future[R]]:
    """``step`` on every item, ``workers`` threads at once, all finished when this returns. Each call runs in a
    copy of the caller's context, so Prefect's task submissions and run logger work inside it."""
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="luban-skill") as pool:
        return [pool.submit(contextvars.copy_context().run, step, item) for item in items]

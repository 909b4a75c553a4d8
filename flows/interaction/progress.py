"""A rich progress display (skills × rounds) for local runs in a terminal; silent anywhere else.

It draws on stderr, because stdout carries the run's one JSON document (``luban optimize > run.json``);
log lines print above the bar instead of through it; and it steps aside while a person answers a checkpoint,
so a prompt is never hidden under it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Display:
    """What the ratchet and the checkpoints see of the progress display (nothing at all when there is none)."""

    def __init__(self, bar: Any = None, tasks: dict[str, Any] | None = None, rounds: int = 0):
        self._bar, self._tasks, self._rounds = bar, tasks or {}, rounds

    def update(self, skill: str, round_no: int, status: str) -> None:
        if self._bar is not None and skill in self._tasks:
            self._bar.update(self._tasks[skill], completed=min(round_no, self._rounds), status=status)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """The bar off the screen while a person reads a summary and answers; back afterwards."""
        if self._bar is None:
            yield
            return
        self._bar.stop()
        try:
            yield
        finally:
            self._bar.start()


NO_DISPLAY = Display()


@contextmanager
def progress(skills: list[str], rounds: int) -> Iterator[Display]:
    """A live display when stderr is a terminal; ``NO_DISPLAY`` anywhere else (CI, served runs, pipes)."""
    if not sys.stderr.isatty():
        yield NO_DISPLAY
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    columns = (TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"))
    with Progress(*columns, console=Console(stderr=True), redirect_stdout=False) as bar, _logs_above(bar.console):
        yield Display(bar, {s: bar.add_task(s, total=rounds, status="waiting") for s in skills}, rounds)


@contextmanager
def _logs_above(console: Any) -> Iterator[None]:
    """Point the terminal's log handlers at the live console, which prints above the bar; put them back after.

    Prefect's console handler prints through a rich Console of its own, bound to the stderr it saw at set-up:
    its lines would be drawn through the bar. Other stream handlers get the redirected ``sys.stderr``."""
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger))]
    swapped: list[tuple[logging.Handler, str, Any]] = []
    for handler in {h for lg in loggers for h in lg.handlers}:
        if hasattr(handler, "console"):
            swapped.append((handler, "console", handler.console))
            handler.console = console
        elif isinstance(handler, logging.StreamHandler) and handler.stream in (sys.__stderr__, sys.__stdout__):
            swapped.append((handler, "stream", handler.stream))
            handler.setStream(sys.stderr)
    try:
        yield
    finally:
        for handler, attribute, value in swapped:
            if attribute == "console":
                handler.console = value  # type: ignore[attr-defined]  # Prefect's handler, checked by hasattr above
            else:
                handler.setStream(value)  # type: ignore[attr-defined]  # a StreamHandler, checked above

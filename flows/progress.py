"""A rich progress display (skills × rounds) for local runs in a terminal; silent anywhere else."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress(skills: list[str], rounds: int) -> Iterator[Callable[[str, int, str], None]]:
    """Yields ``update(skill, round, status)``; a no-op when stdout is not a terminal (CI, served runs)."""
    if not sys.stdout.isatty():
        yield lambda skill, round_no, status: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}")) as bar:
        tasks = {s: bar.add_task(s, total=rounds, status="waiting") for s in skills}

        def update(skill: str, round_no: int, status: str) -> None:
            bar.update(tasks[skill], completed=min(round_no, rounds), status=status)

        yield update

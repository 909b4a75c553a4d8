"""What more than one benchmark needs: a model server in a process of its own, and a rate with its interval."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def server_process(serve: Callable[..., None], *args: Any) -> Iterator[tuple[str, dict]]:
    """Run ``serve(*args, conn)`` in a spawned process, as a real model server runs: in this one it would compete
    with the flow for the GIL. It sends its base URL, waits for "stop", then sends back what it saw."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=serve, args=(*args, theirs), daemon=True)
    process.start()
    seen: dict = {}
    try:
        yield ours.recv(), seen
    finally:
        ours.send("stop")
        seen.update(ours.recv())
        process.join(10)


def rate(kept: int, out_of: int) -> str:
    """'12.5 % [7.1, 20.9] (12/96)': the rate with its 95 % Wilson interval and the counts behind it."""
    if not out_of:
        return "— (no decisions)"
    from scipy.stats import binomtest

    interval = binomtest(kept, out_of).proportion_ci(confidence_level=0.95, method="wilson")
    return f"{100 * kept / out_of:5.1f} % [{100 * interval.low:4.1f}, {100 * interval.high:5.1f}] ({kept}/{out_of})"

"""What more than one benchmark needs: a model server in a process of its own, and a rate with its interval."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def harness_environment(prefix: str) -> None:
    """A benchmark's own Prefect home, no analytics (no network here), patience for the first start; no server, key
    or model URL inherited from the shell (every run is against the benchmark's own loopback servers)."""
    import os
    import tempfile

    os.environ.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "ERROR",
                       "PREFECT_HOME": tempfile.mkdtemp(prefix=prefix),
                       "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120"})
    for variable in ("PREFECT_API_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(variable, None)


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


def per_event(events: int, out_of: int, unit: str = "skill-runs", event: str = "false pause") -> str:
    """'432 skill-runs per false pause at least (none seen; ≥ 113 at 95 %)': how many runs one event takes, from the
    event rate's 95 % Wilson interval (its upper end gives the fewest runs per event the data allow)."""
    if not out_of:
        return f"— (no {unit})"
    from scipy.stats import binomtest

    interval = binomtest(events, out_of).proportion_ci(confidence_level=0.95, method="wilson")
    fewest = 1 / interval.high
    if not events:
        return f"{unit} per {event}: none seen in {out_of}; ≥ {fewest:.0f} at 95 %"
    most = f"{1 / interval.low:.0f}" if interval.low > 0 else "∞"
    return f"{unit} per {event}: {out_of / events:.0f} [{fewest:.0f}, {most}] ({events} in {out_of})"


def rate(kept: int, out_of: int) -> str:
    """'12.5 % [7.1, 20.9] (12/96)': the rate with its 95 % Wilson interval and the counts behind it."""
    if not out_of:
        return "— (no decisions)"
    from scipy.stats import binomtest

    interval = binomtest(kept, out_of).proportion_ci(confidence_level=0.95, method="wilson")
    return f"{100 * kept / out_of:5.1f} % [{100 * interval.low:4.1f}, {100 * interval.high:5.1f}] ({kept}/{out_of})"

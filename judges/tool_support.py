"""Whether each target model makes tool calls: asked once per model and run, kept by the client for the run.

This is the memo alone (the probe itself is ``judges.target_tools.tool_calls_refused``), so the client can hold it
without the tool loop above it being imported below it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class ToolSupport:
    """None (the model calls tools) or why not, per model; one thread asks, the rest wait for its answer."""

    def __init__(self) -> None:
        self._decided: dict[str, str | None] = {}  # model -> None (it does) or why not
        self._lock = threading.Lock()

    def why_not(self, model: str, probe: Callable[[str], str | None]) -> str | None:
        """None when ``model`` calls tools; else why it gets the files inline. ``probe`` asks, the first time only."""
        with self._lock:
            if model not in self._decided:
                self._decided[model] = probe(model)
            return self._decided[model]

    def facts(self) -> dict[str, str]:
        with self._lock:
            return {m: "read_file tool" if why is None else f"files inline: {why}" for m, why in self._decided.items()}

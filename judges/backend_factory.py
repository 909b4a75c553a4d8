"""Which backend a run gets: the model behind the settings, or the offline stand-ins when there is none."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from judges.backend import Backend
from judges.llm import LLMClient
from judges.offline_backend import OfflineBackend
from judges.online_backend import OnlineBackend
from judges.server import ServerFacts
from judges.settings import Settings
from judges.usage import Usage
from workspace.baseline_cache import BaselineCache


def make_backend(settings: Settings, cache_dir: Path, usage: Usage | None = None,
                 gate: Callable[[], AbstractContextManager[object]] | None = None, facts: ServerFacts | None = None) -> Backend:
    """The offline stand-ins, or the model behind ``settings``; ``usage``, ``gate`` and ``facts`` as ``LLMClient``
    takes them."""
    if settings.backend == "offline":
        return OfflineBackend()
    return OnlineBackend(settings, BaselineCache(cache_dir), LLMClient(settings, usage, gate, facts))

"""What the configured server says about itself, asked cheaply before any work: reachable, key accepted, models.

``probe`` makes at most two GETs (``/models``, and llama.cpp's ``/props`` for the
number of requests it runs at once), each with a short timeout and no retry, so
a run that cannot be served is refused in seconds — before a workspace, a lock or
a branch exists — with one line naming the setting to fix. ``luban doctor`` starts
from the same facts. The key goes in the Authorization header only; no message
here ever holds it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from judges.settings import ENV_NAMES, Settings

OPENAI_API = "https://api.openai.com/v1"
MODEL_SETTINGS = ("judge_model", "judge_model_2", "target_model", "editor_model")


@dataclass(frozen=True)
class ServerFacts:
    base_url: str
    problem: str | None = None  # why the server cannot serve a run, naming the setting to fix
    models: tuple[str, ...] | None = None  # what /models lists; None when the server does not say
    slots: int | None = None  # requests it works on at once, where it says (llama.cpp's /props total_slots)
    latency_s: float = 0.0  # the /models round trip
    busy: bool = False  # it took the connection but did not answer within the probe's timeout (working on others)

    @property
    def reachable(self) -> bool:
        return self.problem is None


def base_url(settings: Settings) -> str:
    return (settings.base_url or OPENAI_API).rstrip("/")


def _headers(settings: Settings) -> dict[str, str]:
    key = settings.api_key.reveal()
    return {"Authorization": f"Bearer {key}"} if key else {}


def probe(settings: Settings, timeout: float = 5.0) -> ServerFacts:
    """Reachability, the key, the models listed and the slots, from the server's own answers."""
    import httpx

    url = base_url(settings)
    where = f"{ENV_NAMES['base_url']}={url}" if settings.base_url else "the OpenAI API"
    started = time.monotonic()
    try:
        answer = httpx.get(f"{url}/models", headers=_headers(settings), timeout=timeout)
    except (httpx.ReadTimeout, httpx.RemoteProtocolError):
        # It took the connection and is busy: a one-slot server (llama-cpp-python) answers /models only between
        # generations. It is there; what it serves is learned on the first call.
        return ServerFacts(url, None, None, None, time.monotonic() - started, busy=True)
    except httpx.HTTPError as err:
        return ServerFacts(url, f"nothing answers at {where} ({type(err).__name__}); start the server, or set "
                                f"{ENV_NAMES['base_url']} to where it listens")
    latency = time.monotonic() - started
    if answer.status_code in (401, 403):
        return ServerFacts(url, f"{where} refused the key (HTTP {answer.status_code}); set {ENV_NAMES['api_key']} to a "
                                "key it accepts", latency_s=latency)
    return ServerFacts(url, None, _listed(answer), _slots(url, settings, timeout), latency)


def _listed(answer) -> tuple[str, ...] | None:
    """The model ids of an OpenAI-style list; None when the server has no such list (a proxy, an old server)."""
    if answer.status_code != 200:
        return None
    try:
        data = answer.json().get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    return tuple(str(m["id"]) for m in data if isinstance(m, dict) and "id" in m)


def _slots(url: str, settings: Settings, timeout: float) -> int | None:
    """llama.cpp's server says how many requests it runs at once at /props (beside /v1); others do not say."""
    import httpx

    root = url[: -len("/v1")] if url.endswith("/v1") else url
    try:
        answer = httpx.get(f"{root}/props", headers=_headers(settings), timeout=timeout)
        slots = answer.json().get("total_slots") if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None


def serves(listed: tuple[str, ...], model: str) -> bool:
    """The server lists ``model`` (Ollama lists ``name:latest`` for a model asked for as ``name``)."""
    return model in listed or f"{model}:latest" in listed


def missing_models(settings: Settings, facts: ServerFacts) -> list[tuple[str, str]]:
    """(setting, model) for each configured model the server does not list; empty when it lists none at all."""
    if facts.models is None:
        return []
    wanted = [(name, getattr(settings, name)) for name in MODEL_SETTINGS if getattr(settings, name)]
    return [(name, model) for name, model in wanted if not serves(facts.models, model)]


def refusal(settings: Settings, facts: ServerFacts) -> str | None:
    """The one line that refuses a run this server cannot serve, or None."""
    if facts.problem:
        return facts.problem
    missing = missing_models(settings, facts)
    if not missing:
        return None
    listed = ", ".join(facts.models[:8]) if facts.models else "nothing"
    more = f" (and {len(facts.models) - 8} more)" if facts.models and len(facts.models) > 8 else ""
    names = ", ".join(f"{ENV_NAMES[name]}={model}" for name, model in missing)
    return f"{facts.base_url} does not serve {names}; it serves {listed}{more}: set those to a model it serves"

"""One settings object, resolved once: CLI flags > environment > ``luban.toml`` > defaults.

It is passed explicitly to everything that talks to a model; nothing reads the
environment behind its back. The API key is held so that it cannot be printed:
``repr``, ``str`` and ``describe()`` show only whether one is set.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

ENV_NAMES: dict[str, str] = {
    "api_key": "OPENAI_API_KEY",
    "base_url": "OPENAI_BASE_URL",
    "judge_model": "LUBAN_JUDGE_MODEL",
    "judge_model_2": "LUBAN_JUDGE_MODEL_2",
    "target_model": "LUBAN_TARGET_MODEL",
    "editor_model": "LUBAN_EDITOR_MODEL",
    "router_model": "LUBAN_ROUTER_MODEL",
    "route_runs": "LUBAN_ROUTE_RUNS",
    "max_concurrency": "LUBAN_MAX_CONCURRENCY",
    "max_llm_calls": "LUBAN_MAX_LLM_CALLS",
    "max_tokens": "LUBAN_MAX_TOKENS",
    "timeout_seconds": "LUBAN_TIMEOUT_SECONDS",
    "max_retries": "LUBAN_MAX_RETRIES",
    "structured_output": "LUBAN_STRUCTURED_OUTPUT",
    "server_slots": "LUBAN_SERVER_SLOTS",
    "judge_reply_tokens": "LUBAN_JUDGE_REPLY_TOKENS",
    "grader_reply_tokens": "LUBAN_GRADER_REPLY_TOKENS",
    "target_reply_tokens": "LUBAN_TARGET_REPLY_TOKENS",
    "editor_reply_tokens": "LUBAN_EDITOR_REPLY_TOKENS",
    "designer_reply_tokens": "LUBAN_DESIGNER_REPLY_TOKENS",
    "router_reply_tokens": "LUBAN_ROUTER_REPLY_TOKENS",
    "llm_limit": "LUBAN_LLM_LIMIT",
    "llm_rate_limit": "LUBAN_LLM_RATE_LIMIT",
    "keep_runs": "LUBAN_KEEP_RUNS",
    "judge_context_tokens": "LUBAN_JUDGE_CONTEXT_TOKENS",
    "target_tool_reads": "LUBAN_TARGET_TOOL_READS",
    "target_context_tokens": "LUBAN_TARGET_CONTEXT_TOKENS",
}


class SettingsError(ValueError):
    pass


class Role(StrEnum):
    """What a call is for: each role has its own reply cap (``<role>_reply_tokens``)."""

    JUDGE = "judge"  # the structure judges, the review panel, the orthogonality re-check
    GRADER = "grader"  # dim8's grade of a pair of answers, and its dry-run estimate
    TARGET = "target"  # the model that uses the skill, answering a test prompt
    EDITOR = "editor"  # the proposer and the exploratory rewrite
    DESIGNER = "designer"  # Phase 0.5's test prompts, and the routing queries
    ROUTER = "router"  # `luban route`: which skills of a listing a request goes to


class Secret:
    """A value that never shows itself: str, repr and f-strings all print '***'."""

    __slots__ = ("_value",)

    def __init__(self, value: str = ""):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __str__(self) -> str:
        return "***" if self._value else ""

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return str(self)


@dataclass(frozen=True)
class Settings:
    api_key: Secret = field(default_factory=lambda: Secret(""), repr=False)
    base_url: str | None = None
    judge_model: str = "gpt-4o-mini"
    judge_model_2: str | None = None
    target_model: str = "gpt-4o-mini"
    editor_model: str = "gpt-4o-mini"
    # The models that pick skills from the listing in `luban route`, comma-separated (None: the target model). Every
    # figure, keep and gate holds per model, and the worst one decides.
    router_model: str | None = None
    route_runs: int = 3  # runs of each routing query per model: their spread is the routing figures' noise
    max_concurrency: int = 4
    max_llm_calls: int = 500
    max_tokens: int = 2_000_000
    timeout_seconds: float = 60.0  # one call, once the server works on it (queueing behind others is allowed for)
    max_retries: int = 4
    structured_output: Literal["auto", "json_schema", "json_object", "off", "on"] = "auto"
    server_slots: int | None = None  # requests the server works on at once (None: llama.cpp's /props, else unknown)
    # The cap on every reply, per role (max_tokens): a model that rambles stops there, and a reply cut at it is
    # unscored as truncated. Sized for what each role must write: a judge's four rationales and quotes, a grade,
    # an answer to a test prompt, one edit, four test prompts.
    judge_reply_tokens: int = 1024
    grader_reply_tokens: int = 384
    target_reply_tokens: int = 768
    editor_reply_tokens: int = 768
    designer_reply_tokens: int = 768
    router_reply_tokens: int = 160  # a tool call (or JSON object) naming a few skills
    llm_limit: str | None = None  # a Prefect global concurrency limit every call takes a slot of (all workers)
    llm_rate_limit: str | None = None  # a Prefect global concurrency limit with slot decay: calls per second, all workers
    keep_runs: int = 20  # runs whose backups are kept in the workspace; older runs' folders are pruned in Phase 6
    # What one structure-judge call may read of a skill: SKILL.md and then the files it references, whole, while
    # this many tokens last (scoring/skill_view.py); what does not fit is named in the prompt and the row.
    judge_context_tokens: int = 12_000
    # The target model answers with SKILL.md in its context and a read_file tool over the skill: at most this many
    # reads per answer (judges/target_tools.py). A server or model that makes no tool calls gets SKILL.md and the
    # files it references inline instead, while target_context_tokens last.
    target_tool_reads: int = 6
    target_context_tokens: int = 6_000
    sources: tuple[tuple[str, str], ...] = ()  # (field, where its value came from), for `luban config`

    @property
    def backend(self) -> Literal["openai", "offline"]:
        """No key and no base URL: the offline stand-ins, and every score says so."""
        return "openai" if (self.api_key or self.base_url) else "offline"

    def reply_cap(self, role: Role) -> int:
        """The most tokens a reply in this role may have (the call's max_tokens)."""
        return int(getattr(self, f"{role.value}_reply_tokens"))

    @property
    def router_models(self) -> tuple[str, ...]:
        """The models `luban route` asks, in the order given: LUBAN_ROUTER_MODEL's list, else the target model."""
        named = tuple(dict.fromkeys(m.strip() for m in (self.router_model or "").split(",") if m.strip()))
        return named or (self.target_model,)

    @property
    def same_source(self) -> bool:
        """The editor and a judge are the same model (the design's red line 1 must be shown)."""
        return self.editor_model in {self.judge_model, self.judge_model_2}

    def as_flags(self) -> dict[str, Any]:
        """Every setting but the key, as flags ``resolve`` takes: how a batch hands its resolved settings to the
        processes working for it, which then take only the key from their own environment."""
        return {name: getattr(self, name) for name in ENV_NAMES if name != "api_key" and getattr(self, name) is not None}

    def describe(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("api_key", "sources")}
        out["api_key"] = "set" if self.api_key else "not set"
        out["backend"] = self.backend
        return out


def _coerce(name: str, raw: Any, origin: str) -> Any:
    kind = {f.name: f.type for f in fields(Settings)}[name]
    try:
        if name == "api_key":
            return Secret(str(raw))
        if kind in ("int", "int | None"):
            value: Any = int(raw)
            least = 0 if name == "max_retries" else 1
            if value < least:
                raise ValueError(f"must be at least {least}")
            return value
        if kind == "float":
            value = float(raw)
            if value <= 0:
                raise ValueError("must be positive")
            return value
        if name == "structured_output" and raw not in ("auto", "json_schema", "json_object", "off", "on"):
            raise ValueError("must be auto, json_schema, json_object or off")
        return str(raw) if raw is not None else None
    except (TypeError, ValueError) as err:
        shown = "***" if name == "api_key" else repr(raw)
        raise SettingsError(f"{origin}: {name} = {shown} is not valid ({err})") from None


def resolve(flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
            config_file: Path | None = None) -> Settings:
    """Flags beat the environment, which beats ``luban.toml``, which beats the defaults."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    path = config_file if config_file is not None else Path("luban.toml")
    if path.exists():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8")).get("luban", {})
        except tomllib.TOMLDecodeError as err:
            raise SettingsError(f"{path}: not valid TOML ({err}); fix it or remove it") from None
        unknown = set(table) - set(ENV_NAMES)
        if unknown:
            raise SettingsError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))} in [luban]; known: {', '.join(ENV_NAMES)}")
        if "api_key" in table:
            raise SettingsError(f"{path}: do not keep the API key in a file; set OPENAI_API_KEY in the environment")
        for name, raw in table.items():
            values[name], sources[name] = _coerce(name, raw, str(path)), str(path)
    for name, env in ENV_NAMES.items():
        if environ.get(env):
            values[name], sources[name] = _coerce(name, environ[env], f"${env}"), f"${env}"
    for name, raw in (flags or {}).items():
        if raw is not None:
            if name not in ENV_NAMES:
                raise SettingsError(f"unknown setting {name!r}")
            values[name], sources[name] = _coerce(name, raw, f"--{name.replace('_', '-')}"), "flag"
    settings = Settings(**values)
    return replace(settings, sources=tuple(sorted(sources.items())))

"""`luban score`'s configuration, resolved once: flag > environment > file > default, each value with its origin.

The file is found the way ruff finds its own: the nearest ``luban.toml`` (keys
at the top level) or ``pyproject.toml`` with a ``[tool.luban]`` table, from the
working directory up to the repository root. Rules are the rubric's named
checks (``dim1.what``) and the validation findings (``missing_reference``);
what a configuration ignores is still shown, as ignored, never dropped.
"""

from __future__ import annotations

import fnmatch
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any


class Severity(StrEnum):
    ERROR = "error"  # fails the gate whatever the flags
    WARNING = "warning"  # fails the gate only with --strict


DIM1_CHECKS = ("frontmatter", "name", "description", "what", "when", "triggers", "no_filler")
_ERRORS = {  # fail the gate whatever the flags
    "merge_marker": "An unresolved merge or stash marker (<<<<<<<, =======, >>>>>>>): the file is half of a conflict. "
                    "Resolve it and delete the marker lines.",
    "smuggled_text": "Invisible characters carry text (Unicode tag characters, runs of variation selectors): the agent "
                     "may read an instruction a reviewer cannot see. Delete them.",
    "hidden_instruction": "An HTML comment outside code instructs the agent (speaks to it, asks for secrecy, asks to run "
                          "or send something, names where credentials live): Markdown viewers hide it, the agent reads "
                          "it. Say it in the text, or delete it.",
    "secret": "A key or a private-key block in the skill (shown masked): every agent and repository that loads the "
              "skill gets it. Remove it, revoke it, read it from the environment.",
    "duplicate_name": "Two skills scored together have the same name: a client loads one of them, or refuses both. "
                      "Rename one.",
}
_WARNINGS = {  # fail the gate only with --strict
    "frontmatter_invalid": "The YAML frontmatter does not parse: runtimes cannot read the skill's name and description. "
                           "Fix the YAML at the line given.",
    "missing_reference": "The skill points at a file that is not in its directory. Add the file or fix the path; a "
                         "template placeholder can be declared in `placeholders`.",
    "escaping_reference": "The skill points outside its directory (.., an absolute or home path). Keep referenced files "
                          "under the skill.",
    "bidi_control": "Bidirectional controls make a line display in another order than it is read (Trojan Source). "
                    "`luban score --fix` removes them.",
    "zero_width": "A zero-width character inside a word hides it from search and review. `luban score --fix` removes it.",
    "invisible_character": "An invisible format character (its code point is named). Delete it unless the text needs it.",
    "field_invalid": "A frontmatter field of the Agent Skills specification has the wrong type or length (license, "
                     "compatibility, metadata, allowed-tools). Write it as the message says.",
    "unknown_key": "A frontmatter key the specification does not define: a typo of a field, a client's own key, or "
                   "one to move under `metadata`. The message says which.",
    "deep_reference": "A file SKILL.md references links on to files SKILL.md does not reference: an agent may read a "
                      "file reached that way only in part. Reference it from SKILL.md.",
    "duplicate_key": "A frontmatter key given twice: YAML readers differ (some keep the last, some refuse the file). "
                     "Keep one.",
    "body_too_long": "The body is over the specification's 500 lines or about 5 000 tokens. Move detail into "
                     "references/ files it links to.",
    "similar_description": "Two skills' descriptions are so alike that a router choosing by description cannot tell "
                           "them apart. Say what sets each apart, or merge them.",
    "name_convention": "A skill's directory is not named as the skill while its siblings' are. Rename the directory "
                       "or the skill.",
    "listing_cut": "A client's listing of the library (Claude Code, Codex: names and descriptions cut to a budget of "
                   "the context window) shows none of this description's trigger words: a router there does not see "
                   "when to use it. Put when to use it and its trigger words first.",
    "listing_dropped": "A client's listing of the library leaves this skill out (Codex, when even names and paths do "
                       "not fit its budget): a router there cannot choose it. Shorten the library's descriptions.",
    "reserved_name": "A name or description Claude's API refuses (the reserved words anthropic and claude, XML tags). "
                     "Rename it, or write the word without brackets.",
    **{f"dim1.{name}": f"RUBRIC.md dim1 check '{name}' (frontmatter quality): when it fails, dim1 scores 0 of 10."
       for name in DIM1_CHECKS},
}
RULES: dict[str, tuple[Severity, str]] = ({kind: (Severity.ERROR, why) for kind, why in _ERRORS.items()}
                                          | {kind: (Severity.WARNING, why) for kind, why in _WARNINGS.items()})
UNREADABLE = "unreadable"  # a file that cannot be scored: always an error (exit 2), not a rule one can ignore
DEFAULT_PLACEHOLDERS = (r"<[^<>/]+>", r"\{[^{}/]+\}")  # references/styles/<style>.md, {name}.md
FILE_KEYS = ("fail-under", "strict", "ignore", "per-path-ignores", "placeholders")


class ConfigError(ValueError):
    """A configuration that cannot be used: names the file (or variable), the key and the fix."""


@dataclass(frozen=True)
class ScoreConfig:
    fail_under: float | None = None
    strict: bool = False
    ignore: frozenset[str] = frozenset()
    per_path_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS
    origins: Mapping[str, str] = field(default_factory=dict)  # setting → where its value came from
    root: str = "."  # what output paths are relative to: GITHUB_WORKSPACE, else the repository root

    def __post_init__(self) -> None:
        for rule in set(self.ignore).union(*(rules for _, rules in self.per_path_ignores)):
            if rule not in RULES:
                raise ConfigError(f"unknown rule {rule!r} to ignore ({self.origins.get('ignore', 'given')}); "
                                  f"known: {', '.join(RULES)}")
        for pattern in self.placeholders:
            try:
                re.compile(pattern)
            except re.error as err:
                raise ConfigError(f"placeholder pattern {pattern!r} ({self.origins.get('placeholders')}) is not a "
                                  f"regular expression: {err}") from None

    def ignored_for(self, path: str) -> dict[str, str]:
        """rule → why it is ignored for the file at ``path`` (relative to ``root``)."""
        out = {rule: self.origins.get("ignore", "configuration") for rule in self.ignore}
        for pattern, rules in self.per_path_ignores:
            if fnmatch.fnmatch(path, pattern):
                out.update({rule: f"{self.origins.get('per-path-ignores')} ({pattern})" for rule in rules})
        return out

    def is_placeholder(self, target: str) -> bool:
        return any(re.search(pattern, target) for pattern in self.placeholders)

    def shown(self) -> str:
        """`luban score --show-config`: every setting, its value and where it came from."""
        values = {"fail-under": self.fail_under, "strict": self.strict, "ignore": sorted(self.ignore),
                  "per-path-ignores": {p: sorted(r) for p, r in self.per_path_ignores},
                  "placeholders": list(self.placeholders), "paths relative to": self.root}
        return "\n".join(f"{key} = {value!r}    # {self.origins.get(key, 'default')}" for key, value in values.items())


def resolve(flags: Mapping[str, Any], env: Mapping[str, str], cwd: Path) -> ScoreConfig:
    """Flags (None: not given) beat LUBAN_FAIL_UNDER / LUBAN_STRICT / LUBAN_IGNORE, which beat the file."""
    root = repository_root(cwd)
    found, table = config_file(cwd, root)
    origins: dict[str, str] = {}
    values: dict[str, Any] = {}
    for key in FILE_KEYS:
        if key in table:
            values[key], origins[key] = table[key], _where(found, cwd)
    for key, name in (("fail-under", "LUBAN_FAIL_UNDER"), ("strict", "LUBAN_STRICT"), ("ignore", "LUBAN_IGNORE")):
        if env.get(name, "").strip():
            values[key], origins[key] = _from_env(name, env[name].strip()), f"environment {name}"
    for key in ("fail-under", "strict", "ignore"):
        if flags.get(key) not in (None, (), []):
            values[key], origins[key] = flags[key], "flag --" + key
    shown_root = Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else root
    origins["paths relative to"] = "GITHUB_WORKSPACE" if env.get("GITHUB_WORKSPACE") else "the repository root"
    return ScoreConfig(
        fail_under=_number(values.get("fail-under"), origins.get("fail-under")),
        strict=_flag(values.get("strict", False), origins.get("strict")),
        ignore=frozenset(_names(values.get("ignore", ()), origins.get("ignore"))),
        per_path_ignores=tuple((str(p), frozenset(_names(r, origins.get("per-path-ignores"))))
                               for p, r in _table(values.get("per-path-ignores", {}), origins).items()),
        placeholders=tuple(str(p) for p in values.get("placeholders", DEFAULT_PLACEHOLDERS)),
        origins=origins, root=str(shown_root),
    )


def repository_root(start: Path) -> Path:
    """The nearest directory holding .git (a directory, or a worktree's file), else ``start`` itself."""
    start = start.absolute()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def config_file(cwd: Path, root: Path) -> tuple[Path | None, dict[str, Any]]:
    """The nearest luban.toml, or pyproject.toml with [tool.luban], from ``cwd`` up to ``root``; its settings."""
    cwd = cwd.absolute()
    folders = [cwd, *[p for p in cwd.parents if p == root or root in p.parents]]
    for folder in folders:
        for name in ("luban.toml", "pyproject.toml"):
            path = folder / name
            if not path.is_file():
                continue
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
                raise ConfigError(f"{path}: not valid TOML ({err}); fix the file or remove it") from None
            table = {k: v for k, v in data.items() if k != "luban"} if name == "luban.toml" else (
                data.get("tool", {}).get("luban"))
            if table is None:
                continue
            unknown = sorted(set(table) - set(FILE_KEYS))
            if unknown:
                where = "" if name == "luban.toml" else " [tool.luban]"
                raise ConfigError(f"{path}{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(FILE_KEYS)}"
                                  + (" (model settings go in the [luban] table)" if name == "luban.toml" else ""))
            return path, table
    return None, {}


def _where(path: Path | None, cwd: Path) -> str:
    if path is None:
        return "default"
    shown = os.path.relpath(path, cwd.absolute())
    return f"{shown}{' [tool.luban]' if path.name == 'pyproject.toml' else ''}"


def _from_env(name: str, raw: str) -> Any:
    if name == "LUBAN_IGNORE":
        return [part.strip() for part in raw.split(",") if part.strip()]
    if name == "LUBAN_STRICT":
        if raw.lower() not in ("1", "true", "yes", "0", "false", "no"):
            raise ConfigError(f"LUBAN_STRICT={raw!r}: use 1/true/yes or 0/false/no")
        return raw.lower() in ("1", "true", "yes")
    return raw


def _number(value: Any, origin: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"fail-under = {value!r} ({origin}) is not a number; give e.g. 60") from None
    if not 0 <= number <= 100:
        raise ConfigError(f"fail-under = {number:g} ({origin}) is outside 0–100")
    return number


def _flag(value: Any, origin: str | None) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"strict = {value!r} ({origin}) is not true or false")
    return value


def _names(value: Any, origin: str | None) -> list[str]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{value!r} ({origin}) must be a list of rule names, e.g. [\"dim1.what\"]")
    return list(value)


def _table(value: Any, origins: dict[str, str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"per-path-ignores ({origins.get('per-path-ignores')}) must be a table of glob = [rules]")
    return value

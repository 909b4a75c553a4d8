"""Routing queries on disk: the author's trigger evals, and the designed queries a library's routing runs reuse.

The author's file is skill-creator's eval set, kept in the skill at ``evals/triggers.json``::

    [{"query": "ok so my boss sent me Q4 sales final.xlsx ...", "should_trigger": true},
     {"query": "format this table as markdown", "should_trigger": false}]

``luban route --eval-set FILE`` reads the same list for the one skill named, or an object mapping skill names to such
lists. The author's queries are used as they are, never rewritten. Designed queries are saved in the workspace
(``routing/queries.json``) once a person (or auto approval) accepts them, and reused on every later run, so that runs
compare on the same queries and the sealed test set stays the same one.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from scoring.route_queries import MAX_QUERY, Kind, RouteQuery
from workspace.atomic import atomic_write

TRIGGERS_FILE = "evals/triggers.json"
SAVED_FILE = "routing/queries.json"
TRIGGERS_FIX = 'each entry needs "query" (text) and "should_trigger" (true or false), as skill-creator writes them'


class RouteSetError(ValueError):
    pass


class TriggerCase(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    query: str = Field(min_length=1, max_length=MAX_QUERY)
    should_trigger: bool


class SavedQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    owner: str
    query: str = Field(min_length=1, max_length=MAX_QUERY)
    should_trigger: bool
    kind: Kind
    expected: str | None = None


_CASES = TypeAdapter(list[TriggerCase])
_SAVED = TypeAdapter(list[SavedQuery])


def _json(path: Path, fix: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise RouteSetError(f"{path}:{err.lineno}: not valid JSON ({err.msg}); {fix}") from None
    except UnicodeDecodeError:
        raise RouteSetError(f"{path}: not UTF-8 text; {fix}") from None
    except OSError as err:
        raise RouteSetError(f"{path}: cannot be read ({err.strerror}); {fix}") from None


def _validated(adapter: TypeAdapter, raw, path: Path, where: str, fix: str) -> list:
    try:
        return adapter.validate_python(raw)
    except ValidationError as err:
        first = err.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        raise RouteSetError(f"{path}: {where}{f'entry {at}' if at else 'the file'}: {first['msg']}; {fix}") from None


def as_queries(owner: str, cases: list[TriggerCase]) -> list[RouteQuery]:
    return [RouteQuery(owner, c.query, c.should_trigger, Kind.AUTHOR) for c in cases]


def read_triggers(skill_dir: Path, owner: str) -> list[RouteQuery] | None:
    """The author's trigger evals of a skill, or None when it has none; RouteSetError naming the file and the fix."""
    path = skill_dir / TRIGGERS_FILE
    if not path.is_file():
        return None
    fix = f"{TRIGGERS_FIX}; or move the file away to have queries designed"
    return as_queries(owner, _validated(_CASES, _json(path, fix), path, "", fix))


def read_eval_set(path: Path, skills: list[str]) -> dict[str, list[RouteQuery]]:
    """``--eval-set``: a list for the one skill named, or {skill: list}; every skill it names must be in the library."""
    raw = _json(path, TRIGGERS_FIX)
    if isinstance(raw, list):
        if len(skills) != 1:
            raise RouteSetError(f"{path}: a list of queries is one skill's; name that skill (luban route SKILL "
                                "--eval-set FILE), or write an object mapping each skill's name to its list")
        return {skills[0]: as_queries(skills[0], _validated(_CASES, raw, path, "", TRIGGERS_FIX))}
    if not isinstance(raw, dict):
        raise RouteSetError(f"{path}: expected a list of queries or an object of skill name → list; {TRIGGERS_FIX}")
    unknown = sorted(set(raw) - set(skills))
    if unknown:
        raise RouteSetError(f"{path}: no skill named {', '.join(map(repr, unknown))} in the library routed; "
                            f"its skills: {', '.join(skills[:12])}{' …' if len(skills) > 12 else ''}")
    return {skill: as_queries(skill, _validated(_CASES, cases, path, f"skill {skill!r}, ", TRIGGERS_FIX))
            for skill, cases in raw.items()}


def load_saved(workspace_root: Path) -> list[RouteQuery]:
    """The designed queries accepted earlier ([] when none were saved)."""
    path = workspace_root / SAVED_FILE
    if not path.is_file():
        return []
    fix = "fix it, or delete it to have the queries designed again"
    saved = _validated(_SAVED, _json(path, fix), path, "", fix)
    try:
        return [RouteQuery(s.owner, s.query, s.should_trigger, s.kind, s.expected) for s in saved]
    except ValueError as err:
        raise RouteSetError(f"{path}: {err}; {fix}") from None


def save(workspace_root: Path, queries: list[RouteQuery]) -> Path:
    path = workspace_root / SAVED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = [{"owner": q.owner, "query": q.text, "should_trigger": q.should_trigger, "kind": q.kind.value,
             "expected": q.expected} for q in queries]
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path

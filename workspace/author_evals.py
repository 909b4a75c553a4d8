"""The evals a skill's author wrote: ``evals/evals.json`` in the skill, as its test prompts.

The format the Agent Skills documentation and Anthropic's skill-creator use::

    {"skill_name": "pdf", "evals": [{"id": 1, "prompt": "...", "expected_output": "...", "files": ["..."],
                                     "assertions": ["..."]}]}

skill-creator spells the last ``"expectations"``; both are read. The cases are the author's: Luban uses them as they
are — never rewritten or appended to — and only picks which one is held out, the same one on every run (the saved
split is reused while the cases stay the same). A file that cannot be used is an error naming the file, the entry and
the fix; the run then designs prompts for that skill and says so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from workspace.atomic import atomic_write
from workspace.test_prompts import TestPrompt

EVALS_FILE = "evals/evals.json"
NO_EXPECTED = "(the author gave no expected output)"


class AuthorEvalsError(ValueError):
    pass


class EvalCase(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    id: int | str
    prompt: str = Field(min_length=1)
    expected_output: str = ""
    files: list[str] = Field(default_factory=list)
    assertions: list[str] = Field(default_factory=list, validation_alias=AliasChoices("assertions", "expectations"))


class EvalsFile(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    skill_name: str | None = None
    evals: list[EvalCase] = Field(min_length=1)


def read_cases(skill_dir: Path) -> list[EvalCase] | None:
    """The author's cases, or None when the skill has no evals file; AuthorEvalsError when it has one Luban cannot use."""
    path = skill_dir / EVALS_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise AuthorEvalsError(f"{path}:{err.lineno}: not valid JSON ({err.msg}); fix it, or move it away to have "
                               "prompts designed") from None
    except (UnicodeDecodeError, OSError) as err:
        raise AuthorEvalsError(f"{path}: cannot be read ({err}); save it as UTF-8 text") from None
    try:
        cases = EvalsFile.model_validate(raw).evals
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the top level"
        raise AuthorEvalsError(f"{path}: {where}: {first['msg']}; the file needs {{\"evals\": [{{\"id\", \"prompt\", "
                               "\"expected_output\", \"assertions\"}, ...]}") from None
    ids = [str(c.id) for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise AuthorEvalsError(f"{path}: evals: id {', '.join(repeated)} used more than once; give each case its own id")
    return cases


def as_prompts(cases: list[EvalCase], skill: str, saved: list[TestPrompt] | None) -> list[TestPrompt]:
    """The cases as test prompts, one held out: the saved split when the saved prompts are these cases, else a choice
    fixed by the skill's name and the cases (the same on every run while they do not change)."""
    prompts = [TestPrompt(id=c.id, type="main", prompt=c.prompt, expected=c.expected_output or NO_EXPECTED,
                          assertions=tuple(c.assertions), files=tuple(c.files)) for c in cases]
    if saved and [(p.id, p.prompt) for p in saved] == [(p.id, p.prompt) for p in prompts] and any(
            p.held_out for p in saved):
        return [p.model_copy(update={"held_out": s.held_out, "held_out_source": s.held_out_source})
                for p, s in zip(prompts, saved, strict=True)]
    if len(prompts) < 2:  # one case: it is what dim8 is measured on; nothing is left to hold out
        return prompts
    key = hashlib.sha256(json.dumps([skill, *[p.prompt for p in prompts]]).encode()).digest()
    chosen = int.from_bytes(key[:4], "big") % len(prompts)
    return [p.model_copy(update={"held_out": True, "held_out_source": "the author's case, held out by Luban"})
            if i == chosen else p for i, p in enumerate(prompts)]


def export_prompts(skill_dir: Path, prompts: list[TestPrompt]) -> Path:
    """Write the prompts Luban designed as the skill's ``evals/evals.json`` (asked for by a person: `luban
    export-evals`), so the author's own tools can run them; an evals file already there is the author's and stays."""
    path = skill_dir / EVALS_FILE
    if path.exists():
        raise AuthorEvalsError(f"{path} exists: it is the author's and is never overwritten; move it away first to "
                               "export Luban's prompts in its place")
    cases = [{"id": p.id, "prompt": p.prompt, "expected_output": p.expected, "files": list(p.files),
              "assertions": list(p.assertions)} for p in prompts]
    atomic_write(path, json.dumps({"skill_name": skill_dir.name, "evals": cases}, ensure_ascii=False, indent=2) + "\n")
    return path

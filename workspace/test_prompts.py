"""``test-prompts.json``: the prompts dim8 and the held-out gate run, validated on every read."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from workspace.atomic import atomic_write


class TestPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    __test__ = False  # not a pytest class, despite the name

    id: int | str
    type: Literal["main", "edge", "error"]
    prompt: str = Field(min_length=1)
    expected: str
    held_out: bool = False
    held_out_source: str | None = None  # set when Luban, not a person, chose it
    assertions: tuple[str, ...] = ()  # the author's checks (evals/evals.json), each graded pass/fail
    files: tuple[str, ...] = ()  # the author's input files for this case, relative to the skill


_LIST = TypeAdapter(list[TestPrompt])


class TestPromptsError(ValueError):
    __test__ = False


def load(path: Path) -> list[TestPrompt]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise TestPromptsError(
            f"{path}:{err.lineno}: not valid JSON ({err.msg}); fix it or delete it to have prompts designed again"
        ) from None
    except UnicodeDecodeError:
        raise TestPromptsError(f"{path}: not UTF-8 text; delete it to have prompts designed again") from None
    try:
        prompts = _LIST.validate_python(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise TestPromptsError(
            f"{path}: entry {where}: {first['msg']}; each prompt needs id, type (main/edge/error), prompt, expected, held_out"
        ) from None
    ids = [p.id for p in prompts]
    if len(set(ids)) != len(ids):
        raise TestPromptsError(f"{path}: prompt ids must be unique, got {ids}")
    return prompts


def save(path: Path, prompts: list[TestPrompt]) -> None:
    data = [{k: v for k, v in p.model_dump(exclude_none=True).items() if v != ()} for p in prompts]
    atomic_write(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def ensure_held_out(prompts: list[TestPrompt], seed: int) -> tuple[list[TestPrompt], TestPrompt | None]:
    """With no held-out prompt, mark one at random (seeded, and the seed recorded on it).

    Returns the prompts and the one newly marked (None when a person had already chosen).
    """
    if not prompts or any(p.held_out for p in prompts):
        return prompts, None
    chosen = random.Random(seed).randrange(len(prompts))
    marked = prompts[chosen].model_copy(update={"held_out": True, "held_out_source": f"random(seed={seed})"})
    return [marked if i == chosen else p for i, p in enumerate(prompts)], marked

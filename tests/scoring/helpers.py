from __future__ import annotations

import json

from scoring import score_skill
from scoring.document import parse

GOOD_DESCRIPTION = 'Formats SQL queries to the team style. Use when the user says "format this SQL".'


def skill_text(body: str, name: str = "demo-skill", description: str = GOOD_DESCRIPTION) -> str:
    return f"---\nname: {name}\ndescription: {json.dumps(description, ensure_ascii=False)}\n---\n{body}"


def doc(text: str):
    return parse(text)


def score(text: str | bytes, name: str = "demo-skill", files=frozenset(), **kw):
    return score_skill(text, name, files, **kw)

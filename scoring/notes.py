"""The note cell of a results.tsv row: free text plus ``key=value`` facts the governance layer reads back.

The ratchet writes, for example, ``strategy=stop-before-irreversible; expected=6.0;
rejected_hits=0; proposals=1; sha256=…; added a STOP before merging``. Keys are
lower-case words; values hold no ``;``. Anything that is not ``key=value`` is text.
"""

from __future__ import annotations

import re

_PAIR = re.compile(r"^([a-z_][a-z0-9_]*)=(.*)$")


def format_note(facts: dict[str, object], text: str = "") -> str:
    parts = [f"{key}={str(value).replace(';', ',')}" for key, value in facts.items() if value is not None and value != ""]
    if text:
        parts.append(" ".join(text.replace(";", ",").split()))
    return "; ".join(parts)


def parse_note(note: str) -> tuple[dict[str, str], str]:
    facts: dict[str, str] = {}
    text: list[str] = []
    for part in (p.strip() for p in note.split(";")):
        match = _PAIR.match(part)
        if match:
            facts[match.group(1)] = match.group(2).strip()
        elif part:
            text.append(part)
    return facts, "; ".join(text)


def fact_float(note: str, key: str) -> float | None:
    value = parse_note(note)[0].get(key)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None

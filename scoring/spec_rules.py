"""The Agent Skills specification (agentskills.io/specification) beyond dim1: its other frontmatter fields, keys it
does not define, its size guidance, and names a major client refuses — as findings at their lines (pure: a parsed
document in, findings out; they never change the score).

dim1 already checks ``name`` (1–64 lowercase letters, digits and single hyphens, the directory's name) and
``description`` (present, at most 1 024 characters). Here, as the specification says:

- ``license``: a string; ``compatibility``: a string of 1–500 characters; ``metadata``: a map of string keys to
  string values (a nested map or a list breaks strict clients); ``allowed-tools``: a space-separated string
  (experimental; a YAML list is Claude Code's form, not the specification's) — ``field_invalid``;
- a top-level key the specification does not define — ``unknown_key``, naming the field it is a typo of, or the
  client that reads it (Claude Code's own keys), or saying to move it under ``metadata``;
- the body over 500 lines or about 5 000 tokens (the specification's "keep SKILL.md under 500 lines" and
  "< 5 000 tokens recommended"; tokens estimated as four characters, or one CJK character, each) —
  ``body_too_long``;
- a key given twice (PyYAML keeps the last; js-yaml, which JavaScript clients use, refuses the file) —
  ``duplicate_key``;
- a ``name`` with a word Claude's API and claude.ai reserve (``anthropic``, ``claude``: skills named so are
  refused on upload), and XML tags in ``name`` or ``description``, which the same API refuses — ``reserved_name``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from scoring.document import SkillDocument
from scoring.model import Violation
from scoring.tokens import estimate_tokens

SPEC_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
CLIENT_KEYS = {key: "Claude Code" for key in ("when_to_use", "disable-model-invocation", "user-invocable", "model",
                                              "argument-hint", "context", "agent", "hooks")}
MAX_COMPATIBILITY = 500
MAX_BODY_LINES = 500
MAX_BODY_TOKENS = 5000
RESERVED_WORDS = ("anthropic", "claude")
_XML_TAG = re.compile(r"</?[A-Za-z][\w.-]*(\s[^<>]*)?/?>")
_KEY = re.compile(r"^([^\s#:'\"-][^:]*?|'[^']*'|\"[^\"]*\")\s*:(\s|$)")


def spec_violations(doc: SkillDocument) -> list[Violation]:
    """Every specification finding of ``doc`` (nothing when its frontmatter is missing or does not parse: dim1 and
    ``frontmatter_invalid`` say so already)."""
    found = _body_size(doc)
    if not isinstance(doc.frontmatter, dict):
        return found
    keys = _keys(doc.text)
    lines: dict[str, int] = {}
    for key, number in keys:
        lines.setdefault(key, number)
    found += _duplicate_keys(keys)
    for key, value in doc.frontmatter.items():
        line = lines.get(str(key), 2)
        if str(key) not in SPEC_FIELDS:
            found.append(Violation("unknown_key", line, _unknown(str(key))))
        problem = _field_problem(str(key), value)
        if problem:
            found.append(Violation("field_invalid", line, problem))
    name = doc.frontmatter.get("name")
    if isinstance(name, str):
        found += _reserved(name, lines.get("name", 2))
    description = doc.frontmatter.get("description")
    tag = _XML_TAG.search(description) if isinstance(description, str) else None
    if tag:
        found.append(Violation("reserved_name", lines.get("description", 2),
                               f"'description' holds an XML tag ({tag.group(0)[:40]!r}): Claude's API refuses a skill "
                               "whose description has one; write the word without brackets"))
    return found


def key_lines(text: str) -> dict[str, int]:
    """The line of each top-level key of the frontmatter (the text's first line is its opening ``---``)."""
    lines: dict[str, int] = {}
    for key, number in _keys(text):
        lines.setdefault(key, number)
    return lines


def _keys(text: str) -> list[tuple[str, int]]:
    """Every top-level key of the frontmatter with its line, in order, repeats included (only the frontmatter's
    lines are read: the body may be a thousand times longer)."""
    keys = []
    for number, line in enumerate(_frontmatter_lines(text), start=2):
        match = _KEY.match(line)
        if match:
            keys.append((match.group(1).strip("'\""), number))
    return keys


def _frontmatter_lines(text: str) -> Iterator[str]:
    start = text.find("\n") + 1
    while start:
        end = text.find("\n", start)
        line = text[start:] if end == -1 else text[start:end]
        if line.rstrip() == "---":
            return
        yield line
        start = end + 1 if end != -1 else 0


def _duplicate_keys(keys: list[tuple[str, int]]) -> list[Violation]:
    """A key given twice: YAML readers differ (PyYAML keeps the last, js-yaml and strictyaml refuse the file)."""
    first: dict[str, int] = {}
    found = []
    for key, number in keys:
        if key in first:
            found.append(Violation("duplicate_key", number, f"'{key}' is given again (first on line {first[key]}): "
                                   "YAML readers differ — some keep the last, some refuse the file; keep one"))
        first.setdefault(key, number)
    return found


def _field_problem(key: str, value: Any) -> str | None:
    if key == "license" and not isinstance(value, str):
        return f"'license' is {_kind(value)}; the specification's is a string: a license name or a bundled file"
    if key == "compatibility":
        if not isinstance(value, str) or not value.strip():
            return f"'compatibility' is {_kind(value)}; the specification's is a string of 1-500 characters"
        if len(value) > MAX_COMPATIBILITY:
            return (f"'compatibility' is {len(value)} characters, over the specification's {MAX_COMPATIBILITY}; say "
                    "only what the skill needs (product, system packages, network access)")
    if key == "metadata":
        if not isinstance(value, dict):
            return f"'metadata' is {_kind(value)}; the specification's is a map of string keys to string values"
        bad = [str(k) for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad:
            return (f"'metadata' holds {', '.join(repr(b) for b in bad[:3])} whose value is not a string (strict "
                    "clients refuse nested maps and lists): quote it, or flatten it into string keys")
    if key == "allowed-tools":
        if isinstance(value, list):
            return ("'allowed-tools' is a YAML list (Claude Code's form); the specification's is one space-separated "
                    f"string: allowed-tools: {' '.join(str(v) for v in value)[:80]}")
        if not isinstance(value, str) or not value.strip():
            return f"'allowed-tools' is {_kind(value)}; the specification's is a space-separated string of tool names"
    return None


def _unknown(key: str) -> str:
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    if key in CLIENT_KEYS:
        return (f"'{key}' is {CLIENT_KEYS[key]}'s key, not the specification's: other clients ignore it (fine in a "
                f"skill only {CLIENT_KEYS[key]} loads; else move it under 'metadata')")
    known = (*SPEC_FIELDS, *CLIENT_KEYS)
    near = process.extractOne(key.lower().replace("_", "-"), [k.replace("_", "-") for k in known],
                              scorer=Levenshtein.distance, score_cutoff=2)
    if near is not None:
        return f"'{key}' is not a field any client reads: did you mean '{known[near[2]]}'?"
    return (f"'{key}' is not in the Agent Skills specification and no major client reads it: clients ignore it; move "
            "it under 'metadata' (a map of strings)")


def _reserved(name: str, line: int) -> list[Violation]:
    found = [word for word in RESERVED_WORDS if word in name.lower()]
    if found:
        return [Violation("reserved_name", line, f"'name' holds '{found[0]}', a word Claude's API and claude.ai reserve: "
                          "they refuse to upload a skill so named; rename it")]
    if _XML_TAG.search(name):
        return [Violation("reserved_name", line, "'name' holds an XML tag, which Claude's API refuses; rename it")]
    return []


def _body_size(doc: SkillDocument) -> list[Violation]:
    body_lines = doc.body.count("\n") + (0 if doc.body.endswith("\n") else 1)
    if body_lines > MAX_BODY_LINES:
        return [Violation("body_too_long", doc.body_first_line + MAX_BODY_LINES,
                          f"the body is {body_lines} lines, over the specification's {MAX_BODY_LINES} (this is line "
                          f"{MAX_BODY_LINES + 1} of it): move detail into references/ files it links to")]
    tokens = estimate_tokens(doc.body)
    if tokens > MAX_BODY_TOKENS:
        return [Violation("body_too_long", doc.body_first_line,
                          f"the body is about {tokens:,} tokens, over the specification's {MAX_BODY_TOKENS:,}: it is "
                          "loaded whole whenever the skill is used; move detail into references/ files it links to")]
    return []


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, str):
        return "a string" if value.strip() else "an empty string"
    return {dict: "a map", list: "a list", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)

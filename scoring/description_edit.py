"""A skill's description replaced, and nothing else of its SKILL.md (pure): what a routing round writes.

The description's entry in the frontmatter — its key line and any lines that continue it (a block scalar, a wrapped
plain scalar) — is replaced by one line, the new description as a YAML scalar. Every other byte stays. The result is
parsed again, and refused unless its frontmatter is the old one with only the description changed.
"""

from __future__ import annotations

import re

import yaml

from scoring.document import parse
from scoring.spec_rules import spec_violations

MAX_DESCRIPTION = 1024  # the Agent Skills specification's most
_TOP_KEY = re.compile(r"^[^\s#:][^:]*:")


class DescriptionEditError(ValueError):
    pass


def with_description(text: str, new: str) -> str:
    """``text`` (decoded: LF line ends) with its frontmatter description replaced by ``new``; DescriptionEditError
    when it cannot be."""
    before = parse(text).frontmatter
    if not isinstance(before, dict) or not isinstance(before.get("description"), str):
        raise DescriptionEditError("the skill has no frontmatter description to replace")
    lines = text.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    start = next((i for i in range(1, end or 0) if lines[i].startswith("description:")), None)
    if end is None or start is None:
        raise DescriptionEditError("the description is not a top-level 'description:' line of the frontmatter")
    stop = start + 1
    while stop < end and not _TOP_KEY.match(lines[stop]) and not lines[stop].startswith("#"):
        stop += 1  # the lines that continue the entry: indented, or blank inside a block scalar
    entry = yaml.safe_dump({"description": new}, allow_unicode=True, width=1 << 20, default_flow_style=False).rstrip("\n")
    result = "\n".join([*lines[:start], *entry.split("\n"), *lines[stop:]])
    after = parse(result).frontmatter
    if not isinstance(after, dict) or after != {**before, "description": new}:
        raise DescriptionEditError("replacing the description would change other frontmatter; edit it by hand")
    return result


def description_problems(old_text: str, new_text: str) -> list[str]:
    """Why the new description may not be written: the specification's limits, and findings the old text did not have."""
    doc = parse(new_text)
    description = doc.frontmatter.get("description") if isinstance(doc.frontmatter, dict) else None
    problems = []
    if not isinstance(description, str) or not description.strip():
        problems.append("the description is empty")
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"the description has {len(description)} characters; at most {MAX_DESCRIPTION}")
    had = {(v.kind, v.message) for v in spec_violations(parse(old_text))}
    problems += [v.message for v in spec_violations(doc) if (v.kind, v.message) not in had]
    return problems

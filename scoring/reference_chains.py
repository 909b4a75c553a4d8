"""References more than one level deep from SKILL.md (the specification's "keep file references one level deep"):
a file SKILL.md links to that links on to another file of the skill SKILL.md does not link to itself. An agent
reads a file reached that way partly, or not at all (Anthropic's skill authoring guide: it may preview such a file
with `head`). Pure: what the referenced files link to is read by the caller (``luban score``) and passed in.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Mapping, Sequence

from scoring.model import Reference, Violation
from scoring.validation import RESOURCE_FOLDERS

_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)")
_CODE_PATH = re.compile(rf"`((?:{RESOURCE_FOLDERS})/[^`\s]+)`")
_EXTERNAL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|#|/)")


def followed(refs: Sequence[Reference]) -> list[str]:
    """The Markdown files SKILL.md references that exist in the skill: the ones whose own links are read next."""
    return sorted({_clean(r.target) for r in refs if r.status == "exists" and _clean(r.target).endswith(".md")})


def onward_targets(referencing: str, text: str, files: Collection[str]) -> list[str]:
    """The files of the skill that ``text`` (the file at ``referencing``) links to: a path as the file's own
    folder resolves it, or as the skill's root does (authors write both)."""
    found = []
    for raw in [*_LINK.findall(text), *_CODE_PATH.findall(text)]:
        target = re.split(r"[?#]", raw, maxsplit=1)[0]
        if not target or _EXTERNAL.match(target):
            continue
        for candidate in (posixpath.normpath(posixpath.join(posixpath.dirname(referencing), target)), _clean(target)):
            if candidate in files and candidate != referencing:
                found.append(candidate)
                break
    return sorted(set(found))


def deep_references(refs: Sequence[Reference], onward: Mapping[str, Sequence[str]]) -> list[Violation]:
    """A finding at each SKILL.md line that references a file linking on to files SKILL.md does not reference."""
    direct = {_clean(r.target) for r in refs if r.status == "exists"} | {"SKILL.md"}
    found = []
    for ref in refs:
        deeper = [t for t in onward.get(_clean(ref.target), ()) if t not in direct]
        if ref.status == "exists" and deeper:
            shown = ", ".join(deeper[:3]) + (f" and {len(deeper) - 3} more" if len(deeper) > 3 else "")
            found.append(Violation("deep_reference", ref.line,
                                   f"{_clean(ref.target)} links on to {shown}, which SKILL.md does not reference: an "
                                   "agent may read a file reached that way only in part; reference it from SKILL.md"))
    return found


def _clean(target: str) -> str:
    return posixpath.normpath(target).removeprefix("./")

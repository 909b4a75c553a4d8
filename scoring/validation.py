"""exec_validate: findings that do not change the score (RUBRIC.md "Validation").

The reference scan never opens a file: it compares each referenced path with
the set of files that exist under the skill directory, passed in by the
caller, so no path a skill names can make Luban read outside its directory.

Readings where RUBRIC.md is silent:
- A ``..`` segment anywhere in a reference counts as leaving the directory,
  even where it would come back (``references/../SKILL.md``): the path is
  suspicious, and judging it would need resolving it. A leading ``~`` is a
  home directory, so it escapes too.
- ``?query`` and ``#fragment`` are not part of the path; percent-escapes are
  decoded; a reference to a directory exists when a file lies under it.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from scoring.document import SkillDocument
from scoring.model import Reference, Violation

_MERGE_MARKER_TEXTS = ("<<<<<<< ", ">>>>>>> ", "=======")
_MERGE_MARKER = re.compile(r"^(<<<<<<< |>>>>>>> |=======$)", re.MULTILINE)
_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
RESOURCE_FOLDERS = "references|scripts|assets|examples|templates"  # a code span under one of these is a reference
_CODE_SPAN_PATH = re.compile(rf"^({RESOURCE_FOLDERS})/\S+$")


def merge_markers(text: str) -> list[Violation]:
    found: list[Violation] = []
    if not any(marker in text for marker in _MERGE_MARKER_TEXTS):
        return found  # almost every file: str.find in C rather than a regex tried at every line
    for match in _MERGE_MARKER.finditer(text):
        start = match.start()
        end = text.find("\n", start)
        line = text[start : len(text) if end == -1 else end]
        found.append(Violation(
            "merge_marker", text.count("\n", 0, start) + 1,
            f"unresolved merge/stash marker '{line[:20]}'; resolve the conflict and delete the marker lines",
        ))
    return found


def frontmatter_violations(doc: SkillDocument) -> list[Violation]:
    if doc.frontmatter_error is None:
        return []
    return [Violation("frontmatter_invalid", doc.frontmatter_error.line, doc.frontmatter_error.message)]


def _reference_path(target: str) -> str | None:
    """The file path a link target names, or None when it is a URL or an anchor."""
    target = target.strip()
    if not target or target.startswith("#"):
        return None
    if _URL_SCHEME.match(target) and not _WINDOWS_DRIVE.match(target):
        return None
    return re.split(r"[?#]", target, maxsplit=1)[0]


def _status(path: str, files: AbstractSet[str]) -> str:
    parts = re.split(r"[\\/]", path)
    if path.startswith(("/", "\\", "~")) or _WINDOWS_DRIVE.match(path) or ".." in parts:
        return "escapes"
    relative = "/".join(p for p in parts if p not in ("", "."))
    if not relative:
        return "exists"  # './' is the skill directory itself
    if relative in files or any(f.startswith(relative + "/") for f in files):
        return "exists"
    return "missing"


def scan_references(doc: SkillDocument, files: AbstractSet[str]) -> list[Reference]:
    """Every reference in the body, in order, with whether it exists, is missing, or escapes.

    ``files`` holds POSIX paths relative to the skill directory.
    """
    refs: list[Reference] = []
    for link in doc.links:
        if link.from_code_span:
            if not _CODE_SPAN_PATH.match(link.target):
                continue
            path: str | None = link.target
        else:
            path = _reference_path(link.target)
        if path is None:
            continue
        refs.append(Reference(path, link.line, _status(path, files)))  # type: ignore[arg-type]
    return refs


def reference_violations(refs: list[Reference]) -> list[Violation]:
    out = []
    for ref in refs:
        if ref.status == "missing":
            out.append(Violation(
                "missing_reference", ref.line,
                f"references '{ref.target}', which does not exist in the skill directory; add the file or fix the path",
            ))
        elif ref.status == "escapes":
            out.append(Violation(
                "escaping_reference", ref.line,
                f"references '{ref.target}', outside the skill directory; keep referenced files under the skill",
            ))
    return out

"""Turn a SKILL.md's bytes into the structure every rule reads (RUBRIC.md "Input").

The Markdown is parsed exactly once per file (markdown-it-py, ``commonmark``
preset); headings, paragraphs, links and code spans are collected in that one
walk so no rule re-parses. Line numbers are 1-based lines of the decoded file.

Readings where RUBRIC.md is silent, recorded here as it asks:
- "empty" means nothing but white space after decoding: such a file has no
  skill in it to score.
- Frontmatter whose opening ``---`` is never closed is invalid frontmatter; the
  body is then the whole text, since no block could be delimited.
- A heading's or paragraph's rendered text joins text, code spans and image alt
  text; raw HTML is markup. (RUBRIC.md: each soft or hard line break reads as one
  space, so a setext heading over two lines is one phrase: ``How to`` / ``use``
  is "How to use".)
- Any exception the YAML loader raises means the frontmatter does not parse
  (RUBRIC.md): libyaml raises ValueError for ``2024-02-30`` and others for unknown
  tags, not only YAMLError; the skill is still scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from scoring.markdown_walk import Heading, LinkTarget, Paragraph, walk

MAX_BYTES = 2 * 1024 * 1024
# libyaml's loader when PyYAML was built with it: same documents, same marks, ~10x faster.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UnreadableSkill(ValueError):
    """The file cannot be scored at all (RUBRIC.md: not UTF-8, empty, over 2 MiB)."""


@dataclass(frozen=True)
class FrontmatterError:
    line: int
    message: str


@dataclass(frozen=True)
class SkillDocument:
    text: str
    frontmatter: dict[str, Any] | None
    frontmatter_present: bool
    frontmatter_error: FrontmatterError | None
    body: str
    body_first_line: int
    headings: tuple[Heading, ...]
    paragraphs: tuple[Paragraph, ...]
    links: tuple[LinkTarget, ...]
    html_comments: tuple[tuple[int, str], ...] = ()  # (line, text) of each comment Markdown passes through as HTML
    # (line, label and title) of each link definition that links nowhere — `[//]: # (text)`, `[x]: <> (text)`:
    # Markdown's comment idiom, which renders as nothing at all
    comment_definitions: tuple[tuple[int, str], ...] = ()


def decode(data: bytes) -> str:
    """UTF-8 with the BOM dropped and every line break made LF; raises UnreadableSkill."""
    if len(data) > MAX_BYTES:
        raise UnreadableSkill(
            f"file is {len(data):,} bytes, over the 2 MiB limit; split it, moving detail into references/"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise UnreadableSkill(
            f"not valid UTF-8 at byte {err.start} (line {line}); re-save the file as UTF-8"
        ) from None
    return normalize_text(text)


def normalize_text(text: str) -> str:
    """Drop the BOM and make every line break LF; raises UnreadableSkill when empty."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise UnreadableSkill("file is empty; a SKILL.md needs frontmatter and instructions")
    return text


def parse(text: str) -> SkillDocument:
    """Split frontmatter from body and collect the Markdown structure of the body."""
    fm_present = text == "---" or text.startswith("---\n")  # the first line is exactly '---'
    frontmatter, fm_error, body_start, body = None, None, 0, text
    if fm_present:
        closing = _closing_line(text)
        if closing is None:
            fm_error = FrontmatterError(1, "frontmatter opened with '---' on line 1 is never closed; add a '---' line after it")
        else:
            index, start, end = closing
            frontmatter, fm_error = _load_yaml(text[4 : start - 1])
            body_start, body = index + 1, text[end + 1 :]
    headings, paragraphs, links, comments, definitions = walk(body, body_start)
    return SkillDocument(
        text=text,
        frontmatter=frontmatter,
        frontmatter_present=fm_present,
        frontmatter_error=fm_error,
        body=body,
        body_first_line=body_start + 1,
        headings=headings,
        paragraphs=paragraphs,
        links=links,
        html_comments=comments,
        comment_definitions=definitions,
    )


def _closing_line(text: str) -> tuple[int, int, int] | None:
    """The first line after the opening '---' that is exactly '---' or '...': its index and where it starts and ends.

    Found line by line with ``str.find`` rather than by splitting the whole text,
    which would cut every line of the body only to join them again.
    """
    index, start = 1, 4
    while start <= len(text):
        newline = text.find("\n", start)
        end = len(text) if newline == -1 else newline
        if text[start:end] in ("---", "..."):
            return index, start, end
        if newline == -1:
            return None
        index, start = index + 1, newline + 1
    return None


def _load_yaml(source: str) -> tuple[dict[str, Any] | None, FrontmatterError | None]:
    try:
        value = yaml.load(source, Loader=_YAML_LOADER)  # a safe loader
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 2 if mark else 1  # +1 for 1-based, +1 for the opening '---'
        return None, FrontmatterError(line, f"frontmatter is not valid YAML: {err.problem or err}")
    except yaml.YAMLError as err:
        return None, FrontmatterError(1, f"frontmatter is not valid YAML: {err}")
    except Exception as err:  # noqa: BLE001 - RUBRIC.md: any loader exception (a date like 2024-02-30, a bad tag) is "does not parse"
        return None, FrontmatterError(_failing_value_line(source), f"frontmatter does not load as YAML "
                                      f"({type(err).__name__}: {err}); quote the value, e.g. date: \"2024-02-30\"")
    if not isinstance(value, dict):
        kind = "empty" if value is None else f"a {type(value).__name__}"
        return None, FrontmatterError(2, f"frontmatter is {kind}, not a mapping; write 'name: …' and 'description: …' lines")
    return value, None


def _failing_value_line(source: str) -> int:
    """The file line of the first top-level value that will not construct (errors such as ValueError carry no mark)."""
    try:
        root = yaml.compose(source, Loader=_YAML_LOADER)  # composing builds nodes, runs no tags
    except Exception:  # noqa: BLE001 - no line to point at beyond the frontmatter's first
        return 2
    pairs = root.value if isinstance(root, yaml.MappingNode) else []
    for key, value in pairs:
        try:
            yaml.constructor.SafeConstructor().construct_object(value, deep=True)
        except Exception:  # noqa: BLE001 - this is the value the loader could not build
            return key.start_mark.line + 2  # +1 for 1-based, +1 for the opening '---'
    return 2

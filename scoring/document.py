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

import functools
import re
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import unquote

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

MAX_BYTES = 2 * 1024 * 1024
# The commonmark preset without two core rules whose work the scorer does anyway, about 7 % of
# the parse (benchmarks/score_throughput.py): text_join, which merges adjacent text tokens
# (render_inline concatenates a block's text whatever its pieces), and, unless the body still
# holds a CR or NUL, normalize, which rewrites every line break to LF and NUL to U+FFFD with one
# regex replacement per line (decode() has already made every break LF).
_PARSER = MarkdownIt("commonmark").disable("text_join")
_PARSER_ON_NORMALIZED = MarkdownIt("commonmark").disable(["normalize", "text_join"])
# The scorer's own walk takes the block structure first and runs markdown-it's inline parser only on the blocks
# that hold inline markup: a block whose text has none of the characters any CommonMark inline rule other than
# text and newline starts on (\\ ` * _ [ < &; an image needs its [) parses to text and line breaks alone, which
# _plain_text renders exactly as render_inline would (tests/scoring/test_document_parse.py checks the two agree).
# A block rule that cannot match anywhere in a body is left out of its parse: it would be tried, and fail, at every
# line. Each needs one of these strings in the body to apply at all (indented code: four spaces or a tab; two
# substring searches in C, where the regex ' {4}|\t' read the body ten times slower).
_BLOCK_RULE_NEEDS = {"html_block": ("<",), "reference": ("[",), "blockquote": (">",), "fence": ("```", "~~~"),
                     "heading": ("#",), "code": ("    ", "\t")}
# ... or text of this shape: a thematic break three of * - _ (spaces between allowed); a setext underline a line
# of = or - alone (after indentation or '>').
_BLOCK_RULE_LINES = {"hr": re.compile(r"([*_-])[ \t]*\1[ \t]*\1"),
                     "lheading": re.compile(r"^[ \t>]*(?:=+|-+)[ \t]*$", re.MULTILINE)}
_HTML_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
_INLINE_MARKUP = re.compile(r"[\\`*_\[<&]")
# libyaml's loader when PyYAML was built with it: same documents, same marks, ~10x faster.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TEXT_TOKENS = {"text", "text_special", "code_inline"}
_BREAK_TOKENS = {"softbreak", "hardbreak"}


class UnreadableSkill(ValueError):
    """The file cannot be scored at all (RUBRIC.md: not UTF-8, empty, over 2 MiB)."""


# Headings, paragraphs and links are NamedTuples, not frozen dataclasses: a file
# holds hundreds, and a frozen dataclass's __init__ costs ~5x a tuple's, which
# showed in scorer/parse_floor (benchmarks/score_throughput.py).
class Heading(NamedTuple):
    level: int
    text: str
    line: int


class Paragraph(NamedTuple):
    text: str
    line: int
    end_line: int  # last line of the paragraph, inclusive


class LinkTarget(NamedTuple):
    """A link or image destination, or a path-like code span, as written."""

    target: str
    line: int
    from_code_span: bool


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
    headings, paragraphs, links, comments, definitions = _walk(body, body_start)
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


Walked = tuple[tuple[Heading, ...], tuple[Paragraph, ...], tuple[LinkTarget, ...], tuple[tuple[int, str], ...],
               tuple[tuple[int, str], ...]]


def _walk(body: str, line_offset: int) -> Walked:
    parser = _block_parser("\r" in body or "\0" in body, _rules_that_cannot_match(body))
    env: dict[str, Any] = {}  # link reference definitions the block pass found, for the inline pass
    tokens = parser.parse(body, env)
    headings: list[Heading] = []
    paragraphs: list[Paragraph] = []
    links: list[LinkTarget] = []
    comments: list[tuple[int, str]] = []
    body_lines = _LazyLines(body)
    for i, tok in enumerate(tokens):
        if tok.type == "html_block" and "<!--" in tok.content:
            comments += _comments_in(tok.content, (tok.map[0] if tok.map else 0) + line_offset + 1)
        if tok.type != "inline" or i == 0:
            continue
        marked = _INLINE_MARKUP.search(tok.content) is not None
        if marked:
            tok.children = []
            parser.inline.parse(tok.content, parser, env, tok.children)
        opener = tokens[i - 1]
        first = (tok.map[0] if tok.map else 0) + line_offset + 1
        if opener.type in ("heading_open", "paragraph_open"):
            text = render_inline(tok.children or []) if marked else _plain_text(tok.content)
            if opener.type == "heading_open":
                headings.append(Heading(int(opener.tag[1]), text, first))
            else:
                paragraphs.append(Paragraph(text, first, (tok.map[1] if tok.map else 1) + line_offset))
        if marked:
            links.extend(_targets(tok.children or [], body_lines, tok.map, first))
            comments += _inline_comments(tok.content, tok.children or [], first)
    definitions = tuple((line_offset + 1 + (ref["map"][0] if ref.get("map") else 0), f"{label} {ref.get('title', '')}".strip())
                        for label, ref in env.get("references", {}).items() if ref.get("href") in ("", "#"))
    return tuple(headings), tuple(paragraphs), tuple(links), tuple(comments), definitions


def _inline_comments(content: str, children: list[Token], first_line: int) -> list[tuple[int, str]]:
    """(line, text) of the HTML comments among a block's inline tokens, found in order through its content."""
    found, search_from, counted, line = [], 0, 0, first_line
    for child in children:
        if child.type == "html_inline" and child.content.startswith("<!--"):
            where = content.find(child.content, search_from)
            if where != -1:
                line, counted = line + content.count("\n", counted, where), where
                search_from = where + len(child.content)
            found.append((line, child.content[4:-3]))
    return found


def _comments_in(html: str, first_line: int) -> list[tuple[int, str]]:
    return [(first_line + html.count("\n", 0, m.start()), m.group(1)) for m in _HTML_COMMENT.finditer(html)]


def _rules_that_cannot_match(body: str) -> frozenset[str]:
    absent = {rule for rule, needs in _BLOCK_RULE_NEEDS.items() if not any(n in body for n in needs)}
    return frozenset(absent | {rule for rule, shape in _BLOCK_RULE_LINES.items() if not shape.search(body)})


@functools.cache
def _block_parser(normalize: bool, cannot_match: frozenset[str]) -> MarkdownIt:
    """The commonmark preset for the scorer's walk: no text_join, no inline pass (run per block where needed), no
    normalize where decode() already did its work, and none of the block rules that cannot match this body."""
    return MarkdownIt("commonmark").disable(["text_join", "inline", *([] if normalize else ["normalize"]), *cannot_match])


def _plain_text(content: str) -> str:
    """render_inline's text for inline content without markup: markdown-it's newline rule drops the spaces before
    each line break (not tabs) and the spaces and tabs after it, and a break renders as one space."""
    if "\n" not in content:
        return content.strip()
    lines = content.split("\n")
    middle = [line.lstrip(" \t").rstrip(" ") for line in lines[1:-1]]
    return " ".join([lines[0].rstrip(" "), *middle, lines[-1].lstrip(" \t")]).strip()


def markdown_tokens(body: str) -> list[Token]:
    """The body's CommonMark tokens, as the scorer parses them (see ``_PARSER``)."""
    return (_PARSER if "\r" in body or "\0" in body else _PARSER_ON_NORMALIZED).parse(body)


def render_inline(children: list[Token]) -> str:
    """The text a reader sees: text, code spans and image alt text; markup dropped."""
    parts: list[str] = []
    for child in children:
        if child.type in _TEXT_TOKENS:
            parts.append(child.content)
        elif child.type in _BREAK_TOKENS:
            parts.append(" ")
        elif child.type == "image" and child.children:
            parts.append(render_inline(child.children))
    return "".join(parts).strip()


class _LazyLines:
    """The body's lines, split when a link first needs them: most blocks hold none."""

    def __init__(self, text: str):
        self._text: str = text
        self._lines: list[str] | None = None

    def span(self, block_map: list[int]) -> list[str]:
        lines = self._lines if self._lines is not None else self._text.split("\n")
        self._lines = lines
        return lines[block_map[0] : block_map[1]]


def _targets(children: list[Token], body_lines: _LazyLines, block_map: list[int] | None, first_line: int) -> list[LinkTarget]:
    found: list[LinkTarget] = []
    for child in children:
        if child.type == "link_open":
            target, is_code = unquote(str(child.attrs.get("href", ""))), False
        elif child.type == "image":
            target, is_code = unquote(str(child.attrs.get("src", ""))), False
        elif child.type == "code_inline":
            target, is_code = child.content, True
        else:
            continue
        span = body_lines.span(block_map) if block_map else []
        found.append(LinkTarget(target, _line_of(target, span, first_line), is_code))
    return found


def _line_of(needle: str, span: list[str], first_line: int) -> int:
    """Inline tokens carry no line; find the line of their block that holds the text."""
    for offset, line in enumerate(span):
        if needle and needle in line:
            return first_line + offset
    return first_line

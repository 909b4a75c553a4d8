"""The one walk over a SKILL.md body's Markdown: headings, paragraphs, links and path-like code spans, HTML comments
and link definitions that link nowhere, with their 1-based lines (``scoring.document.parse`` calls it once a file).

markdown-it-py's ``commonmark`` preset, trimmed to what a body needs: block rules that cannot match it are left out
of its parse, and the inline pass runs only on blocks that hold inline markup.
"""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token

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
_TEXT_TOKENS = {"text", "text_special", "code_inline"}
_BREAK_TOKENS = {"softbreak", "hardbreak"}


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


Walked = tuple[tuple[Heading, ...], tuple[Paragraph, ...], tuple[LinkTarget, ...], tuple[tuple[int, str], ...],
               tuple[tuple[int, str], ...]]


def walk(body: str, line_offset: int) -> Walked:
    """The body's structure, its lines counted from ``line_offset`` (the lines before the body)."""
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

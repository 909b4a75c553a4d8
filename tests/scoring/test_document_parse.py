"""The scorer's walk runs markdown-it's inline parser only on blocks with inline markup: it must find exactly what a
full CommonMark parse of every block finds (headings, paragraphs, their text and lines, every link), on generated
Markdown, the shipped examples, generated skills and, when present, the public corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.document import parse
from scoring.markdown_walk import Heading, LinkTarget, Paragraph, _LazyLines, _targets, markdown_tokens, render_inline
from tests.conftest import REPO_ROOT
from tests.support.generated_skills import write_generated


def full_walk(body: str, line_offset: int) -> tuple[tuple[Heading, ...], tuple[Paragraph, ...], tuple[LinkTarget, ...]]:
    """The walk over a full parse (inline markup parsed in every block): the reference."""
    tokens = markdown_tokens(body)
    headings, paragraphs, links = [], [], []
    lines = _LazyLines(body)
    for i, tok in enumerate(tokens):
        if tok.type != "inline" or i == 0:
            continue
        opener, first = tokens[i - 1], (tok.map[0] if tok.map else 0) + line_offset + 1
        if opener.type == "heading_open":
            headings.append(Heading(int(opener.tag[1]), render_inline(tok.children or []), first))
        elif opener.type == "paragraph_open":
            paragraphs.append(Paragraph(render_inline(tok.children or []), first, (tok.map[1] if tok.map else 1) + line_offset))
        links.extend(_targets(tok.children or [], lines, tok.map, first))
    return tuple(headings), tuple(paragraphs), tuple(links)


def agrees(text: str) -> None:
    doc = parse(text)
    assert (doc.headings, doc.paragraphs, doc.links) == full_walk(doc.body, doc.body_first_line - 1)


PIECES = st.sampled_from(["word", "Do not", " ", "  ", "\t", "\n", "\n\n", "# ", "## ", "- ", "1. ", "> ", "    ",
                          "`code`", "*em*", "_x_", "**b**", "[a](references/a.md)", "![i](assets/i.png)", "<http://x>",
                          "&amp;", "\\*", "[ref]", "\n[ref]: references/r.md\n", "---", "===", "```\nfenced\n```",
                          "<div>", "!", "~", "中文", "\u00a0", "\u3000", ":", "|", "a  \nb", "x \t\ny", "***", "___",
                          "- - -", "\n   ---\n", "\t\tcode", "~~~\nt\n~~~", "\n  =\n"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=40).map("".join))
def test_the_walk_agrees_with_a_full_parse_on_generated_markdown(body: str):
    agrees(body)


def test_the_walk_agrees_with_a_full_parse_on_real_and_generated_skills(tmp_path: Path):
    files = sorted((REPO_ROOT / "skills").rglob("SKILL.md"))
    files += sorted(write_generated(tmp_path, count=40, seed=3).rglob("SKILL.md"))
    for path in files:
        agrees(path.read_text(encoding="utf-8"))


def test_the_walk_agrees_with_a_full_parse_on_the_corpus(skill_collection: Path):
    files = sorted(skill_collection.rglob("SKILL.md"))
    if not files:
        pytest.skip(f"no SKILL.md under {skill_collection}")
    for path in files:
        agrees(path.read_text(encoding="utf-8"))

"""Null variants render to exactly what the skill renders to, and no two of a text are the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from scoring.document import parse
from scoring.null_variants import null_variant

RENDER = MarkdownIt("commonmark")
SKILLS = Path(__file__).resolve().parents[2] / "skills"


def check_variants(text: str, count: int = 48) -> None:
    seen = {text}
    for index in range(1, count + 1):
        variant = null_variant(text, index)
        assert variant not in seen, f"variant {index} repeats an earlier one"
        seen.add(variant)
        assert RENDER.render(variant) == RENDER.render(text), f"variant {index} renders otherwise"
        assert parse(variant).frontmatter == parse(text).frontmatter


def test_variant_zero_is_the_text_and_the_rest_differ_from_it():
    text = (SKILLS / "pr-review" / "SKILL.md").read_text(encoding="utf-8")
    assert null_variant(text, 0) == text
    assert null_variant(text, 1) != text and null_variant(text, 1) == null_variant(text, 1)
    with pytest.raises(ValueError):
        null_variant(text, -1)


@pytest.mark.parametrize("skill", sorted(p.parent.name for p in SKILLS.glob("*/SKILL.md")))
def test_the_example_skills_variants_render_the_same_and_are_all_different(skill: str):
    check_variants((SKILLS / skill / "SKILL.md").read_text(encoding="utf-8"), 200)


def test_real_and_generated_skills_variants_render_the_same(skill_collection: Path):
    for path in sorted(skill_collection.rglob("SKILL.md"))[:40]:
        check_variants(path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n"), 16)  # 200 on ours


def test_code_blocks_and_the_frontmatter_are_never_touched():
    text = "---\nname: x\ndescription: d\n---\n\n# X\n\n```\ncode line\n\nmore code\n```\n\n    indented code\n\nText.\n"
    for index in range(1, 64):
        variant = null_variant(text, index)
        assert "```\ncode line\n\nmore code\n```" in variant and "    indented code\n" in variant
        assert variant.startswith("---\nname: x\ndescription: d\n---\n")


def test_a_text_with_nothing_to_vary_still_gets_distinct_variants():
    check_variants("one line", 20)


MARKDOWN_LINE = st.sampled_from(["", "# Title", "## Steps", "1. Do this", "2. Then that", "- a bullet", "  continued",
                                 "Plain prose here.", "> a quote", "```", "code()", "    indented", "<div>", "</div>",
                                 "| a | b |", "|---|---|", "Text with `code` and [a link](x.md).", "***", "Setext", "===="])


@settings(max_examples=150, deadline=None)
@given(st.lists(MARKDOWN_LINE, min_size=1, max_size=30))
def test_any_markdown_variant_renders_the_same(lines: list[str]):
    check_variants("\n".join(lines) + "\n", 12)

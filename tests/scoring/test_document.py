"""RUBRIC.md "Input": decoding, frontmatter boundaries, and what CommonMark calls a heading."""

from __future__ import annotations

import re

import pytest

from scoring.document import MAX_BYTES, UnreadableSkill, decode, parse


def test_bom_is_dropped_and_crlf_and_cr_become_lf():
    assert decode("\ufeffa\r\nb\rc\n".encode("utf-8")) == "a\nb\nc\n"


def test_crlf_file_parses_like_lf_file():
    lf = "---\nname: x\ndescription: y\n---\n# Title\n\n## Steps\n"
    crlf = "\ufeff" + lf.replace("\n", "\r\n")
    a, b = parse(decode(lf.encode())), parse(decode(crlf.encode()))
    assert a.frontmatter == b.frontmatter == {"name": "x", "description": "y"}
    assert [(h.level, h.text, h.line) for h in a.headings] == [(h.level, h.text, h.line) for h in b.headings]


@pytest.mark.parametrize(
    "data, needle",
    [
        (b"\xff\xfe\x00bad", "not valid UTF-8 at byte 0 (line 1)"),
        (b"ok\nok\n\xc3(", "line 3"),
        (b"", "empty"),
        (b"  \n\t\n", "empty"),
        (b"\xef\xbb\xbf", "empty"),
        (b"a" * (MAX_BYTES + 1), "over the 2 MiB limit"),
    ],
)
def test_unreadable_inputs_say_why(data, needle):
    with pytest.raises(UnreadableSkill, match=re.escape(needle)):
        decode(data)


def test_exactly_two_mib_is_still_readable():
    assert len(decode(b"a" * MAX_BYTES)) == MAX_BYTES


def test_frontmatter_only_when_first_line_is_exactly_three_dashes():
    assert parse(" ---\nname: x\n---\nbody").frontmatter is None
    assert parse("----\nname: x\n----\n").frontmatter_present is False
    assert parse("\n---\nname: x\n---\n").frontmatter is None


def test_frontmatter_closes_at_dots_line():
    d = parse("---\nname: x\n...\n# Body\n")
    assert d.frontmatter == {"name": "x"}
    assert d.body == "# Body\n"
    assert d.body_first_line == 4


def test_closing_line_must_be_exact():
    d = parse("---\nname: x\n--- \ndescription: y\n---\n# B\n")
    # '--- ' (trailing space) does not close the block; inside it YAML reads a second document
    assert d.frontmatter is None
    assert d.frontmatter_error is not None and d.frontmatter_error.line == 3
    assert d.body == "# B\n"


@pytest.mark.parametrize("text, frontmatter, body, first_line", [
    ("---\nname: x\n---", {"name": "x"}, "", 4),  # the closing line is the last, with no line break after it
    ("---\n---\n# B\n", None, "# B\n", 3),  # an empty block: closed, but not a mapping
    ("---", None, "---", 1),  # opened on the only line, never closed
    ("---\n", None, "---\n", 1),
    ("---\nname: x\n---\n---\n", {"name": "x"}, "---\n", 4),  # only the first closing line closes
])
def test_frontmatter_boundaries_at_the_edges_of_the_text(text, frontmatter, body, first_line):
    d = parse(text)
    assert d.frontmatter_present and d.frontmatter == frontmatter
    assert d.body == body and d.body_first_line == first_line


def test_no_frontmatter_means_whole_text_is_body():
    d = parse("# Title\ntext\n")
    assert d.frontmatter is None and not d.frontmatter_present
    assert d.body == "# Title\ntext\n" and d.body_first_line == 1


def test_unterminated_frontmatter_is_invalid_and_body_is_whole_text():
    d = parse("---\nname: x\ndescription: y\n# Heading\n")
    assert d.frontmatter is None
    assert d.frontmatter_error is not None and "never closed" in d.frontmatter_error.message
    assert d.body.startswith("---\n")


def test_yaml_error_line_points_into_the_file():
    d = parse("---\nname: x\ndescription: [unclosed\nother: 1\n---\nbody\n")
    assert d.frontmatter is None
    assert d.frontmatter_error is not None
    assert 3 <= d.frontmatter_error.line <= 5


@pytest.mark.parametrize("yaml_text, kind", [("- a\n- b", "list"), ("just text", "str"), ("", "empty"), ("42", "int")])
def test_non_mapping_frontmatter_is_invalid(yaml_text, kind):
    d = parse(f"---\n{yaml_text}\n---\nbody\n")
    assert d.frontmatter is None
    assert d.frontmatter_error is not None and kind in d.frontmatter_error.message


def test_safe_loader_refuses_python_tags():
    d = parse("---\nname: !!python/object/apply:os.system ['echo hi']\n---\n")
    assert d.frontmatter is None and d.frontmatter_error is not None


def test_headings_inside_fenced_code_and_html_blocks_are_not_headings():
    body = "# Real\n\n```\n# not a heading\n```\n\n~~~md\n## nor this\n~~~\n\n<div>\n# nor this\n</div>\n\n## Real two\n"
    d = parse(body)
    assert [h.text for h in d.headings] == ["Real", "Real two"]


def test_indented_code_is_not_a_heading_but_setext_is():
    d = parse("    # code\n\nSetext title\n============\n\nSub\n---\n")
    assert [(h.level, h.text) for h in d.headings] == [(1, "Setext title"), (2, "Sub")]


def test_heading_text_is_rendered_inline_text():
    d = parse("# Use `git` **now** [here](x.md) <b>x</b> ![alt *y*](i.png)\n")
    assert d.headings[0].text == "Use git now here x alt y"


def test_heading_line_numbers_count_frontmatter():
    d = parse("---\nname: x\n---\n\n# One\n\ntext\n\n## Two\n")
    assert [(h.text, h.line) for h in d.headings] == [("One", 5), ("Two", 9)]


def test_pipe_table_is_a_paragraph_in_commonmark():
    d = parse("| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert len(d.paragraphs) == 1 and "| a | b |" in d.paragraphs[0].text


def test_links_images_and_code_spans_are_collected_with_lines():
    d = parse("x\n\nsee [a](references/a.md) and ![i](assets/i.png)\n\nrun `scripts/go.sh`\n")
    assert [(link.target, link.line, link.from_code_span) for link in d.links] == [
        ("references/a.md", 3, False),
        ("assets/i.png", 3, False),
        ("scripts/go.sh", 5, True),
    ]


def test_percent_encoded_link_targets_are_decoded():
    d = parse("[x](<references/my file.md>)\n")
    assert d.links[0].target == "references/my file.md"


@pytest.mark.parametrize("text", [
    "# Title\n\nsome\0text with `scripts/a\0b.py`\n\n## Next\n",  # NUL: markdown-it's own normalize rule must run
    "# Title\r\rsome\0text with `scripts/a\0b.py`\r\r## Next\r",  # CR given to parse() directly, not through decode()
    "# Title\n\nsome text with `scripts/ab.py`\n\n## Next\n",  # already normalized: the rule is skipped
])
def test_parse_reads_what_commonmark_reads_whether_or_not_it_skips_the_normalize_rule(text):
    from markdown_it import MarkdownIt

    reference = MarkdownIt("commonmark").parse(text)
    doc = parse(text)
    assert [h.text for h in doc.headings] == [t.content for t in reference if t.type == "inline" and t.map and t.map[0] in (0, 4)] \
        == ["Title", "Next"]
    paragraph = next(t.content for t in reference if t.type == "inline" and t.content.startswith("some"))
    assert [p.text for p in doc.paragraphs] == [paragraph.replace("`", "")] and ("\ufffd" in paragraph) == ("\0" in text)
    assert [link.target for link in doc.links] == [paragraph.split("`")[1]]


def test_escapes_and_entities_render_as_one_text_without_markdown_its_text_join_rule():
    doc = parse("# Keep \\*stars\\* &amp; `code` \\\n\nSee ![a &lt;b&gt; \\_c](assets/x.png) and 5 \\> 3 &copy;\n")
    assert [h.text for h in doc.headings] == ["Keep *stars* & code \\"]
    assert [p.text for p in doc.paragraphs] == ["See a <b> _c and 5 > 3 ©"]
    assert [link.target for link in doc.links] == ["code", "assets/x.png"]


@pytest.mark.parametrize("value", ["date: 2024-02-30", "date: 2024-13-01", "tags: !!int x", "when: !!timestamp nope"])
def test_any_loader_exception_means_the_frontmatter_does_not_parse_and_the_skill_is_still_scored(value):
    """RUBRIC.md (amended): libyaml raises ValueError and others, not only YAMLError, for these."""
    from scoring.rubric import score_document

    d = parse(f"---\nname: demo\n{value}\n---\n# Body\n\nSome text.\n")
    assert d.frontmatter is None
    assert d.frontmatter_error is not None and "does not load" in d.frontmatter_error.message
    assert d.frontmatter_error.line == 3  # the line of the value, in the file
    scored = score_document(d, "demo", frozenset())
    assert scored.dim("dim1").score == 0
    assert "frontmatter" in [c.name for c in scored.dim("dim1").checks if not c.passed]


@pytest.mark.parametrize("text, heading", [
    ("How to\nuse\n===\n", "How to use"),  # setext over two lines: a soft break
    ("Steps  \nto run\n---\n", "Steps to run"),  # two trailing spaces: a hard break
    ("Steps\\\nto run\n---\n", "Steps to run"),  # backslash: a hard break
])
def test_soft_and_hard_breaks_read_as_one_space(text, heading):
    assert [h.text for h in parse(text).headings] == [heading]


def test_a_two_line_setext_heading_counts_for_its_chapter_group():
    from scoring.structure_rules import chapter_groups

    assert "workflow" in chapter_groups(parse("How to\nuse\n===\n\ntext\n").headings)


def test_paragraph_text_joins_its_lines_with_one_space():
    assert parse("first line\nsecond line\n").paragraphs[0].text == "first line second line"

"""Validation: merge/stash markers, bad frontmatter, missing and escaping references."""

from __future__ import annotations

import pytest

from tests.scoring.helpers import score, skill_text


def kinds(text: str, files=frozenset()) -> list[tuple[str, int | None]]:
    return [(v.kind, v.line) for v in score(text, files=frozenset(files)).violations]


def test_merge_and_stash_markers_with_lines():
    body = "a\n<<<<<<< Updated upstream\nb\n=======\nc\n>>>>>>> Stashed changes\n"
    assert kinds(skill_text(body)) == [("merge_marker", 6), ("merge_marker", 8), ("merge_marker", 10)]


@pytest.mark.parametrize("line", ["<<<<<<<", "=======  ", " =======", "<<<<<<<< x", "text ======="])
def test_near_markers_are_not_markers(line):
    assert kinds(skill_text(line + "\n")) == []


def test_marker_inside_frontmatter_is_reported_too():
    text = "---\nname: demo-skill\n<<<<<<< HEAD\ndescription: x\n---\n"
    assert kinds(text) == [("merge_marker", 3), ("frontmatter_invalid", 4)]


def test_markers_do_not_change_the_score():
    clean = score(skill_text("# T\n"))
    marked = score(skill_text("# T\n=======\n"))
    assert clean.total == marked.total and len(marked.violations) == 1


def test_unparseable_frontmatter_is_a_violation():
    assert kinds("---\nname: [\n---\nbody\n")[0][0] == "frontmatter_invalid"


def test_missing_frontmatter_is_not_a_violation():
    assert kinds("# Title\n") == []


def test_references_exist_missing_and_escape():
    body = (
        "See [guide](references/guide.md), [gone](references/gone.md),\n"
        "[up](../other/SKILL.md), [abs](/etc/passwd), [home](~/.ssh/id_rsa),\n"
        "[win](C:\\Windows\\x.txt), [back](references/../../x.md) and `scripts/run.sh`.\n"
    )
    s = score(skill_text(body), files=frozenset({"references/guide.md", "SKILL.md"}))
    assert [(r.target, r.status) for r in s.references] == [
        ("references/guide.md", "exists"),
        ("references/gone.md", "missing"),
        ("../other/SKILL.md", "escapes"),
        ("/etc/passwd", "escapes"),
        ("~/.ssh/id_rsa", "escapes"),
        ("C:\\Windows\\x.txt", "escapes"),
        ("references/../../x.md", "escapes"),
        ("scripts/run.sh", "missing"),
    ]
    assert [(v.kind, v.line) for v in s.violations] == [
        ("missing_reference", 5),
        ("escaping_reference", 6), ("escaping_reference", 6), ("escaping_reference", 6),
        ("escaping_reference", 7), ("escaping_reference", 7), ("missing_reference", 7),
    ]


def test_reference_lines_point_at_the_link():
    body = "intro\n\npara one\nsee [x](references/x.md)\n"
    s = score(skill_text(body))
    assert [(v.kind, v.line) for v in s.violations] == [("missing_reference", 8)]


@pytest.mark.parametrize(
    "link",
    ["https://example.com/a", "mailto:a@b.c", "#section", "HTTP://X", "ftp://h/f", "data:text/plain,x"],
)
def test_urls_and_anchors_are_not_references(link):
    assert score(skill_text(f"[x]({link})\n")).references == ()


def test_fragment_and_query_are_not_part_of_the_path():
    s = score(skill_text("[x](references/a.md#part) [y](references/a.md?v=1)\n"), files=frozenset({"references/a.md"}))
    assert [r.status for r in s.references] == ["exists", "exists"]


def test_directory_reference_exists_when_a_file_is_under_it():
    s = score(skill_text("[x](references/) [y](./references)\n"), files=frozenset({"references/a.md"}))
    assert [r.status for r in s.references] == ["exists", "exists"]


def test_code_span_must_match_the_reference_pattern():
    body = "`references/a.md` `scripts/x y.sh` `src/main.py` `examples/` `templates/t.html`\n"
    s = score(skill_text(body))
    assert [r.target for r in s.references] == ["references/a.md", "templates/t.html"]


def test_code_block_paths_are_not_references():
    assert score(skill_text("```\nsee references/a.md and [x](y.md)\n```\n")).references == ()


def test_image_targets_are_references():
    s = score(skill_text("![diagram](assets/flow.png)\n"))
    assert [(r.target, r.status) for r in s.references] == [("assets/flow.png", "missing")]


def test_violations_never_change_deterministic_dims():
    base = score(skill_text("# T\nDo not x\n"))
    with_refs = score(skill_text("# T\nDo not x\n[a](../../etc/passwd)\n"))
    assert base.deterministic_subtotal == with_refs.deterministic_subtotal

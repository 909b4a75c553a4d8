"""The Agent Skills specification's fields, unknown keys, size guidance and reserved names as findings at their lines."""

from __future__ import annotations

import pytest

from scoring.document import parse
from scoring.spec_rules import key_lines, spec_violations

BODY = "# Title\n\nDo the thing.\n"


def findings(frontmatter: str, body: str = BODY) -> list[tuple[str, int, str]]:
    return [(v.kind, v.line or 0, v.message) for v in spec_violations(parse(f"---\n{frontmatter}---\n{body}"))]


@pytest.mark.parametrize(("frontmatter", "kind", "line", "said"), [
    ("name: x\ndescription: d\nlicense: [MIT]\n", "field_invalid", 4, "'license' is a list"),
    ("name: x\ndescription: d\ncompatibility: ''\n", "field_invalid", 4, "string of 1-500 characters"),
    ("name: x\ndescription: d\ncompatibility: " + "y" * 501 + "\n", "field_invalid", 4, "501 characters, over"),
    ("name: x\ndescription: d\nmetadata:\n  author: me\n  tags:\n    a: b\n", "field_invalid", 4, "'tags' whose value"),
    ("name: x\ndescription: d\nmetadata: v1\n", "field_invalid", 4, "'metadata' is a string; the specification's is a map"),
    ("name: x\ndescription: d\nallowed-tools:\n  - Read\n  - Bash\n", "field_invalid", 4, "allowed-tools: Read Bash"),
    ("name: x\ndescripton: d\n", "unknown_key", 3, "did you mean 'description'?"),
    ("name: x\ndescription: d\nallowed_tools: Read\n", "unknown_key", 4, "did you mean 'allowed-tools'?"),
    ("name: x\ndescription: d\ndisable-model-invocation: true\n", "unknown_key", 4, "Claude Code's key"),
    ("name: x\ndescription: d\nversion: 1.2.0\n", "unknown_key", 4, "move it under 'metadata'"),
    ("name: claude-helper\ndescription: d\n", "reserved_name", 2, "'claude', a word Claude's API and claude.ai reserve"),
    ("name: x\ndescription: Use for <file> edits\n", "reserved_name", 3, "XML tag ('<file>')"),
    ("name: x\ndescription: d\nname: x\n", "duplicate_key", 4, "'name' is given again (first on line 2)"),
])
def test_each_field_problem_is_found_at_its_key(frontmatter: str, kind: str, line: int, said: str):
    found = findings(frontmatter)
    assert [(k, n) for k, n, _ in found] == [(kind, line)], found
    assert said in found[0][2], found[0][2]


def test_a_field_as_the_specification_writes_it_gets_no_finding():
    assert findings("name: pdf-tools\ndescription: Fills PDF forms. Use when a PDF form is given.\nlicense: MIT\n"
                    "compatibility: Needs poppler-utils and network access\nmetadata:\n  author: team\n  version: '1.0'\n"
                    "allowed-tools: Bash(git:*) Read\n") == []


def test_the_body_over_the_size_guidance_is_found_where_it_crosses():
    long_body = "# T\n" + "".join(f"Step {i}.\n" for i in range(600))
    (kind, line, said), = findings("name: x\ndescription: d\n", long_body)
    assert (kind, line) == ("body_too_long", 5 + 500) and "601 lines" in said
    wordy = "# T\n\n" + "word " * 4500 + "\n"  # about 5 600 tokens on 3 lines
    (kind, line, said), = findings("name: x\ndescription: d\n", wordy)
    assert (kind, line) == ("body_too_long", 5) and "about 5,6" in said


def test_without_a_parsed_frontmatter_only_the_body_is_checked():
    assert spec_violations(parse("# No frontmatter\n\nText.\n")) == []
    assert spec_violations(parse("---\nname: [unclosed\n---\n# T\n")) == []


def test_key_lines_read_quoted_and_plain_keys_and_stop_at_the_closing_line():
    text = "---\nname: x\n'allowed-tools': Read\n# a comment: not a key\n  nested: no\n---\nbody: not a key\n"
    assert key_lines(text) == {"name": 2, "allowed-tools": 3}

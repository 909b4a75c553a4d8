"""Null variants: the same skill to a Markdown renderer, other bytes to a model.

A judge at temperature 0 reads one text the same way every time, yet moves on
edits that change nothing that matters (published A/A tests: about a quarter of
verdicts flip on inputs that differ in nothing that counts). Asking again about
the very same bytes measures none of that, so the keep decision would read an
edit's Δ against a noise that leaves out the larger part. Every reading Luban
takes of a text is therefore of a different null variant of it: variant 0 is the
text itself, variant k ≥ 1 doubles some of its blank lines and ends some of its
lines with one space — outside code blocks, HTML blocks and the frontmatter,
where neither changes what a CommonMark renderer makes of it (a test renders
both and compares). The spread of readings across variants is then the judge's
whole noise about the text: how it reads the words, and how it moves on what
does not matter.

Variant k sets the slots (positions where a change may go) named by the bits of
a fixed odd multiple of k, so consecutive variants differ in several places and
no two variants of a text are the same; a text with few slots puts blank lines
before its body for the rest (blank lines before the first block render to
nothing). Pure: text in, text out.
"""

from __future__ import annotations

from functools import lru_cache

from scoring.document import parse
from scoring.markdown_walk import markdown_tokens

SCRAMBLE = 0x9E3779B1  # odd: multiplying by it permutes the integers modulo any power of two
MAX_SLOTS = 24


def null_variant(text: str, index: int) -> str:
    """The ``index``-th null variant of ``text`` (0: the text itself)."""
    if index < 0:
        raise ValueError(f"a variant index is 0 or more, got {index}")
    if index == 0:
        return text
    slots, body_start = _slots(text)
    span = 1 << len(slots)
    chosen = (index * SCRAMBLE) % span  # a bijection on [0, span): no two indices below span choose alike
    extra = index // span  # past what the slots can tell apart: blank lines before the body
    out = text.split("\n")
    for bit, (kind, line) in enumerate(slots):
        if chosen >> bit & 1:
            out[line] = out[line] + (" " if kind == "space" else "\n")
    return "\n".join(out[:body_start] + [""] * extra + out[body_start:])


@lru_cache(maxsize=256)
def _slots(text: str) -> tuple[tuple[tuple[str, int], ...], int]:
    """(kind, 0-based line) where a change renders to nothing — a blank line that can be doubled, a line of prose
    that can end in one space (two would be a hard line break) — and the body's first line. Code, HTML, the
    frontmatter, and the blank lines before the first block and after the last are left alone (those are where the
    extra blank lines go, or could run into an unclosed code block)."""
    doc = parse(text)
    lines = text.split("\n")
    offset = doc.body_first_line - 1
    protected: set[int] = set(range(offset))
    blocks = [t.map for t in markdown_tokens(doc.body) if t.map is not None]
    for token in markdown_tokens(doc.body):
        if token.map is not None and token.type in ("fence", "code_block", "html_block"):
            protected.update(range(token.map[0] + offset, token.map[1] + offset))
    first = min((m[0] for m in blocks), default=len(lines)) + offset
    last = max((m[1] for m in blocks), default=0) + offset
    blanks, prose = [], []
    for number, line in enumerate(lines):
        if number in protected or not first <= number < last:
            continue
        if not line.strip():
            if number == 0 or lines[number - 1].strip():  # one slot per run of blank lines: doubling any is the same
                blanks.append(("blank", number))
        elif not line.endswith((" ", "\t", "\\")):
            prose.append(("space", number))
    return tuple(_interleave(blanks, prose)[:MAX_SLOTS]), offset


def _interleave(first: list[tuple[str, int]], second: list[tuple[str, int]]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for i in range(max(len(first), len(second))):
        out += first[i:i + 1] + second[i:i + 1]
    return out

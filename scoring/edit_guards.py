"""Structural guards: an edit that damages a skill is refused, whatever it would do to the score.

The rule dimensions count keywords and headings, so an edit can raise them
while making the skill worse: a STOP pasted inside a code block, a live path
deleted as "dead", a heading with nothing under it, a paragraph cut in two. Each
guard here is a pure function of the text before, the edit, and the skill's
files; ``check_edit`` runs them all and returns every refusal with the line it
is about, in words the proposer can act on (it gets them back as feedback).

The guards, as the issue lists them: an edit may not
- insert text inside a fenced or indented code block, an HTML block, a table,
  an inline code span or a link (replacing such a block whole is allowed);
- split a paragraph or a list item (judged on the part of the edit that differs from what it replaces);
- leave a heading with no content before the next heading of its level or higher;
- delete or change a reference whose target exists (a path with a placeholder
  such as ``<style>`` whose folder exists is live, not dead);
- change the frontmatter ``name`` (it changes how runtimes invoke the skill),
  unless the person running Luban allows it;
- add a line that repeats a line the skill already has;
- add text a reader of the rendered skill does not see: an HTML comment, a link definition that links nowhere
  (``[//]: # (…)``), an invisible character, or a secret (the agent and the judges read what the reviewer of the
  change cannot: a "never …" tucked into a comment would lift dim9 unseen).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from urllib.parse import unquote

from scoring.document import SkillDocument, parse
from scoring.edits import Edit
from scoring.hidden_text import COMMENT_IDIOM, hidden_text_violations, invisible_characters
from scoring.markdown_walk import markdown_tokens
from scoring.validation import scan_references

_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$")
_INLINE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)|!?\[[^\]\n]*\]\([^)\n]*\)|<[a-z][a-z0-9+.-]*:[^>\s]*>", re.IGNORECASE)
_LINK_PARTS = re.compile(r"(?P<label>!?\[[^\]\n]*\])\((?P<dest>[^)\s]*)\)")
_PLACEHOLDER = re.compile(r"<[^<>/]+>|\{[^{}/]+\}")
WORDY = re.compile(r"[^\W\d_]{3}|[\u4e00-\u9fff]{2}")  # a word: three letters, or two CJK characters


@dataclass(frozen=True)
class Refusal:
    guard: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message} ({self.guard})"


@dataclass(frozen=True)
class Span:
    """Where an edit lands: ``text[start:end]`` becomes ``new``."""

    start: int
    end: int
    new: str


def span_of(text: str, edit: Edit) -> Span:
    """The place ``apply_edit`` changes (the edit is assumed to apply: it was applied before the guards run)."""
    if edit.old:
        start = text.index(edit.old)
        return Span(start, start + len(edit.old), edit.new)
    if edit.anchor:
        at = text.index(edit.anchor) + len(edit.anchor)
        return Span(at, at, edit.new)
    return Span(len(text), len(text), ("" if text.endswith("\n") else "\n") + edit.new)


def span_between(text: str, edited: str) -> Span:
    """The one region two texts differ in (their common beginning and end set aside)."""
    start = 0
    while start < min(len(text), len(edited)) and text[start] == edited[start]:
        start += 1
    end = 0
    while end < min(len(text), len(edited)) - start and text[-1 - end] == edited[-1 - end]:
        end += 1
    return Span(start, len(text) - end, edited[start:len(edited) - end])


def adds_words(text: str, edit: Edit) -> bool:
    """Whether the edit writes new words (not only removes, reorders levels or fixes a path's punctuation): the gains
    such an edit brings on keyword-counting rule dimensions need the judges' agreement to count."""
    span = span_of(text, edit)
    return bool(WORDY.search(span_between(text[span.start:span.end], span.new).new))


def check_edit(text: str, edited: str, edit: Edit, files: AbstractSet[str], allow_rename: bool = False) -> list[Refusal]:
    """Every guard's refusal of this edit (an empty list: the edit leaves the skill's structure whole)."""
    return check_span(text, edited, span_of(text, edit), files, allow_rename)


def check_span(text: str, edited: str, span: Span, files: AbstractSet[str], allow_rename: bool = False) -> list[Refusal]:
    """``check_edit`` for a change given by where it lands (``span_between`` finds it for any two versions)."""
    before, after = parse(text), parse(edited)
    refusals = list(_inside_protected(text, before, span, files)) + list(_splits_block(text, before, after, span))
    refusals += _empty_headings(before, after) + _live_references(before, after, files)
    refusals += _renamed(before, after, allow_rename) + _repeated_lines(text, span) + _hidden(text, before, after, span)
    return refusals


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts += [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return starts


def _line_at(starts: list[int], offset: int) -> int:
    """1-based line of a character offset."""
    low, high = 0, len(starts)
    while low + 1 < high:
        mid = (low + high) // 2
        if starts[mid] <= offset:
            low = mid
        else:
            high = mid
    return low + 1


def _blocks(text: str, doc: SkillDocument) -> Iterator[tuple[str, int, int]]:
    """(kind, first line, last line) of each block in the body, 1-based in the whole text, nested ones included."""
    offset = doc.body_first_line - 1
    lines = text.split("\n")
    for token in markdown_tokens(doc.body):
        if token.map is None or token.nesting == -1:
            continue
        first, last = token.map[0] + offset + 1, token.map[1] + offset
        while last > first and not lines[last - 1].strip():  # a list item's map takes in the blank line after it
            last -= 1
        kind = {"fence": "code", "code_block": "code", "html_block": "html", "paragraph_open": "paragraph",
                "list_item_open": "list item", "heading_open": "heading"}.get(token.type)
        if kind == "paragraph" and any(_TABLE_RULE.match(line) for line in lines[first - 1:last]):
            kind = "table"
        if kind:
            yield kind, first, last


def _char_range(starts: list[int], text: str, first: int, last: int) -> tuple[int, int]:
    end = starts[last] - 1 if last < len(starts) else len(text)
    return starts[first - 1], end


def _inside_protected(text: str, doc: SkillDocument, span: Span, files: AbstractSet[str]) -> Iterator[Refusal]:
    starts = _line_starts(text)
    for kind, first, last in _blocks(text, doc):
        if kind not in ("code", "html", "table"):
            continue
        low, high = _char_range(starts, text, first, last)
        if _cuts_into(span, low, high):
            yield Refusal("inside-block", _line_at(starts, span.start),
                          f"the edit writes inside a {'code block' if kind == 'code' else kind + ' block' if kind == 'html' else 'table'}"
                          f" (lines {first}–{last}); put new text before or after it, never in it")
    for match in _INLINE.finditer(text):
        if _cuts_into(span, match.start(), match.end(), inline=True) and not _repoints_dead_link(text, match, span, files):
            what = "an inline code span" if match.group(0).startswith("`") else "a link"
            yield Refusal("inside-inline", _line_at(starts, span.start),
                          f"the edit writes inside {what} ({match.group(0)[:40]!r}); change text around it, not in it")


def _repoints_dead_link(text: str, link: re.Match[str], span: Span, files: AbstractSet[str]) -> bool:
    """The one change allowed inside a link: its destination, from a file the skill lacks to one it has (a moved file)."""
    if not link.start() <= span.start <= span.end <= link.end():
        return False
    before = _LINK_PARTS.fullmatch(link.group(0))
    after = _LINK_PARTS.fullmatch(text[link.start() : span.start] + span.new + text[span.end : link.end()])
    if not before or not after or before.group("label") != after.group("label"):
        return False
    return unquote(before.group("dest")) not in files and unquote(after.group("dest")) in files


def _cuts_into(span: Span, low: int, high: int, inline: bool = False) -> bool:
    """Whether the edit changes part of [low, high), or inserts strictly inside it (replacing it whole is fine).
    Next to an inline span is outside it; next to a block, only text on a line of its own is."""
    if span.start <= low and span.end >= high:
        return False  # the whole region goes (or is replaced whole)
    if span.start == span.end:  # an insertion
        at = span.start
        if inline:
            return low < at < high
        if at == high:
            return not span.new.startswith("\n")  # at its very end: only on a new line
        if at == low:
            return not span.new.endswith("\n")
        return low < at < high
    return span.start < high and span.end > low


def _splits_block(text: str, before: SkillDocument, after: SkillDocument, span: Span) -> Iterator[Refusal]:
    """An edit inside one paragraph or list item must leave it one block: the same kind of block, from the same
    first line to at least where its last line went (a blank line, a heading, a fence put in it cuts it in two).

    What an edit changes is the part of its span that differs: a line replaced by itself plus a blank line and
    more text is an insertion inside the paragraph, wherever the span began, and is judged as one."""
    span = _changed_part(text, span)
    starts, after_starts = _line_starts(text), _line_starts(after.text)
    shift = len(span.new) - (span.end - span.start)
    after_blocks = list(_blocks(after.text, after))
    for kind, first, last in _blocks(text, before):
        if kind not in ("paragraph", "list item"):
            continue
        low, high = _char_range(starts, text, first, last)
        if not (low < span.start < high and span.end <= high):
            continue
        moved_last = _line_at(after_starts, max(low, high + shift - 1))
        if not any(k == kind and f == first and line >= moved_last for k, f, line in after_blocks):
            yield Refusal("split-block", _line_at(starts, span.start),
                          f"the edit puts new blocks inside one {kind} (lines {first}–{last}), cutting it in two; "
                          "add text at its end, or as a block of its own after it")
            return


def _changed_part(text: str, span: Span) -> Span:
    """The span less what its old and new text have in common at either end."""
    inner = span_between(text[span.start:span.end], span.new)
    return Span(span.start + inner.start, span.start + inner.end, inner.new)


def _empty(doc: SkillDocument, text: str) -> Counter[str]:
    """Headings with nothing under them before the next heading of their level or higher."""
    blocks = sorted((first, kind) for kind, first, _ in _blocks(text, doc) if kind in ("heading", "paragraph", "code", "html",
                                                                                       "table", "list item"))
    levels = {h.line: h for h in doc.headings}
    empty: Counter[str] = Counter()
    for index, (line, kind) in enumerate(blocks):
        heading = levels.get(line) if kind == "heading" else None
        if heading is None:
            continue
        following = blocks[index + 1] if index + 1 < len(blocks) else None
        nxt = levels.get(following[0]) if following and following[1] == "heading" else None
        if following is None or (nxt is not None and nxt.level <= heading.level):
            empty[f"{'#' * heading.level} {heading.text}"] += 1
    return empty


def _empty_headings(before: SkillDocument, after: SkillDocument) -> list[Refusal]:
    new = _empty(after, after.text) - _empty(before, before.text)
    lines = {f"{'#' * h.level} {h.text}": h.line for h in after.headings}
    return [Refusal("empty-heading", lines.get(h), f"'{h}' would have no content before the next heading of its level; "
                    "a heading needs the text it announces") for h in new]


def live(target: str, status: str, files: AbstractSet[str]) -> bool:
    """A reference that points at something: its file exists, or it is a template path (``<style>``) whose folder does."""
    if status == "exists":
        return True
    match = _PLACEHOLDER.search(target)
    if not match:
        return False
    folder = target[: match.start()].rsplit("/", 1)[0]
    return bool(folder) and any(f.startswith(folder + "/") for f in files)


def _live_references(before: SkillDocument, after: SkillDocument, files: AbstractSet[str]) -> list[Refusal]:
    had = Counter(r.target for r in scan_references(before, files) if live(r.target, r.status, files))
    has = Counter(r.target for r in scan_references(after, files))
    lines = {r.target: r.line for r in scan_references(before, files)}
    return [Refusal("live-reference", lines.get(t), f"the edit removes or changes the reference {t}, whose target "
                    "exists in the skill (a placeholder path whose folder exists is live too); keep it")
            for t in had if has[t] < had[t]]


def _renamed(before: SkillDocument, after: SkillDocument, allow_rename: bool) -> list[Refusal]:
    old = (before.frontmatter or {}).get("name")
    new = (after.frontmatter or {}).get("name")
    if allow_rename or old == new or old is None:
        return []
    return [Refusal("frontmatter-name", 2, f"the edit changes the skill's name from {old!r} to {new!r}, which changes how "
                    "runtimes invoke it; only a person may rename a skill (luban optimize --allow-rename)")]


def _hidden(text: str, before: SkillDocument, after: SkillDocument, span: Span) -> list[Refusal]:
    """What the edit adds that the rendered skill does not show (counted in the whole text, so an edit that moves a
    comment it already had, or writes an HTML example inside a code block, adds nothing hidden)."""
    added = []
    if len(after.html_comments) > len(before.html_comments):
        added.append("an HTML comment")
    if len(after.comment_definitions) > len(before.comment_definitions):
        added.append(COMMENT_IDIOM)
    new_characters = set(invisible_characters(span.new)) - set(invisible_characters(text[span.start:span.end]))
    if new_characters:
        added.append(f"an invisible character, {', '.join(sorted(new_characters))}")
    if _secrets(after.text) > _secrets(before.text):
        added.append("a secret (a key format)")
    if not added:
        return []
    return [Refusal("hidden-text", _line_at(_line_starts(text), span.start),
                    f"the edit adds {'; '.join(added)}: the rendered skill does not show it, while the agent and the "
                    "judges read it; write what it says as visible text, or leave it out")]


def _secrets(text: str) -> int:
    return sum(v.kind == "secret" for v in hidden_text_violations(text))


def _repeated_lines(text: str, span: Span) -> list[Refusal]:
    """Lines the edit adds that the skill already has word for word (pasted boilerplate, a second copy of a rule)."""
    existing = Counter(" ".join(line.split()) for line in text.split("\n"))
    removed = Counter(" ".join(line.split()) for line in text[span.start:span.end].split("\n"))
    out = []
    for line in span.new.split("\n"):
        key = " ".join(line.split())
        if WORDY.search(key) and existing[key] - removed[key] > 0:
            out.append(Refusal("repeated-line", None, f"the edit adds a line the skill already has: {key[:60]!r}"))
    return out

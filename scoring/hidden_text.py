"""What an agent reads but a reviewer does not see, and secrets: the character scanner behind ``luban score``'s
hidden-instruction and secret findings. Pure: text in, findings out (RUBRIC.md "Validation": they never change
the score).

A skill is text an agent obeys, so anything that hides text from the person reviewing it is a supply-chain risk:

- ``smuggled_text`` (error): Unicode tag characters (U+E0000–U+E007F), which mirror ASCII and render as nothing —
  a whole instruction can ride in them — and runs of variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF), which
  can carry bytes the same way. Not an attack: a subdivision flag (U+1F3F4 followed by lowercase tag letters and
  U+E007F, e.g. England's flag), and one variation selector after the character it selects (️ in an emoji, an
  ideographic variation in a name).
- ``hidden_instruction`` (error): an HTML comment outside code that addresses the agent (names it, or says to
  ignore, override or keep something from the user): Markdown viewers hide it; the agent reads it.
- ``bidi_control`` (warning): the embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, which make a
  line display in another order than it is read ("Trojan Source", CVE-2021-42574); the marks U+200E, U+200F and
  U+061C only on a line with no right-to-left letter (where they are needed, they stay unflagged).
- ``zero_width`` (warning): U+200B, U+2060 and U+FEFF (past the file's first character, where it is a BOM), and
  U+200C / U+200D touching a Latin letter or digit — inside a word they split a keyword so a reader's search misses
  it. Between emoji (a ZWJ sequence) or letters of scripts that join (Arabic, Persian, Indic), they are needed.
- ``invisible_character``: any other format character (Unicode category Cf: the soft hyphen U+00AD, U+180E,
  the invisible operators U+2061–U+2064, the interlinear annotations U+FFF9–U+FFFB, …), named with its code point.
- ``secret`` (error): a well-known key format or a private-key block. The secret itself is never printed — only
  its first four characters and its length.

``strip_hidden`` is the fixer's half (``luban score --fix``): it removes the zero-width and bidi characters that
are flagged, and only those.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from scoring.model import Violation, ViolationKind

BIDI_CONTROLS = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
BIDI_MARKS = frozenset({0x200E, 0x200F, 0x061C})
ZERO_WIDTH_ALWAYS = frozenset({0x200B, 0x2060, 0xFEFF})
JOINERS = frozenset({0x200C, 0x200D})
TAGS = range(0xE0000, 0xE0080)
CANCEL_TAG, BLACK_FLAG = 0xE007F, 0x1F3F4
VARIATION_SELECTORS = frozenset(range(0xFE00, 0xFE10)) | frozenset(range(0xE0100, 0xE01F0))
# Every character the scan below may flag, for one pass in C over the whole text before any line is looked at:
# the format characters (category Cf, as of Unicode 14; tests/scoring/test_hidden_text.py checks the running
# Python's table against it), the variation selectors and the tag block.
_SUSPECT = re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
                      "\u2060-\u2064\u2066-\u206f\ufe00-\ufe0f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                      "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e01ef]")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_FLAG_TAG = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]+\U000e007f")
_ASCII_WORD = re.compile(r"[A-Za-z0-9]")
_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
_ADDRESSES_AGENT = re.compile(
    r"\b(?:agents?|assistants?|AI|LLMs?|(?:language )?models?|Claude|Codex|Cursor|Copilot|Gemini|GPT|ChatGPT|"
    r"ignore (?:all |any |the )?(?:previous|prior|above|earlier|other)|disregard|override|system prompt|"
    r"(?:do not|don't|never) (?:tell|mention|reveal|show|inform)|without (?:telling|asking|informing)|secretly)\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class Secret:
    name: str
    pattern: re.Pattern[str]


SECRETS = (
    Secret("private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    Secret("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    Secret("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b")),
    Secret("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{32,}")),
    Secret("OpenAI API key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}")),
    Secret("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{20,}")),
    Secret("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    Secret("Stripe secret key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b")),
)
_SECRET_HINT = re.compile(r"PRIVATE KEY|AKIA|ASIA|gh[pousr]_|github_pat_|sk-|xox|AIza|k_live_")
_PLACEHOLDER = re.compile(r"example|x{4,}|0{6,}|\*{3,}|your|dummy|fake|redacted|placeholder", re.IGNORECASE)


def hidden_text_violations(text: str) -> list[Violation]:
    """Every hidden-instruction and secret finding in ``text`` (a decoded skill file, line breaks LF), by line."""
    found = _characters(text) + _secrets(text)
    if "<!--" in text:  # almost no file has one: the scan of comments costs nothing elsewhere
        found += _comments(text)
    return found


def _characters(text: str) -> list[Violation]:
    found: list[Violation] = []
    if text.isascii() or not _SUSPECT.search(text):
        return found  # almost every skill, CJK ones too: one pass in C each
    for number, line in enumerate(text.split("\n"), start=1):
        if not _SUSPECT.search(line):
            continue
        by_kind: dict[ViolationKind, list[str]] = {}
        for kind, what in _line_findings(line, number == 1):
            by_kind.setdefault(kind, []).append(what)
        found += [Violation(kind, number, _message(kind, whats)) for kind, whats in by_kind.items()]
    return found


def _line_findings(line: str, first_line: bool) -> list[tuple[ViolationKind, str]]:
    """Each hidden character of one line that is not needed where it stands: its kind, and what it is."""
    out: list[tuple[ViolationKind, str]] = []
    flag_columns = {c for m in _FLAG_TAG.finditer(line) for c in range(m.start(), m.end())} if "\U0001f3f4" in line else set()
    rtl: bool | None = None
    tags: list[int] = []
    for column, ch in enumerate(line):
        code = ord(ch)
        if code < 0x80:
            continue
        if code in TAGS:
            if column not in flag_columns:
                tags.append(code)
            continue
        if tags:
            out.append(("smuggled_text", _spelled(tags)))
            tags = []
        if code in BIDI_CONTROLS:
            out.append(("bidi_control", _named(code, column)))
        elif code in BIDI_MARKS:
            rtl = bool(_RTL.search(line)) if rtl is None else rtl
            if not rtl:
                out.append(("bidi_control", _named(code, column)))
        elif code in ZERO_WIDTH_ALWAYS:
            if not (code == 0xFEFF and first_line and column == 0):
                out.append(("zero_width", _named(code, column)))
        elif code in JOINERS:
            if _touches_ascii_word(line, column):
                out.append(("zero_width", _named(code, column)))
        elif code in VARIATION_SELECTORS:
            if column > 0 and ord(line[column - 1]) in VARIATION_SELECTORS:
                out.append(("smuggled_text", f"a run of variation selectors ({_named(code, column)})"))
        elif unicodedata.category(ch) == "Cf":
            out.append(("invisible_character", _named(code, column)))
    if tags:
        out.append(("smuggled_text", _spelled(tags)))
    return out


def _touches_ascii_word(line: str, column: int) -> bool:
    before = line[column - 1] if column > 0 else ""
    after = line[column + 1] if column + 1 < len(line) else ""
    return bool(_ASCII_WORD.match(before) or _ASCII_WORD.match(after))


def _named(code: int, column: int) -> str:
    return f"U+{code:04X} {unicodedata.name(chr(code), 'UNNAMED')} at column {column + 1}"


def _spelled(tags: list[int]) -> str:
    """Tag characters as the ASCII they mirror (what the agent may read), shortened."""
    ascii_text = "".join(chr(t - 0xE0000) if 0x20 <= t - 0xE0000 < 0x7F else "?" for t in tags)
    shown = ascii_text if len(ascii_text) <= 60 else ascii_text[:57] + "..."
    return f'{len(tags)} Unicode tag character(s) (U+E0000-U+E007F) that spell "{shown}"'


_WHY: dict[ViolationKind, str] = {
    "smuggled_text": "invisible characters that carry text the agent may read and a reviewer cannot see; delete them",
    "bidi_control": "bidirectional controls make the line display in another order than it is read (Trojan Source); "
                    "delete them (luban score --fix)",
    "zero_width": "zero-width characters inside words hide them from a reader's search and from review; delete them "
                  "(luban score --fix)",
    "invisible_character": "an invisible format character; delete it unless the text needs it",
}


def _message(kind: ViolationKind, whats: list[str]) -> str:
    listed = "; ".join(whats[:5]) + (f"; and {len(whats) - 5} more" if len(whats) > 5 else "")
    return f"{listed}: {_WHY[kind]}"


def _secrets(text: str) -> list[Violation]:
    found: list[Violation] = []
    if not _SECRET_HINT.search(text):
        return found  # one pass in C: no key format's prefix anywhere
    for secret in SECRETS:
        for match in secret.pattern.finditer(text):
            value = match.group(0)
            if secret.name != "private key block" and _PLACEHOLDER.search(value):
                continue  # a documented example (AKIAIOSFODNN7EXAMPLE) or a placeholder, not a key
            found.append(Violation("secret", text.count("\n", 0, match.start()) + 1,
                                   f"{secret.name} {_masked(value)}: a secret in a skill reaches every agent and "
                                   "repository that loads it; remove it, revoke it, and read it from the environment"))
    return found


def _masked(value: str) -> str:
    if value.startswith("-----BEGIN"):
        return f"'{value}' (its key lines not shown)"
    return f"'{value[:4]}{'*' * 8}' ({len(value)} characters)"


def _comments(text: str) -> list[Violation]:
    """HTML comments Markdown renders as HTML (so a viewer hides them) that address the agent; one in a code span or
    a code block is shown as code, and is not hidden."""
    found: list[Violation] = []
    for line, comment in _rendered_comments(text):
        said = _ADDRESSES_AGENT.search(comment)
        if said:
            shown = " ".join(comment.split())
            found.append(Violation("hidden_instruction", line,
                                   f"an HTML comment addresses the agent ({said.group(0)!r}: "
                                   f"{shown[:80] + ('...' if len(shown) > 80 else '')!r}); viewers hide it and the "
                                   "agent reads it: say it in the text, or delete it"))
    return found


def _rendered_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every HTML comment CommonMark passes through as HTML, block or inline."""
    from markdown_it import MarkdownIt

    out: list[tuple[int, str]] = []
    for token in MarkdownIt("commonmark").parse(text):
        first = token.map[0] + 1 if token.map else 1
        if token.type == "html_block":
            out += [(first + token.content.count("\n", 0, m.start()), m.group(1)) for m in _COMMENT.finditer(token.content)]
        for child in token.children or ():
            if child.type == "html_inline" and child.content.startswith("<!--"):
                before = token.content.find(child.content)
                out.append((first + token.content.count("\n", 0, max(before, 0)), child.content[4:-3]))
    return out


def strip_hidden(text: str) -> tuple[str, list[str]]:
    """``text`` without the zero-width and bidi characters the scanner flags (nothing else changes), and one line
    per removal: its line, column and code point. What ``luban score --fix`` writes."""
    lines, changes = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if not _SUSPECT.search(line):
            lines.append(line)
            continue
        kept = []
        flagged = {what for kind, what in _line_findings(line, number == 1) if kind in ("bidi_control", "zero_width")}
        for column, ch in enumerate(line):
            name = _named(ord(ch), column)
            if name in flagged:
                changes.append(f"line {number}: removed {name}")
            else:
                kept.append(ch)
        lines.append("".join(kept))
    return "\n".join(lines), changes

"""What an agent reads but a reviewer does not see, and secrets: the character scanner behind ``luban score``'s
hidden-instruction and secret findings. Pure: text in, findings out (RUBRIC.md "Validation": they never change
the score).

A skill is text an agent obeys, so anything that hides text from the person reviewing it is a supply-chain risk:

- ``smuggled_text`` (error): Unicode tag characters (U+E0000–U+E007F), which mirror ASCII and render as nothing —
  a whole instruction can ride in them — and runs of variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF), which
  can carry bytes the same way (one holding a selector other than U+FE0F: VS16 alone follows nearly every emoji).
  Not an attack: a subdivision flag (U+1F3F4 followed by lowercase tag letters and U+E007F, e.g. England's flag),
  and one variation selector after the character it selects (️ in an emoji, an ideographic variation in a name).
- ``hidden_instruction`` (error): an HTML comment outside code, or a link definition that links nowhere
  (``[//]: # (text)``, Markdown's comment idiom: it renders as nothing), that instructs: addresses the agent (names it,
  says to ignore or override, speaks to it "when you read this" or "before answering"), asks to keep something
  from the user, asks to run, fetch or send something (curl, a pipe into a shell, "send … to" an address), or
  names where credentials live (~/.ssh, .env). Markdown viewers hide it; the agent reads it. Keywords, not intent:
  an instruction in none of these words passes.
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from scoring.model import Violation, ViolationKind

BIDI_CONTROLS = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))
BIDI_MARKS = frozenset({0x200E, 0x200F, 0x061C})
ZERO_WIDTH_ALWAYS = frozenset({0x200B, 0x2060, 0xFEFF})
JOINERS = frozenset({0x200C, 0x200D})
TAGS = range(0xE0000, 0xE0080)
VARIATION_SELECTORS = frozenset(range(0xFE00, 0xFE10)) | frozenset(range(0xE0100, 0xE01F0))
# Every character the scan below may flag, for one pass in C over the whole text before any line is looked at:
# the format characters (category Cf, as of Unicode 14; tests/scoring/test_hidden_text.py checks the running
# Python's table against it), the variation selectors and the tag block.
_SUSPECT = re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
                      "\u2060-\u2064\u2066-\u206f\ufe00-\ufe0e\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                      "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e01ef]")
# U+FE0F (VS16, emoji presentation) is left out: it follows nearly every emoji, and a run of VS16 alone carries no
# more than its length. A run holding any other selector is caught by that one.
# The same characters as UTF-8: a bytes search skips a CJK text's three-byte characters several times faster than a
# search of the text itself, so it tells first whether a text needs the scan at all (tests check both agree).
_SUSPECT_UTF8 = re.compile(rb"\xc2\xad|\xd8[\x80-\x85\x9c]|\xdb\x9d|\xdc\x8f|\xe0\xa2[\x90\x91]|\xe0\xa3\xa2|\xe1\xa0\x8e"
                           rb"|\xe2\x80[\x8b-\x8f\xaa-\xae]|\xe2\x81[\xa0-\xa4\xa6-\xaf]|\xef\xb8[\x80-\x8e]|\xef\xbb\xbf"
                           rb"|\xef\xbf[\xb9-\xbb]|\xf0\x91\x82\xbd|\xf0\x91\x83\x8d|\xf0\x93\x90[\xb0-\xbf]"
                           rb"|\xf0\x9b\xb2[\xa0-\xa3]|\xf0\x9d\x85[\xb3-\xba]|\xf3\xa0(?:[\x80-\x86][\x80-\xbf]|\x87[\x80-\xaf])")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_FLAG_TAG = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]+\U000e007f")
_ASCII_WORD = re.compile(r"[A-Za-z0-9]")
# What makes an HTML comment an instruction rather than a note, each a reason in the finding. Markdown viewers hide
# the comment, the agent reads it: a lint directive, a TODO or a template's "replace with your description" is none
# of these (tests/scoring/test_hidden_text.py keeps such notes clean, and attacks it was not written against flagged).
COMMENT_IDIOM = "a link definition that links nowhere ([//]: # (...), Markdown's comment idiom)"
_COMMENT_ASKS = (
    ("addresses the agent", re.compile(
        r"\b(?:agents?|assistants?|AI|LLMs?|(?:language )?models?|Claude|Codex|Cursor|Copilot|Gemini|GPT|ChatGPT|"
        r"ignore (?:all |any |the )?(?:previous|prior|above|earlier|other)|disregard|override|system prompt|"
        r"when you (?:read|see|load|process|parse|open)|before (?:answering|responding|replying|you (?:answer|respond|reply))|"
        r"in (?:your|the|every) (?:next )?(?:reply|response|answer))\b", re.IGNORECASE)),
    ("asks to keep something from the user", re.compile(
        r"\b(?:secretly|quietly|silently|covertly|between us|tell nobody|"
        r"(?:do not|don't|never) (?:tell|mention|reveal|show|inform|say|disclose|log|report)|"
        r"without (?:telling|asking|informing|mentioning|notifying|reading)|hide (?:this|it) from)\b", re.IGNORECASE)),
    ("asks to run, fetch or send something", re.compile(
        r"\b(?:execute|exec|eval|sudo|curl|wget|exfiltrat\w*|upload|chmod|rm -rf)\b|\|\s*(?:ba|z)?sh\b|"
        r"\bsend\b[^.;\n]{0,40}\bto\s+(?:https?://|\S+@)|\bnc\s+(?:-\w+\s+)*\d{1,3}(?:\.\d{1,3}){3}", re.IGNORECASE)),
    ("names where credentials live", re.compile(
        r"~/\.(?:ssh|aws|netrc|gnupg)|\bid_(?:rsa|ed25519|ecdsa)\b|\bauthorized_keys\b|(?<![\w.])\.env(?![\w.])|"
        r"/etc/(?:passwd|shadow)\b", re.IGNORECASE)),
)


@dataclass(frozen=True)
class Secret:
    name: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]  # literal text every match holds: the pattern runs only on a text that has one


SECRETS = (
    Secret("private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), ("PRIVATE KEY",)),
    Secret("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
    Secret("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b"),
           ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Secret("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{32,}"), ("sk-ant-",)),
    Secret("OpenAI API key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"), ("sk-",)),
    Secret("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{20,}"), ("xox",)),
    Secret("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), ("AIza",)),
    Secret("Stripe secret key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b"), ("k_live_",)),
)
_ANY_HINT = re.compile("|".join(re.escape(hint) for secret in SECRETS for hint in secret.hints))
_PLACEHOLDER = re.compile(r"example|x{4,}|0{6,}|\*{3,}|your|dummy|fake|redacted|placeholder", re.IGNORECASE)


def hidden_text_violations(text: str, comments: Sequence[tuple[int, str]] = (),
                           definitions: Sequence[tuple[int, str]] = ()) -> list[Violation]:
    """Every hidden-instruction and secret finding in ``text`` (a decoded skill file, line breaks LF), by line;
    ``comments``: the HTML comments Markdown passes through as HTML, with their lines, and ``definitions``: the link
    definitions that link nowhere, Markdown's comment idiom (what the parse found)."""
    return (_characters(text) + _secrets(text) + _comments(comments, "an HTML comment")
            + _comments(definitions, COMMENT_IDIOM))


def _characters(text: str) -> list[Violation]:
    found: list[Violation] = []
    if text.isascii() or not _SUSPECT_UTF8.search(text.encode("utf-8", "surrogatepass")):
        return found  # almost every skill, CJK ones too: a pass or two in C
    for number, line in _suspect_lines(text):
        by_kind: dict[ViolationKind, list[str]] = {}
        for kind, _, what in _line_findings(line, number == 1):
            by_kind.setdefault(kind, []).append(what)
        found += [Violation(kind, number, _message(kind, whats)) for kind, whats in by_kind.items()]
    return found


def _suspect_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, text) of each line holding a character the scan may flag, found by one pass over the whole text."""
    line_start, number, last = 0, 1, -1
    for match in _SUSPECT.finditer(text):
        at = match.start()
        if at < last:
            continue  # a line already given
        number += text.count("\n", line_start, at)
        line_start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        last = len(text) if end == -1 else end
        yield number, text[line_start:last]


def _line_findings(line: str, first_line: bool) -> list[tuple[ViolationKind, int, str]]:
    """Each hidden character of one line that is not needed where it stands: its kind, column, and what it is."""
    out: list[tuple[ViolationKind, int, str]] = []
    flag_columns = {c for m in _FLAG_TAG.finditer(line) for c in range(m.start(), m.end())} if "\U0001f3f4" in line else set()
    rtl: bool | None = None
    tags: list[int] = []
    last_tag = -2
    runs: set[int] = set()
    for match in _SUSPECT.finditer(line):  # only the characters that may be hidden: a CJK line is mostly none
        column, code = match.start(), ord(match.group())
        if tags and not (code in TAGS and column == last_tag + 1):
            out.append(("smuggled_text", last_tag, _spelled(tags)))
            tags = []
        if code in TAGS:
            if column not in flag_columns:
                tags.append(code)
                last_tag = column
        elif code in BIDI_CONTROLS:
            out.append(("bidi_control", column, _named(code, column)))
        elif code in BIDI_MARKS:
            rtl = bool(_RTL.search(line)) if rtl is None else rtl
            if not rtl:
                out.append(("bidi_control", column, _named(code, column)))
        elif code in ZERO_WIDTH_ALWAYS:
            if not (code == 0xFEFF and first_line and column == 0):
                out.append(("zero_width", column, _named(code, column)))
        elif code in JOINERS:
            if _touches_ascii_word(line, column):
                out.append(("zero_width", column, _named(code, column)))
        elif code in VARIATION_SELECTORS:
            start, end = _run(line, column)
            if end - start >= 2 and start not in runs:  # one after the character it selects is how they work
                runs.add(start)
                out.append(("smuggled_text", start, f"a run of {end - start} variation selectors from column {start + 1}"))
        else:  # the format characters (Cf) _SUSPECT lists
            out.append(("invisible_character", column, _named(code, column)))
    if tags:
        out.append(("smuggled_text", last_tag, _spelled(tags)))
    return out


def _run(line: str, column: int) -> tuple[int, int]:
    """Where the run of variation selectors holding ``column`` starts and ends."""
    start, end = column, column + 1
    while start > 0 and ord(line[start - 1]) in VARIATION_SELECTORS:
        start -= 1
    while end < len(line) and ord(line[end]) in VARIATION_SELECTORS:
        end += 1
    return start, end


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
    if not _ANY_HINT.search(text):
        return found  # almost every skill: one pass in C finds no key format's literal text
    for secret in SECRETS:
        for number, start, end in _lines_holding(text, secret.hints):
            for match in secret.pattern.finditer(text, start, end):
                value = match.group(0)
                if secret.name != "private key block" and _PLACEHOLDER.search(value):
                    continue  # a documented example (AKIAIOSFODNN7EXAMPLE) or a placeholder, not a key
                found.append(Violation("secret", number,
                                       f"{secret.name} {_masked(value)}: a secret in a skill reaches every agent and "
                                       "repository that loads it; remove it, revoke it, and read it from the environment"))
    return found


def _lines_holding(text: str, hints: tuple[str, ...]) -> list[tuple[int, int, int]]:
    """(number, start, end) of each line holding one of ``hints``, found by substring search (in C, no regex)."""
    spans: set[tuple[int, int]] = set()
    for hint in hints:
        at = text.find(hint)
        while at != -1:
            end = text.find("\n", at)
            end = len(text) if end == -1 else end
            spans.add((text.rfind("\n", 0, at) + 1, end))
            at = text.find(hint, end)  # the rest of this line is searched by the pattern: each line once
    numbered, number, counted = [], 1, 0
    for start, end in sorted(spans):  # line numbers counted once through the text, not from its start each time
        number += text.count("\n", counted, start)
        counted = start
        numbered.append((number, start, end))
    return numbered


def _masked(value: str) -> str:
    if value.startswith("-----BEGIN"):
        return f"'{value}' (its key lines not shown)"
    return f"'{value[:4]}{'*' * 8}' ({len(value)} characters)"


def _comments(comments: Sequence[tuple[int, str]], what: str) -> list[Violation]:
    """The comments a viewer hides (one in a code span or block is shown as code) that instruct the agent."""
    found: list[Violation] = []
    for line, comment in comments:
        why, said = next(((why, hit) for why, asks in _COMMENT_ASKS if (hit := asks.search(comment))), ("", None))
        if said:
            shown = " ".join(comment.split())
            found.append(Violation("hidden_instruction", line,
                                   f"{what} {why} ({said.group(0)!r}: "
                                   f"{shown[:80] + ('...' if len(shown) > 80 else '')!r}); viewers hide it and the "
                                   "agent reads it: say it in the text, or delete it"))
    return found


def invisible_characters(text: str) -> list[str]:
    """Each distinct character of ``text`` that renders as nothing (the scan's candidates: format characters,
    variation selectors but VS16, tag characters), named by code point: what an edit may not bring in."""
    return sorted({f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in _SUSPECT.findall(text)})


def strip_hidden(text: str) -> tuple[str, list[str]]:
    """``text`` without the zero-width and bidi characters the scanner flags (nothing else changes), and one line
    per removal: its line, column and code point. What ``luban score --fix`` writes."""
    lines, changes = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if not _SUSPECT.search(line):
            lines.append(line)
            continue
        removed = {column: what for kind, column, what in _line_findings(line, number == 1)
                   if kind in ("bidi_control", "zero_width")}
        changes += [f"line {number}: removed {what}" for _, what in sorted(removed.items())]
        lines.append("".join(ch for column, ch in enumerate(line) if column not in removed))
    return "\n".join(lines), changes

"""Pure helpers for reading a model's reply: the last JSON object, and quote verification.

As in inspect_ai's graders, the *last* verdict in the reply counts: a model
that thinks aloud and then answers is read by its answer.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any


class Unscored(StrEnum):
    """Why a model's answer gave no score: each is a fallback the run counts and reports."""

    TRUNCATED = "truncated"  # cut at the reply cap
    UNPARSEABLE = "unparseable"  # no JSON, or not the shape asked for
    FABRICATED = "fabricated quote"  # evidence not in the skill: the answer is void
    NO_REPLY = "no reply"  # the call failed

_DECODER = json.JSONDecoder()


def last_json_object(text: str) -> dict[str, Any] | None:
    """The last top-level JSON object in ``text`` (fences and prose around it are fine)."""
    found: dict[str, Any] | None = None
    i = text.find("{")
    while i != -1:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict):
            found = value
        i = text.find("{", end)
    return found


def fold(text: str) -> str:
    """White space and case folded, so a quote matches however the model re-wrapped it."""
    return " ".join(text.casefold().split())


def _strip_markup(text: str) -> str:
    return re.sub(r"[*_`>#|]", "", text)


MIN_EVIDENCE = 8  # letters or digits a quote needs to be evidence: "...", "-" or "the" occur in any skill


def substantive(quote: str) -> bool:
    """A quote that could point at something: at least MIN_EVIDENCE letters or digits (a CJK character counts as one).
    A model that copies the prompt's example (``"quotes": ["..."]``) quotes text every skill has, and proves nothing."""
    return sum(ch.isalnum() for ch in quote) >= MIN_EVIDENCE


def quote_in_text(quote: str, folded_text: str) -> bool:
    """True when the quote appears in the skill (case and white space folded).

    Models often drop Markdown emphasis or backticks when quoting, so a second
    comparison ignores those marks on both sides; nothing else is forgiven.
    """
    q = fold(quote)
    if not q:
        return False
    if q in folded_text:
        return True
    return fold(_strip_markup(quote)) in fold(_strip_markup(folded_text))

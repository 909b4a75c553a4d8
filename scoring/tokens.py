"""A token count without a tokenizer: what the size guidance and token inflation need when no encoding is at hand."""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    """About four characters a token, and one a token for CJK (which tokenizers split about that finely), counted by
    UTF-8 length — a CJK character is three bytes, so (bytes - characters) / 2 of them — which takes one pass in C
    where classifying each character takes a Python step per character."""
    wide = 0 if text.isascii() else (len(text.encode("utf-8", "surrogatepass")) - len(text)) // 2
    return wide + math.ceil((len(text) - wide) / 4)

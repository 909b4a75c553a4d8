"""A token count without a tokenizer: what the size guidance and token inflation need when no encoding is at hand."""

from __future__ import annotations

import math


def estimate_tokens(text: str) -> int:
    """About four characters a token, one a token for CJK (which tokenizers split about that finely)."""
    cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff")
    return cjk + math.ceil((len(text) - cjk) / 4)

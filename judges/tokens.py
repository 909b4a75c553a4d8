"""Token counts for token inflation: tiktoken when its encoding is already on disk, else an estimate.

tiktoken fetches its BPE files from the internet on first use. Luban never
triggers that download (it may run where only the model server is reachable),
so tiktoken is used only when the encoding is already in its cache
(``TIKTOKEN_CACHE_DIR``); otherwise the estimate is one token per CJK character
plus one per four other characters, which is within ~20 % for English prose.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from functools import lru_cache

from scoring.tokens import estimate_tokens

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def _cached(encoding_name: str) -> bool:
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "data-gym-cache")
    digest = hashlib.sha1(_BLOB.format(encoding_name).encode()).hexdigest()
    return os.path.exists(os.path.join(cache_dir, digest))


@lru_cache(maxsize=32)
def _encoding(model: str):
    try:
        import tiktoken

        try:
            name = tiktoken.encoding_name_for_model(model)
        except KeyError:
            name = "cl100k_base"  # unknown model (vLLM, Ollama…): the common default
        return tiktoken.get_encoding(name) if _cached(name) else None
    except Exception:  # noqa: BLE001 - any tiktoken failure falls back to the estimate
        return None


def count_tokens(text: str, model: str) -> tuple[int, str]:
    """(token count, how it was counted: 'tiktoken' or 'estimate')."""
    encoding = _encoding(model)
    if encoding is not None:
        return len(encoding.encode(text, disallowed_special=())), "tiktoken"
    return estimate_tokens(text), "estimate"

"""Token counting for budgets and ``Turn.token_count``.

Uses tiktoken's ``cl100k_base`` when its encoding file is available (tiktoken downloads it on first use and caches
it; set ``TIKTOKEN_CACHE_DIR`` to a directory that holds it for offline machines). Otherwise falls back to a
documented estimate: one token per word-piece of at most four characters and one per punctuation mark, which
over-counts English slightly (so budgets stay safe).
"""

from __future__ import annotations

import functools
import re

__all__ = ["count_tokens", "tokenizer_name"]

_PIECES = re.compile(r"\w{1,4}|[^\w\s]")


@functools.lru_cache(maxsize=1)
def _encoding():
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # not installed, or no network to fetch the encoding file
        return None


def tokenizer_name() -> str:
    """``tiktoken:cl100k_base`` or ``estimate`` (the fallback)."""
    return "tiktoken:cl100k_base" if _encoding() is not None else "estimate"


def count_tokens(text: str) -> int:
    """Tokens in ``text`` (exact with tiktoken, a safe over-estimate without it)."""
    encoding = _encoding()
    if encoding is not None:
        return len(encoding.encode(text, disallowed_special=()))
    return len(_PIECES.findall(text))

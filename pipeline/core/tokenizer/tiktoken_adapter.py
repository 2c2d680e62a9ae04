"""Every use of tiktoken's private parts, in one place (checked against tiktoken 0.14.0).

* ``core_bpe``: ``Encoding._core_bpe``, the Rust core. Calling it directly skips the Python
  layer's per-call checks (special-token scans), which are a large share of the time on short texts.
* ``packed_encoder``: the core's ``encode_to_tiktoken_buffer`` with no special token allowed:
  ``encode_ordinary``'s ids as a buffer of native unsigned 32-bit ints, without a Python int per id
  (what ``Encoding.encode_to_numpy`` uses).
* ``encoding_params``: the pattern and special tokens of one of tiktoken's own encodings
  (``tiktoken_ext.openai_public``'s constructors), with the ranks we already read: the constructor
  would otherwise download its file, so its module's ``load_tiktoken_bpe`` is swapped for the call.

``tests/test_library_adapters.py`` fails loudly when a new tiktoken changes any of this.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["core_bpe", "packed_encoder", "encoding_params", "CHECKED_VERSION"]

CHECKED_VERSION = "0.14.0"
_swap_lock = threading.Lock()


def core_bpe(encoding: Any) -> Any:
    """The Rust ``CoreBPE`` behind a ``tiktoken.Encoding`` (same ``encode_ordinary`` answers, fewer checks)."""
    return encoding._core_bpe


_NO_SPECIALS: frozenset[str] = frozenset()


def packed_encoder(core: Any) -> Callable[[str], Any]:
    """``text -> buffer`` of ``core.encode_ordinary(text)``'s ids as native unsigned 32-bit ints
    (format "I"). With no special token allowed the core's special-aware encode finds no special
    token to stop at and encodes the whole text as ordinary text, as encode_ordinary does."""
    encode = core.encode_to_tiktoken_buffer
    return lambda text: encode(text, _NO_SPECIALS)


def encoding_params(constructor: Callable[[], dict], ranks: dict[bytes, int]) -> dict:
    """``constructor()`` (e.g. ``openai_public.o200k_base``) with ``ranks`` in place of its download."""
    from tiktoken_ext import openai_public

    with _swap_lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *args, **kwargs: ranks
        try:
            return constructor()
        finally:
            openai_public.load_tiktoken_bpe = original

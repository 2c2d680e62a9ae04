"""Every use of tiktoken's private parts, in one place (checked against tiktoken 0.14.0).

* ``core_bpe``: ``Encoding._core_bpe``, the Rust core. Calling it directly skips the Python
  layer's per-call checks (special-token scans), which are a large share of the time on short texts.
* ``encoding_params``: the pattern and special tokens of one of tiktoken's own encodings
  (``tiktoken_ext.openai_public``'s constructors), with the ranks we already read: the constructor
  would otherwise download its file, so its module's ``load_tiktoken_bpe`` is swapped for the call.

``tests/test_library_adapters.py`` fails loudly when a new tiktoken changes any of this.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["core_bpe", "encoding_params", "CHECKED_VERSION"]

CHECKED_VERSION = "0.14.0"
_swap_lock = threading.Lock()


def core_bpe(encoding: Any) -> Any:
    """The Rust ``CoreBPE`` behind a ``tiktoken.Encoding`` (same ``encode_ordinary`` answers, fewer checks)."""
    return encoding._core_bpe


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

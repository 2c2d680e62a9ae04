"""Every use of tiktoken's private parts, in one place (checked range: ``CHECKED``).

* ``core_bpe``: ``Encoding._core_bpe``, the Rust core. Calling it directly skips the Python
  layer's per-call checks (special-token scans), which are a large share of the time on short texts.
* ``packed_encoder``: the core's ``encode_to_tiktoken_buffer`` with no special token allowed:
  ``encode_ordinary``'s ids as a buffer of native unsigned 32-bit ints, without a Python int per id
  (what ``Encoding.encode_to_numpy`` uses).
* ``encoding_params``: the pattern and special tokens of one of tiktoken's own encodings
  (``tiktoken_ext.openai_public``'s constructors), with the ranks we already read: the constructor
  would otherwise download its file, so its module's ``load_tiktoken_bpe`` is swapped for the call.

Outside the checked releases ``self_test`` decides (``checked_versions``); where it fails, loading a
tiktoken tokenizer raises, naming the release to install: tiktoken has no public path to the same ids
at the same speed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..checked_versions import CheckedRange, usable

__all__ = ["core_bpe", "packed_encoder", "encoding_params", "CHECKED", "self_test"]

CHECKED = CheckedRange("tiktoken", "pipeline/core/tokenizer/tiktoken_adapter.py", "0.14.0", "0.14.0")
_swap_lock = threading.Lock()


def core_bpe(encoding: Any) -> Any:
    """The Rust ``CoreBPE`` behind a ``tiktoken.Encoding`` (same ``encode_ordinary`` answers, fewer checks)."""
    if not usable(CHECKED, self_test):
        raise RuntimeError(f"tokfidelity's tiktoken adapter does not work with the installed tiktoken; install "
                           f"tiktoken=={CHECKED.newest} (the release it was checked against)")
    return encoding._core_bpe


def self_test() -> None:
    """Raise unless the core, its packed encoder and the encoding constructors answer as this module expects."""

    import tiktoken
    from tiktoken_ext import openai_public

    enc = tiktoken.Encoding(name="self-test", pat_str=r"\S+|\s+",
                            mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={"<s>": 256})
    core = enc._core_bpe
    for text in ["hello world", "<s> stays text", "é 🙂"]:
        want = enc.encode_ordinary(text)
        if core.encode_ordinary(text) != want or memoryview(packed_encoder(core)(text)).cast("B").cast("I").tolist() != want:
            raise AssertionError(f"the core encodes {text!r} otherwise than encode_ordinary")
    params = encoding_params(openai_public.o200k_base, {b"a": 0})
    if params.get("mergeable_ranks") != {b"a": 0} or "pat_str" not in params:
        raise AssertionError("openai_public.o200k_base no longer builds its parameters through load_tiktoken_bpe")


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

"""Every use of the Hugging Face ``tokenizers`` library's private parts, in one place
(checked against tokenizers 0.23.3).

* ``byte_level_bpe``: a GPT-2 style byte-level BPE from ``vocab.json`` + ``merges.txt``, configured
  exactly as ``tokenizers.ByteLevelBPETokenizer`` does, taken from its ``_tokenizer`` (the plain
  ``tokenizers.Tokenizer`` it wraps), so every backend works on the same class.

``tests/test_library_adapters.py`` fails loudly when a new release changes this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["byte_level_bpe", "CHECKED_VERSION"]

CHECKED_VERSION = "0.23.3"


def byte_level_bpe(vocab: Path, merges: Path) -> Any:
    """The ``tokenizers.Tokenizer`` of a byte-level BPE read from ``vocab`` and ``merges``."""
    from tokenizers import ByteLevelBPETokenizer

    return ByteLevelBPETokenizer(str(vocab), str(merges))._tokenizer

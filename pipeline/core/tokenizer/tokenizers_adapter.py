"""Every use of the Hugging Face ``tokenizers`` library's private parts, in one place
(checked range: ``CHECKED``).

* ``byte_level_bpe``: a GPT-2 style byte-level BPE from ``vocab.json`` + ``merges.txt``, configured
  exactly as ``tokenizers.ByteLevelBPETokenizer`` does, taken from its ``_tokenizer`` (the plain
  ``tokenizers.Tokenizer`` it wraps), so every backend works on the same class.

Outside the checked releases ``self_test`` decides (``checked_versions``); where it fails,
``byte_level_bpe`` builds the same tokenizer from the public ``tokenizers.models.BPE`` instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..checked_versions import CheckedRange, usable

__all__ = ["byte_level_bpe", "CHECKED", "self_test"]

CHECKED = CheckedRange("tokenizers", "pipeline/core/tokenizer/tokenizers_adapter.py", "0.23.3", "0.23.3")


def byte_level_bpe(vocab: Path, merges: Path) -> Any:
    """The ``tokenizers.Tokenizer`` of a byte-level BPE read from ``vocab`` and ``merges``."""
    from tokenizers import ByteLevelBPETokenizer

    if usable(CHECKED, self_test):
        return ByteLevelBPETokenizer(str(vocab), str(merges))._tokenizer
    return _public_byte_level_bpe(vocab, merges)


def _public_byte_level_bpe(vocab: Path, merges: Path) -> Any:
    """The same tokenizer as ``ByteLevelBPETokenizer`` configures it, from public classes only."""
    from tokenizers import Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    tok = Tokenizer(BPE.from_file(str(vocab), str(merges)))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def self_test() -> None:
    """Raise unless ``ByteLevelBPETokenizer`` still wraps a plain ``Tokenizer`` that its public twin equals."""
    import json
    import tempfile

    from tokenizers import ByteLevelBPETokenizer, Tokenizer

    with tempfile.TemporaryDirectory() as folder:
        vocab, merges = Path(folder) / "vocab.json", Path(folder) / "merges.txt"
        vocab.write_text(json.dumps({"a": 0, "b": 1, "ab": 2, "Ġ": 3}))
        merges.write_text("#version: 0.2\na b\n")
        wrapped = ByteLevelBPETokenizer(str(vocab), str(merges))._tokenizer
        if not isinstance(wrapped, Tokenizer):
            raise AssertionError(f"ByteLevelBPETokenizer._tokenizer is a {type(wrapped).__name__}, not a Tokenizer")
        public = _public_byte_level_bpe(vocab, merges)
        if wrapped.encode("ab a b").ids != public.encode("ab a b").ids:
            raise AssertionError("ByteLevelBPETokenizer no longer configures the tokenizer as its public twin does")

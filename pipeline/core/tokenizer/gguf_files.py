"""The tokenizer inside a GGUF model file, built from the file's own metadata with the ``gguf`` reader.

A GGUF carries no ``tokenizer.json``: llama.cpp stores the vocabulary, the merges and each token's
type as metadata. For a byte-level BPE vocabulary (``tokenizer.ggml.model`` = ``gpt2``: SmolLM2,
Qwen, Llama 3 and most others) the tokenizer is rebuilt here from those fields, exactly as
transformers' GGUF converter builds it (``integrations/gguf/gguf_tokenizer_mapping.py``:
``byte_level_tokenizer``, ``add_gguf_special_tokens``), plus llama.cpp's digit pre-split that
transformers drops. Reading the file needs neither transformers nor torch (transformers' own GGUF
reader imports torch since 5.24). ``tests/test_gguf_files.py`` proves the two builds give the
same ids.

Other vocabulary kinds (sentencepiece ``llama``, ``t5``...) are handed to transformers' loader,
which needs torch; the error says so where it is missing.
"""

from __future__ import annotations

from pathlib import Path

import hashlib

from ..errors import TokfidelityError
from ..files import atomic_path, cache_root, open_input
from .base import byte_level_decoder
from .hf_files import HFTokenizer, _added_tokens

__all__ = ["GGUF_BUILDER_VERSION", "GgufVocabulary", "read_gguf_vocabulary", "build_byte_level_bpe", "load_gguf",
           "gguf_cache_dir"]

# Part of the cache key of a built tokenizer: a change to what this module builds makes new entries.
GGUF_BUILDER_VERSION = "gguf-bpe-1"

# llama.cpp token types (gguf.TokenType): CONTROL tokens are special; USER_DEFINED are added, not special.
_CONTROL, _USER_DEFINED = 3, 4

# llama.cpp pre-tokenizer names whose regex splits every digit on its own; transformers drops this.
DIGIT_SPLIT_PRE = frozenset({"smollm", "starcoder", "refact", "command-r"})
# Pre-tokenizer names for which transformers keeps GPT-2's own split (it has no regex of its own for
# them): a byte-level vocabulary with one of these is built here. Others (llama-bpe, qwen2...) carry a
# split regex that transformers restates, and go through its loader.
BUILT_HERE_PRE = frozenset({"", "default", "gpt-2"}) | DIGIT_SPLIT_PRE


def gguf_cache_dir(path: Path) -> Path:
    """Where the tokenizer built from a GGUF file is kept, keyed by the file's sha256 and this builder."""
    with open_input(path) as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return cache_root() / "gguf-tokenizers" / f"{GGUF_BUILDER_VERSION}-{digest[:32]}"


def load_gguf(path: Path) -> HFTokenizer:
    """The tokenizer inside a GGUF file.

    Built once per file and kept as a tokenizer.json keyed by the GGUF's sha256 (the cache is safe to
    delete); later loads read only that. Both files are fingerprinted.
    """
    from tokenizers import Tokenizer as RustTokenizer

    cache = gguf_cache_dir(path)
    cached = cache / "tokenizer.json"
    if cached.exists():
        tok = RustTokenizer.from_file(str(cached))
    else:
        vocab = read_gguf_vocabulary(path)
        if vocab.model == "gpt2" and vocab.pre in BUILT_HERE_PRE:
            tok = build_byte_level_bpe(vocab)
        else:
            tok = transformers_gguf_tokenizer(path, vocab.pre)
        cache.mkdir(parents=True, exist_ok=True)
        with atomic_path(cached) as tmp:
            tok.save(str(tmp))
    return HFTokenizer(path.stem, str(path), [path, cached], tok, _added_tokens(tok, None))


def transformers_gguf_tokenizer(path: Path, pre: str):
    """transformers' own build of a GGUF tokenizer (it imports torch since 5.24), plus the digit split.

    Used for the vocabulary kinds this module does not build, and by the tests as the reference."""
    from tokenizers import pre_tokenizers

    from ..model_files import transformers_source

    try:
        from transformers import AutoTokenizer

        with transformers_source(path) as (folder, kwargs):  # the GGUF alone: nothing beside it is read or run
            hf = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **kwargs)
    except ImportError as e:
        raise TokfidelityError(
            f"this GGUF vocabulary (pre-tokenizer {pre!r}) is read through transformers, which needs torch here ({e}); "
            "install torch (the CPU build), or point the manifest's tokenizer at the model's tokenizer.json",
            path=str(path)) from None
    tok = hf.backend_tokenizer
    if pre in DIGIT_SPLIT_PRE:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), tok.pre_tokenizer])
    return tok


class GgufVocabulary:
    """The tokenizer fields of one GGUF file, as llama.cpp wrote them."""

    def __init__(self, path: Path, model: str, pre: str, tokens: list[str], token_types: list[int],
                 merges: list[str], special_ids: dict[str, int]):
        self.path, self.model, self.pre = path, model, pre
        self.tokens, self.token_types, self.merges, self.special_ids = tokens, token_types, merges, special_ids


def read_gguf_vocabulary(path: Path) -> GgufVocabulary:
    """The vocabulary, merges, token types and special ids of a GGUF file (its tensors are not read)."""
    import gguf

    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, OSError) as e:
        raise TokfidelityError(f"not a readable GGUF file: {e}", path=str(path)) from None
    fields = reader.fields

    def value(key: str, default=None):
        field = fields.get(key)
        return default if field is None else field.contents()

    tokens = value("tokenizer.ggml.tokens")
    if not tokens:
        raise TokfidelityError("the GGUF file holds no tokenizer (no tokenizer.ggml.tokens)", path=str(path),
                               field="tokenizer.ggml.tokens")
    special_ids = {name: int(value(f"tokenizer.ggml.{key}")) for name, key in (
        ("bos", "bos_token_id"), ("eos", "eos_token_id"), ("unk", "unknown_token_id"), ("pad", "padding_token_id"))
        if value(f"tokenizer.ggml.{key}") is not None}
    return GgufVocabulary(path, str(value("tokenizer.ggml.model", "")), str(value("tokenizer.ggml.pre", "")),
                          list(tokens), [int(t) for t in value("tokenizer.ggml.token_type", [])],
                          list(value("tokenizer.ggml.merges", [])), special_ids)


def build_byte_level_bpe(vocab: GgufVocabulary):
    """A ``tokenizers.Tokenizer`` for a ``gpt2`` (byte-level BPE) GGUF vocabulary, as transformers builds it."""
    from tokenizers import AddedToken, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    spelled = set(byte_level_decoder())  # the byte alphabet's printable stand-ins
    byte_spelling = {b: c for c, b in byte_level_decoder().items()}
    ids = {
        token if set(token) <= spelled else "".join(byte_spelling[b] for b in token.encode("utf-8")): index
        for index, token in enumerate(vocab.tokens)
    }
    if not vocab.merges:
        raise TokfidelityError("the GGUF file's byte-level vocabulary lists no merges (tokenizer.ggml.merges)",
                               path=str(vocab.path), field="tokenizer.ggml.merges")
    merges = [tuple(m.split(" ")) for m in vocab.merges]
    tok = Tokenizer(BPE(vocab=ids, merges=merges, dropout=None, continuing_subword_prefix="", end_of_word_suffix="",
                        fuse_unk=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    # The named special tokens first, then every CONTROL token spelled in the byte alphabet (one that is
    # not is a llama.cpp mislabel), then the USER_DEFINED ones as plain added tokens.
    named = [vocab.tokens[i] for key in ("unk", "bos", "eos", "pad") if (i := vocab.special_ids.get(key)) is not None
             and 0 <= i < len(vocab.tokens)]
    control = [t for t, kind in zip(vocab.tokens, vocab.token_types) if kind == _CONTROL and set(t) <= spelled]
    specials = list(dict.fromkeys(named + control))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    user = [t for t, kind in zip(vocab.tokens, vocab.token_types) if kind == _USER_DEFINED and t in ids]
    if user:
        tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in user])
    if vocab.pre in DIGIT_SPLIT_PRE:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), tok.pre_tokenizer])
    return tok

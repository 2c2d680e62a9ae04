"""Hugging Face tokenizers: ``tokenizer.json``, ``vocab.json`` + ``merges.txt``, and the tokenizer inside a GGUF file."""

from __future__ import annotations

import functools
import hashlib
import json
import warnings
from collections.abc import Mapping
from pathlib import Path

from ..files import atomic_path, cache_root, open_input
from .base import Tokenizer, read_json
from .tokenizers_adapter import byte_level_bpe


@functools.cache
def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, inverted: printable stand-in char -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class HFTokenizer(Tokenizer):
    """A ``tokenizers`` tokenizer. Ordinary text goes through tiktoken's core instead (``encoder`` says
    which) where ``fast_bpe`` proved it gives the same ids; marker-aware ``encode`` always goes
    through ``tokenizers``."""

    encoder = "tokenizers"
    encoder_note = ""  # why the fast encoder is not used, where it is not

    def __init__(self, name, source, files, tokenizer, added_tokens: Mapping[str, int], fast: bool = True):
        super().__init__(name, source, files, added_tokens)
        self._with_specials = tokenizer
        # Ordinary text never matches an added token, special or not: encode_special_tokens only
        # covers tokens flagged special, so drop the added-token table from a copy instead.
        raw = tokenizer.to_str()
        data = json.loads(raw)
        data["added_tokens"] = []
        self._ordinary = tokenizer.__class__.from_str(json.dumps(data))
        self.n_vocab = tokenizer.get_vocab_size(with_added_tokens=True)
        self._bytes = self._build_byte_table(tokenizer)
        if fast:
            self._use_fast(data, hashlib.sha256(raw.encode()).hexdigest())

    def _use_fast(self, data: dict, digest: str) -> None:
        """Ordinary text on tiktoken's core where proven equal; else say once why not."""
        from .fast_bpe import ENCODER_NAME, fast_encoder

        found = fast_encoder(data, self.name, self._reference_batch, digest)
        if isinstance(found, str):
            self.encoder_note = found
            warnings.warn(f"tokenizer {self.name!r}: ordinary text is encoded with the tokenizers library, "
                          f"not tiktoken's faster core ({found})", FastEncoderUnavailable, stacklevel=2)
            return
        self._fast = found
        self.encoder = ENCODER_NAME
        self.encode_ordinary = self._fast_encode_ordinary
        self.encode_ordinary_packed = self._fast_encode_ordinary_packed
        self.encode_ordinary_batch = self._fast_encode_ordinary_batch

    @functools.cached_property
    def fingerprint(self) -> str:
        """The files' and specials' fingerprint (``Tokenizer.fingerprint``), and the encoder where it is not
        the tokenizers library: ids proven on one encoder are pinned to it."""
        files = Tokenizer.fingerprint.func(self)
        if self.encoder == "tokenizers":
            return files
        return hashlib.sha256(f"{files}\0encoder={self.encoder}".encode()).hexdigest()

    def _reference_batch(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._ordinary.encode_batch(texts, add_special_tokens=False)]

    def _fast_encode_ordinary(self, text: str) -> list[int]:
        try:
            return self._fast.encode_ordinary(text)
        except Exception:  # noqa: BLE001 - lone surrogates: the tokenizers library's answer (or its error)
            return self._ordinary.encode(text, add_special_tokens=False).ids

    def _fast_encode_ordinary_packed(self, text: str):
        """``encode_ordinary(text)`` as a buffer of native unsigned 32-bit ints; None: ask encode_ordinary."""
        try:
            return self._fast.encode_ordinary_packed(text)
        except Exception:  # noqa: BLE001
            return None

    def _fast_encode_ordinary_batch(self, texts):
        texts = list(texts)
        try:
            return self._fast.encode_ordinary_batch(texts)
        except Exception:  # noqa: BLE001 - lone surrogates: the tokenizers library's answer (or its error)
            return [e.ids for e in self._ordinary.encode_batch(texts, add_special_tokens=False)]

    @property
    def backend(self):
        """The ``tokenizers.Tokenizer`` with every special allowed (what ``encode`` uses); ``.save(path)``
        writes it as a tokenizer.json that other programs (a vLLM server) load unchanged."""
        return self._with_specials

    def _build_byte_table(self, tokenizer) -> list[bytes]:
        byte_decoder = _byte_decoder()
        vocab = tokenizer.get_vocab(with_added_tokens=True)
        size = max(vocab.values()) + 1 if vocab else 0
        self.n_vocab = max(self.n_vocab, size)
        table = [b""] * size
        byte_level = '"ByteLevel"' in tokenizer.to_str()[:200000]
        for piece, i in vocab.items():
            if piece in self.special_tokens:
                table[i] = piece.encode("utf-8")
            elif byte_level and all(c in byte_decoder for c in piece):
                table[i] = bytes(byte_decoder[c] for c in piece)
            elif piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6:  # byte fallback
                table[i] = bytes([int(piece[3:5], 16)])
            else:
                table[i] = tokenizer.decode([i], skip_special_tokens=False).encode("utf-8")
        return table

    def encode_ordinary(self, text: str) -> list[int]:
        return self._ordinary.encode(text, add_special_tokens=False).ids

    def encode_ordinary_batch(self, texts):
        return [e.ids for e in self._ordinary.encode_batch(list(texts), add_special_tokens=False)]

    def encode(self, text: str) -> list[int]:
        return self._with_specials.encode(text, add_special_tokens=False).ids


class FastEncoderUnavailable(UserWarning):
    """A byte-level BPE tokenizer's ordinary text goes through the tokenizers library (the message says why)."""


def _added_tokens(tokenizer, config_file: Path | None) -> dict[str, int]:
    added = {t.content: i for i, t in tokenizer.get_added_tokens_decoder().items()}
    if config_file is not None and config_file.exists():
        for k, v in read_json(config_file).get("added_tokens_decoder", {}).items():
            added.setdefault(v["content"], int(k))
    return added


def _load_hf_folder(folder: Path) -> HFTokenizer:
    from tokenizers import Tokenizer as RustTokenizer

    config_file = folder / "tokenizer_config.json"
    if (folder / "tokenizer.json").exists():
        tok = RustTokenizer.from_file(str(folder / "tokenizer.json"))
        files = [folder / "tokenizer.json"]
    else:
        from tokenizers import AddedToken

        tok = byte_level_bpe(folder / "vocab.json", folder / "merges.txt")
        if config_file.exists():
            decoder = read_json(config_file).get("added_tokens_decoder", {})
            tok.add_special_tokens(
                [AddedToken(v["content"], special=v.get("special", True), normalized=False) for _, v in sorted(decoder.items(), key=lambda kv: int(kv[0]))]
            )
        files = [folder / "vocab.json", folder / "merges.txt"]
    if config_file.exists():
        files.append(config_file)
    return HFTokenizer(folder.name, str(folder), files, tok, _added_tokens(tok, config_file))


def _gguf_cache_dir(path: Path) -> Path:
    """Where the tokenizer rebuilt from a GGUF file is kept, keyed by the file's sha256."""
    root = cache_root()
    with open_input(path) as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return root / "gguf-tokenizers" / digest[:32]


def _load_gguf(path: Path) -> HFTokenizer:
    """The tokenizer inside a GGUF file, rebuilt by transformers, plus llama.cpp's digit pre-split.

    Rebuilding takes seconds (transformers parses the whole file), so the result is cached as a
    tokenizer.json keyed by the GGUF's sha256; later loads read only that.
    """
    from tokenizers import Tokenizer as RustTokenizer

    cache = _gguf_cache_dir(path)
    cached = cache / "tokenizer.json"
    if cached.exists():
        tok = RustTokenizer.from_file(str(cached))
    else:
        tok = _rebuild_gguf_tokenizer(path)
        cache.mkdir(parents=True, exist_ok=True)
        with atomic_path(cached) as tmp:
            tok.save(str(tmp))
    # What is loaded is the rebuilt tokenizer.json as much as the GGUF: both are fingerprinted.
    return HFTokenizer(path.stem, str(path), [path, cached], tok, _added_tokens(tok, None))


def _rebuild_gguf_tokenizer(path: Path):
    import gguf
    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer

    from ..model_files import transformers_source

    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get("tokenizer.ggml.pre")
    pre = bytes(field.parts[field.data[0]]).decode() if field is not None else ""
    with transformers_source(path) as (folder, kwargs):  # the GGUF alone: nothing beside it is read or run
        hf = AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **kwargs)
    tok = hf.backend_tokenizer
    if pre in _GGUF_DIGIT_SPLIT_PRE:
        # transformers drops llama.cpp's per-digit split for these vocabularies; put it back.
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), tok.pre_tokenizer])
    return tok


# llama.cpp pre-tokenizer names whose regex splits every digit on its own.
_GGUF_DIGIT_SPLIT_PRE = {"smollm", "starcoder", "refact", "command-r"}

"""Hugging Face tokenizers: ``tokenizer.json``, ``vocab.json`` + ``merges.txt`` (GGUF files: ``gguf_files``)."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from ..files import atomic_path, cache_root, open_input
from .base import Tokenizer, byte_level_decoder, read_json
from .state_cache import hf_key, read_hf_state, write_hf_state
from .tokenizers_adapter import byte_level_bpe


class HFTokenizer(Tokenizer):
    """A ``tokenizers`` tokenizer. Ordinary text goes through tiktoken's core instead (``encoder`` says
    which) where ``fast_bpe`` proved it gives the same ids; marker-aware ``encode`` always goes
    through ``tokenizers``."""

    encoder = "tokenizers"
    encoder_note = ""  # why the fast encoder is not used, where it is not

    def __init__(self, name, source, files, tokenizer, added_tokens: Mapping[str, int], fast: bool = True):
        super().__init__(name, source, files, added_tokens)
        self._with_specials = tokenizer
        self.n_vocab = tokenizer.get_vocab_size(with_added_tokens=True)
        # The byte table and the fast encoder's ranks and verdict are kept by the tokenizer-state cache, keyed by
        # the files, the added tokens, the libraries and this code (state_cache.hf_key): the second load reads them.
        # A tokenizer given without files (built in memory) is not described by any: it is built every time.
        key = hf_key(self.file_digests, self.special_tokens, fast) if self.files else None
        state = read_hf_state(key) if key is not None else None
        if state is not None:
            meta, self._bytes, ranks = state
            self.n_vocab = max(self.n_vocab, len(self._bytes))
            if fast:
                self._fast_from(meta, ranks)
            return
        raw = tokenizer.to_str()
        data = json.loads(raw)
        self._bytes = self._build_byte_table(tokenizer)
        fast_bpe = self._use_fast(data, hashlib.sha256(raw.encode()).hexdigest()) if fast else None
        meta = {"verdict": "ok" if fast_bpe is not None else self.encoder_note, "pat_str": getattr(fast_bpe, "pat_str", ""),
                "nfc": bool(getattr(fast_bpe, "nfc", False))}
        if key is not None:
            write_hf_state(key, meta, self._bytes, fast_bpe.ranks if fast_bpe is not None else None)

    @functools.cached_property
    def _ordinary(self):
        """The tokenizer without its added-token table (ordinary text never matches an added token, special or not:
        encode_special_tokens only covers tokens flagged special), made where first asked for: the fast encoder,
        once proven, leaves it to lone surrogates."""
        data = json.loads(self._with_specials.to_str())
        data["added_tokens"] = []
        return self._with_specials.__class__.from_str(json.dumps(data))

    def _fast_from(self, meta: dict, ranks: dict[bytes, int] | None) -> None:
        """The fast encoder, or the reason it is not used, as a load with the same key decided it."""
        from .fast_bpe import FastBPE

        if ranks is None:
            self._refuse(str(meta.get("verdict") or "no verdict kept"))
            return
        self._adopt(FastBPE.rebuilt(self.name, ranks, str(meta["pat_str"]), bool(meta["nfc"])))

    def _refuse(self, why: str) -> None:
        """Ordinary text stays on the tokenizers library; ``encoder_note`` says why. Not a warning: the ids are
        the same either way, only the speed differs, and a user cannot act on a vocabulary's shape
        (``tokfidelity audit`` prints the encoder and the note)."""
        self.encoder_note = why

    def _adopt(self, fast) -> None:
        from .fast_bpe import ENCODER_NAME

        self._fast = fast
        self.encoder = ENCODER_NAME
        self.encode_ordinary = self._fast_encode_ordinary
        self.encode_ordinary_packed = self._fast_encode_ordinary_packed
        self.encode_ordinary_batch = self._fast_encode_ordinary_batch

    def _use_fast(self, data: dict, digest: str):
        """Ordinary text on tiktoken's core where proven equal (the FastBPE returned); else say once why not (None)."""
        from .fast_bpe import fast_encoder

        found = fast_encoder(data, self.name, self._reference_batch, digest)
        if isinstance(found, str):
            self._refuse(found)
            return None
        self._adopt(found)
        return found

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
        byte_decoder = byte_level_decoder()
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


def _added_tokens(tokenizer, config_file: Path | None) -> dict[str, int]:
    added = {t.content: i for i, t in tokenizer.get_added_tokens_decoder().items()}
    if config_file is not None and config_file.exists():
        for k, v in read_json(config_file).get("added_tokens_decoder", {}).items():
            added.setdefault(v["content"], int(k))
    return added


# A model folder holding its chat template and tokenizer_config.json but not its vocabulary, and the folder
# beside it whose vocabulary, merges and added tokens it shares (checked equal: ../shared/tokenizers/README.md).
DERIVED_HF_FOLDERS = {"qwen3-coder": "qwen3"}


def derived_hf_base(path: Path) -> Path | None:
    """The folder lending ``path`` its vocabulary (``DERIVED_HF_FOLDERS``), when ``path`` has none of its own."""
    base = DERIVED_HF_FOLDERS.get(path.name)
    if base is None or (path / "tokenizer.json").exists() or (path / "vocab.json").exists():
        return None
    lender = path.parent / base
    return lender if (lender / "tokenizer.json").exists() and (path / "tokenizer_config.json").exists() else None


def _load_hf_folder(folder: Path, vocabulary: Path | None = None) -> HFTokenizer:
    """The tokenizer of ``folder`` (its name, its tokenizer_config.json and so its chat template), its
    vocabulary read from ``vocabulary`` when given (a derived folder), else from ``folder``."""
    from tokenizers import Tokenizer as RustTokenizer

    if vocabulary is not None:
        tok = RustTokenizer.from_file(str(vocabulary / "tokenizer.json"))
        config_file = folder / "tokenizer_config.json"
        files = [vocabulary / "tokenizer.json", config_file]
        return HFTokenizer(folder.name, str(folder), files, tok, _added_tokens(tok, config_file))
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

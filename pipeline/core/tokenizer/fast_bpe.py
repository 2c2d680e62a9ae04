"""tiktoken's core for a ``tokenizer.json`` byte-level BPE's ordinary text, used only where proven equal.

``fast_encoder(data, name, reference)`` builds a tiktoken ``Encoding`` from the tokenizer's own
description (``data``, its tokenizer.json as a dict) and returns it only when it gave the same ids as
``reference`` (the ``tokenizers`` encoder of ordinary text) on every probe; else the reason it is not
used. What is checked, and why:

* The model: BPE, no dropout, no word prefix or suffix; every byte that UTF-8 text can hold a token.
* Merge order: tiktoken merges the adjacent pair whose joined token has the lowest id, ``tokenizers``
  the pair whose merge rule comes first. They agree when the joined tokens' ids rise with the rule
  order: checked, else refused. Only tokens the rules can make (single bytes and rule results) are
  ranks, so tiktoken never makes a token ``tokenizers`` cannot.
* Whole pieces: tiktoken gives a piece that is itself a token that token; ``tokenizers`` does so only
  with ``ignore_merges``, else runs the merges. Without it, every token must come out of the merges
  whole: checked once per tokenizer file (seconds), the answer kept in tokfidelity's cache.
* The normalizer: none, or NFC (the tokenizers library's own, applied here to non-ASCII text); others are refused.
* The pre-tokenizer: as one tiktoken pattern (``bpe_pattern``), or refused.
* Then the probes (``PROBES``): every pre-tokenizer branch, digits, scripts, emoji, whitespace runs and
  marker text, compared id for id with ``reference``. tests/test_fast_bpe.py compares well over 100,000
  more texts per shipped tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from .base import byte_level_decoder
from .bpe_pattern import Refused, pattern_for

__all__ = ["FastBPE", "fast_encoder", "PROBES", "Refused"]

ENCODER_NAME = "tiktoken-bpe"


class FastBPE:
    """Ordinary-text encoding of a byte-level BPE on tiktoken's Rust core."""

    def __init__(self, encoding: Any, nfc: bool, ranks: dict[bytes, int] | None = None, pat_str: str = ""):
        from .tiktoken_adapter import core_bpe, packed_encoder

        self.encoding = encoding
        self.ranks, self.pat_str, self.nfc = ranks, pat_str, nfc  # what rebuilds it (the tokenizer-state cache keeps them)
        core = core_bpe(encoding)
        self._encode = core.encode_ordinary
        self._packed = packed_encoder(core)
        self._nfc = nfc
        # The tokenizers library's own NFC, not Python's unicodedata: their Unicode versions differ (Python 3.11
        # reorders U+08CB, new in Unicode 14, after U+0338; tokenizers' tables leave it), and the ids must be its.
        from tokenizers import normalizers

        self._normalize = normalizers.NFC().normalize_str

    @classmethod
    def rebuilt(cls, name: str, ranks: dict[bytes, int], pat_str: str, nfc: bool) -> "FastBPE":
        """The encoder ``fast_encoder`` proved for a tokenizer, rebuilt from its kept ranks and pattern, unprobed:
        only for the same tokenizer files, libraries and code (``state_cache.hf_key``)."""
        import tiktoken

        encoding = tiktoken.Encoding(name=f"{name}-fast", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
        return cls(encoding, nfc, ranks, pat_str)

    def _text(self, text: str) -> str:
        if self._nfc and not text.isascii():
            return self._normalize(text)
        return text

    def encode_ordinary(self, text: str) -> list[int]:
        return self._encode(self._text(text))

    def encode_ordinary_packed(self, text: str):
        return self._packed(self._text(text))

    def encode_ordinary_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """One by one on the core: tiktoken's own batch would encode a lone surrogate as U+FFFD, where
        ``tokenizers`` refuses the text."""
        encode, text = self._encode, self._text
        return [encode(text(t)) for t in texts]


def fast_encoder(data: dict, name: str, reference: Callable[[list[str]], list[list[int]]],
                 digest: str | None = None) -> FastBPE | str:
    """The fast encoder of tokenizer.json ``data``, or why it is not used (a sentence)."""
    try:
        ranks = mergeable_ranks(data["model"])
        nfc = _normalizer_is_nfc(data.get("normalizer"))
        pat_str = pattern_for(data.get("pre_tokenizer"))
        if not data["model"].get("ignore_merges"):
            _check_whole_tokens(data["model"], digest)
        import tiktoken

        encoding = tiktoken.Encoding(name=f"{name}-fast", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
        fast = FastBPE(encoding, nfc, ranks, pat_str)
        _probe(fast, reference)
    except Refused as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - a pattern tiktoken rejects, a vocabulary it cannot take: not used
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return fast


def _normalizer_is_nfc(normalizer: dict | None) -> bool:
    """True for NFC, False for none; Refused for any other normalizer."""
    if normalizer is None or (normalizer.get("type") == "Sequence" and not normalizer.get("normalizers")):
        return False
    if normalizer.get("type") == "NFC" or (
        normalizer.get("type") == "Sequence" and [n.get("type") for n in normalizer["normalizers"]] == ["NFC"]
    ):
        return True
    raise Refused(f"normalizer {json.dumps(normalizer)[:120]}")


# Bytes no UTF-8 text holds: a vocabulary may lack them (SmolLM2's does).
_NOT_IN_UTF8 = frozenset((0xC0, 0xC1, *range(0xF5, 0x100)))


def mergeable_ranks(model: dict) -> dict[bytes, int]:
    """tiktoken's ranks (token bytes -> id) of a byte-level BPE model: the 256 bytes and the merge results,
    whose ids must rise with the merge order."""

    if model.get("type") != "BPE":
        raise Refused(f"model type {model.get('type')!r} (not BPE)")
    if model.get("dropout") or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        raise Refused("BPE with dropout, a subword prefix or a word suffix")
    vocab, decoder = model["vocab"], byte_level_decoder()
    ranks: dict[bytes, int] = {}
    for char, byte in decoder.items():
        if char in vocab:
            ranks[bytes((byte,))] = vocab[char]
        elif byte not in _NOT_IN_UTF8:
            raise Refused(f"byte {byte:#04x} ({char!r}) is not a token: not a byte-level BPE")
    to_latin1 = str.maketrans({char: chr(byte) for char, byte in decoder.items()})
    previous = max(ranks.values())
    for n, rule in enumerate(model["merges"]):
        left, right = rule.split(" ", 1) if isinstance(rule, str) else rule
        token = vocab.get(left + right)
        if token is None or left not in vocab or right not in vocab:
            raise Refused(f"merge rule {n} ({left!r} {right!r}) names a token the vocabulary lacks")
        if token <= previous:
            raise Refused(f"merge rule {n} makes token {token}, below an earlier rule's: ids do not follow the merge order")
        previous = token
        try:  # the byte-level characters, each mapped to the latin-1 character of its byte
            ranks[(left + right).translate(to_latin1).encode("latin-1")] = token
        except UnicodeEncodeError:
            raise Refused(f"merge rule {n} ({left!r} {right!r}) is not byte-level") from None
    return ranks


def _check_whole_tokens(model: dict, digest: str | None) -> None:
    """Every token, BPE'd alone by ``tokenizers``, is itself (tiktoken answers a whole-token piece with it).
    Seconds of work: the answer is kept in tokfidelity's cache by ``digest`` (of the tokenizer's
    description) and the library's version."""
    import tokenizers

    from ..files import atomic_write, cache_root

    marker = cache_root() / "fast-bpe-checked" / f"{digest}-{tokenizers.__version__}" if digest else None
    if marker is not None and marker.is_file():
        answer = marker.read_text()
    else:
        answer = _whole_token_answer(model)
        if marker is not None:
            try:
                atomic_write(marker, answer, mkdir=True)
            except OSError:
                pass  # no cache: checked again next time
    if answer != "ok":
        raise Refused(answer)


def _whole_token_answer(model: dict) -> str:
    from tokenizers import Tokenizer as RustTokenizer


    decoder = byte_level_decoder()
    bare = RustTokenizer.from_str(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": None, "post_processor": None, "decoder": None, "model": model}))
    words = [w for w in model["vocab"] if all(c in decoder for c in w)]
    got = bare.encode(words, is_pretokenized=True, add_special_tokens=False).ids
    want = [model["vocab"][w] for w in words]
    if got == want:
        return "ok"
    for word in words:
        ids = bare.encode([word], is_pretokenized=True, add_special_tokens=False).ids
        if ids != [model["vocab"][word]]:
            return f"token {model['vocab'][word]} ({word!r}) does not come out of the merges whole ({ids}); ignore_merges is off"
    return "the merges do not give every token whole"


def _probe(fast: FastBPE, reference: Callable[[list[str]], list[list[int]]]) -> None:
    got = fast.encode_ordinary_batch(PROBES)
    want = reference(PROBES)
    for text, g, w in zip(PROBES, got, want):
        if g != w:
            raise Refused(f"probe {text[:60]!r} gave {g[:12]} where tokenizers gives {w[:12]}")


def _probes() -> list[str]:
    parts = [
        "Hello world", "hello  world", " leading", "trailing ", "x", "", " ", "  ", "\t", "\n", "\r\n", "\n\n\n",
        "a\n\n b", "a \n  b", "  \n", "end   ", "tab\t\tsep", "nbsp\u00a0here", "thin\u2009space", "ideo\u3000space",
        "don't I'm they're we've you'll he'd it's", "DON'T IT'S WE'VE", "O'Neil's", "'s", "x'sy", "ſ'ſ 'ſ", "'S'T'RE",
        "1", "12", "123", "1234", "12345678901", "3.14159", "x1y22z333", "v2.0.1-rc3", "٣٤٥ ١٢", "१२३४", "Ⅻ ½ ²³",
        "①②③", "1,000,000", "-42", "+7", "#123", "a1 1a 1 a",
        "中文字符", "中文abc中文", "日本語のテキスト", "カタカナとひらがな", "ｶﾀｶﾅ", "ー・゛", "한국어 텍스트", "中1文2",
        "абв ГДЕ", "Ελληνικά", "עברית", "العربية", "हिन्दी", "ไทย", "é", "e\u0301", "Å", "A\u030a", "ﬁ ﬀ", "Ǆ ǅ ǆ",
        "😀", "👨‍👩‍👧‍👦", "🇺🇸", "👍🏽", "❤️", "x😀y", " 😀", "😀😀😀", "\u200b\u200c\u200d", "\ufeff", "\u00ad",
        "\x00\x01\x1f\x7f", "a\x00b", "\ue000\uf8ff", "\U000f0000", "\ufffd", "\U0001f9ff\U0001fae8",
        "<|im_end|>", "<|im_start|>user", "</think>", "<think>\n", "<tool_call>", "<｜end▁of▁sentence｜>",
        "<｜tool▁call▁begin｜>", "[INST]", "```python\nprint('hi')\n```", "def f(x):\n    return x*2\n",
        '{"a": [1, 2, {"b": null}]}', "a==b!=c<=d", "...", "!!!???", "—–-", "“quoted” ‘single’", "«guillemets»",
        "http://example.com/a?b=c&d=e#f", "user@example.com", "C:\\path\\to", "$100 €50 ¥30", "snake_case_name",
        "CamelCaseName", "ALLCAPS", "MiXeD", "x" * 40, " " * 17, "\n" * 9, "-" * 33, "ab" * 25,
    ]
    joined = "".join(parts[:40]) + " ".join(parts[40:])
    return parts + [joined, " ".join(parts), "\n".join(parts)]


PROBES = _probes()

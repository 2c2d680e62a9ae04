"""The fast encoder of byte-level BPE tokenizers (tiktoken's core on a tokenizer.json) gives the ids the
tokenizers library gives, exhaustively on the shipped tokenizers, and is refused where it would not.

Per tokenizer: every string in the golden datasets (and the golden output ids decoded), then 120,000
random and adversarial strings, batch-encoded by both, compared id for id."""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
import warnings
from array import array
from pathlib import Path

import pytest

from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.tokenizer.bpe_pattern import GPT2_PATTERN, Refused, pattern_for
from pipeline.core.tokenizer.fast_bpe import ENCODER_NAME, PROBES, fast_encoder
from pipeline.core.tokenizer.hf_files import HFTokenizer

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ["qwen3", "deepseek-v3", "deepseek-v3.1"]
N_RANDOM = 120_000


@pytest.fixture(scope="module", params=FAMILIES)
def tok(request):
    return load_tokenizer(request.param)


def _reference(tok, texts):
    """The tokenizers library's ids of ordinary text (the encoder the fast one must equal)."""
    return [e.ids for e in tok._ordinary.encode_batch(list(texts), add_special_tokens=False)]


def _assert_same(tok, texts):
    texts = list(texts)
    got, want = tok.encode_ordinary_batch(texts), _reference(tok, texts)
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, f"{len(bad)} of {len(texts)} differ, e.g. " + "; ".join(f"{t[:40]!r}: {g[:8]} vs {w[:8]}" for t, g, w in bad[:5])


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def golden_texts() -> list[str]:
    """Every string in the shipped golden datasets (messages, tools, responses), and the Qwen3 and
    DeepSeek-V3 samples' output ids decoded with their own tokenizer."""
    texts = []
    for path in sorted((ROOT / "golden").glob("*/samples.jsonl")):
        family = {"Q1": "qwen3", "C1": "qwen3", "D1": "deepseek-v3", "D3": "deepseek-v3.1"}.get(path.parent.name[:2])
        for line in path.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            ids = sample.pop("output_ids", None)
            texts += [s for s in _strings(sample) if s]
            if family and ids:
                texts.append(load_tokenizer(family).decode(ids))
    return texts


# Fragments the random strings are built from: every branch of the shipped pre-tokenizers, and their edges.
FRAGMENTS = [
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'ſ", "'K", "'", "''", "n't", "'x",
    " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\n ", "\u00a0", "\u2009", "\u3000", "\u200b", "\u2028",
    "\x0b", "\x0c", "\x85", "\x1c", "\x00", "\x7f", "\u00ad", "\ufeff", "\u200d", "\u2060",
    "0", "1", "12", "123", "1234", "٣", "१", "²", "½", "Ⅻ", "①", "〇", "፩", "𝟘",
    "a", "Z", "word", "Word", "WORD", "é", "e\u0301", "A\u030a", "ﬁ", "ǅ", "ß", "İ", "ı", "ſ", "K",
    "中", "文字", "ぁ", "ゟ", "゛", "・", "ー", "カ", "ヿ", "一", "龥", "龦", "㐀", "𠀀", "豈", "한", "\u1100\u1161\u11a8",
    "а", "Ω", "ع", "ה", "ह", "\u093f", "ก", "\u0e31", "ᄀ", "ꙮ", "𝒜", "\U000e0041",
    ".", ",", "!", "?", "-", "_", "(", ")", "[", "]", "{", "}", "\"", "`", "~", "@", "#", "$", "%", "^", "&", "*",
    "+", "=", "|", "\\", "/", ":", ";", "<", ">", "—", "“", "”", "«", "…", "€", "©", "°", "±", "√",
    "😀", "👍🏽", "🇺🇸", "❤️", "👨‍👩‍👧", "🧑‍💻", "\U0001fae8", "\ue000", "\U000f0000", "\ufffd", "\uffff", "\U0010fffd",
    "<|im_end|>", "<|im_start|>", "<think>", "</think>", "<tool_call>", "<｜end▁of▁sentence｜>", "<｜tool▁calls▁begin｜>",
    "<|endoftext|>", "```", "def ", "return", "    ", "\t\t", "https://", "a.b", "x_y", "1.5e-3",
]


def _random_char(rng: random.Random) -> str:
    """A code point from anywhere: the planes' assigned and unassigned points, no surrogates."""
    while True:
        cp = rng.choice((rng.randrange(0x80), rng.randrange(0x800), rng.randrange(0x3400), rng.randrange(0x10000),
                         rng.randrange(0x30000), rng.randrange(0x110000)))
        if not 0xD800 <= cp < 0xE000:
            return chr(cp)


def random_texts(n: int, seed: int) -> list[str]:
    """n strings: fragment soups, random code points, and mutated slices of real text, 0 to ~80 characters."""
    rng = random.Random(seed)
    corpus = (ROOT / "README.md").read_text(encoding="utf-8")
    out = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 12)))
        elif kind == 1:
            text = "".join(_random_char(rng) if rng.random() < 0.5 else rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 16)))
        elif kind == 2:
            start = rng.randrange(len(corpus) - 100)
            text = corpus[start : start + rng.randrange(1, 80)]
            for _ in range(rng.randrange(0, 4)):
                at = rng.randrange(len(text) + 1)
                text = text[:at] + rng.choice((_random_char(rng), rng.choice(FRAGMENTS))) + text[at:]
        else:
            text = "".join(rng.choice(FRAGMENTS[:60]) + rng.choice(" \n\t0123456789") for _ in range(rng.randrange(1, 10)))
        out.append(text)
    return out


def test_the_shipped_byte_level_tokenizers_use_the_fast_encoder(tok):
    assert tok.encoder == ENCODER_NAME, tok.encoder_note
    assert tok.encoder_note == ""


def test_fast_equals_tokenizers_on_the_probes_and_golden_texts(tok):
    texts = PROBES + golden_texts()
    assert len(texts) > 2000
    _assert_same(tok, texts)
    for text in texts[:: max(1, len(texts) // 300)]:  # one at a time and packed, as reconstruction asks
        want = _reference(tok, [text])[0]
        assert tok.encode_ordinary(text) == want
        packed = array("I")
        packed.frombytes(b"".join([tok.encode_ordinary_packed(text)]))  # as reconstruction reads it
        assert packed.tolist() == want


def test_fast_equals_tokenizers_on_random_and_adversarial_strings(tok):
    texts = random_texts(N_RANDOM, seed=25)
    assert len(texts) >= 100_000
    for start in range(0, len(texts), 20_000):
        _assert_same(tok, texts[start : start + 20_000])


def test_long_runs_and_texts_not_in_nfc(tok):
    texts = [" " * 5000 + "x", "\n" * 3000, "a" * 4000, "1" * 3001, "中" * 2000 + "1", "😀" * 500, "e\u0301" * 300,
             unicodedata.normalize("NFD", "Ångström café naïve ﬁ 한국어"), "\u1100\u1161\u11a8" * 20, "x\u0301\u0301",
             "k\u08cb\u0338"]  # Python 3.11's NFC reorders these marks, tokenizers' does not: its own NFC is used
    _assert_same(tok, texts)


def test_lone_surrogates_get_the_tokenizers_librarys_answer(tok):
    text = "a\ud800b"
    try:
        want = tok._ordinary.encode(text, add_special_tokens=False).ids
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            tok.encode_ordinary(text)
    else:
        assert tok.encode_ordinary(text) == want
    assert tok.encode_ordinary_packed(text) is None
    try:
        want = _reference(tok, ["x", text])
    except Exception as e:  # noqa: BLE001 - tokenizers refuses the batch: so does the fast encoder's
        with pytest.raises(type(e)):
            tok.encode_ordinary_batch(["x", text])
    else:
        assert tok.encode_ordinary_batch(["x", text]) == want


def test_fingerprint_records_the_encoder(tok):
    """The fast encoder's fingerprint is not the files' alone; a tokenizer left on tokenizers keeps the files'
    fingerprint it always had (checked on a refused one below)."""
    from pipeline.core.tokenizer.base import Tokenizer

    files = Tokenizer.fingerprint.func(tok)
    assert tok.fingerprint != files
    assert tok.fingerprint == hashlib.sha256(f"{files}\0encoder={ENCODER_NAME}".encode()).hexdigest()


# --- refusals: a byte-level BPE the fast encoder would get wrong goes through tokenizers, said once --------------
def _tiny(merges: list[tuple[str, str]], ids: dict[str, int], pre_tokenizer=None, normalizer=None, ignore_merges=False):
    """A tokenizers.Tokenizer: the 256 byte-level characters (byte b is id b) plus ``ids``, with ``merges``."""
    from tokenizers import Tokenizer

    from pipeline.core.tokenizer.base import byte_level_decoder

    vocab = {c: b for c, b in byte_level_decoder().items()}
    vocab.update(ids)
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": ignore_merges,
             "vocab": vocab, "merges": [list(m) for m in merges]}
    pre = pre_tokenizer or {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    data = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": normalizer,
            "pre_tokenizer": pre, "post_processor": None, "decoder": None, "model": model}
    return Tokenizer.from_str(json.dumps(data))


def _load(tokenizer) -> HFTokenizer:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = HFTokenizer("tiny", "test", [], tokenizer, {})
    assert caught == []  # the same ids either way: a slower encoder is a note (encoder_note), not a warning
    assert (loaded.encoder_note == "") is (loaded.encoder == ENCODER_NAME)
    return loaded


def _ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False).ids


def test_a_tiny_consistent_bpe_uses_the_fast_encoder():
    tiny = _tiny([("a", "b"), ("ab", "c")], {"ab": 256, "abc": 257})
    loaded = _load(tiny)
    assert loaded.encoder == ENCODER_NAME
    assert loaded.encode_ordinary("abc abcab") == _ids(tiny, "abc abcab")


def test_bytes_no_utf8_text_holds_may_be_missing_others_may_not():
    from pipeline.core.tokenizer.base import byte_level_decoder

    chars = {b: c for c, b in byte_level_decoder().items()}
    for byte, fast in ((0xC0, True), (0xF5, True), (0xF1, False), (ord("a"), False)):
        data = json.loads(_tiny([], {}).to_str())
        del data["model"]["vocab"][chars[byte]]
        from tokenizers import Tokenizer

        loaded = _load(Tokenizer.from_str(json.dumps(data)))
        assert (loaded.encoder == ENCODER_NAME) is fast, (hex(byte), loaded.encoder_note)


def test_ids_against_the_merge_order_are_refused():
    """tiktoken would merge b+c (lower id) first where tokenizers merges a+b (earlier rule)."""
    tiny = _tiny([("a", "b"), ("b", "c")], {"bc": 256, "ab": 257})
    loaded = _load(tiny)
    assert loaded.encoder == "tokenizers" and "merge order" in loaded.encoder_note
    assert loaded.encode_ordinary("abc") == _ids(tiny, "abc") == [257, ord("c")]  # 'ab' 'c'


def test_a_token_the_merges_cannot_make_whole_is_refused(tmp_path, monkeypatch):
    """'abcd' is a token, but the merges take 'abcd' to a|bc|d; tiktoken would answer the piece with the token."""
    monkeypatch.setenv("TOKFIDELITY_CACHE_DIR", str(tmp_path))
    tiny = _tiny([("b", "c"), ("a", "b"), ("c", "d"), ("ab", "cd")], {"bc": 256, "ab": 257, "cd": 258, "abcd": 259})
    for _ in range(2):  # checked, then answered from the cache
        loaded = _load(tiny)
        assert loaded.encoder == "tokenizers" and "whole" in loaded.encoder_note
        assert loaded.encode_ordinary("abcd") == _ids(tiny, "abcd") == [ord("a"), 256, ord("d")]
    with_ignore = _load(_tiny([("b", "c"), ("a", "b"), ("c", "d"), ("ab", "cd")],
                              {"bc": 256, "ab": 257, "cd": 258, "abcd": 259}, ignore_merges=True))
    assert with_ignore.encoder == ENCODER_NAME and with_ignore.encode_ordinary("abcd") == [259]


def test_an_unknown_normalizer_is_refused_and_nfc_is_applied():
    lower = _load(_tiny([], {}, normalizer={"type": "Lowercase"}))
    assert lower.encoder == "tokenizers" and "normalizer" in lower.encoder_note
    from pipeline.core.tokenizer.base import Tokenizer

    assert lower.fingerprint == Tokenizer.fingerprint.func(lower)  # left on tokenizers: the files' fingerprint
    assert lower.encode_ordinary("AB") == [ord("a"), ord("b")]
    nfc = _tiny([], {}, normalizer={"type": "NFC"})
    loaded = _load(nfc)
    assert loaded.encoder == ENCODER_NAME
    assert loaded.encode_ordinary("e\u0301") == _ids(nfc, "e\u0301") == list("é".encode())  # byte b is token b here


def test_a_probe_that_differs_keeps_the_tokenizers_library():
    tiny = _tiny([], {})
    data = json.loads(tiny.to_str())
    found = fast_encoder(data, "tiny", lambda texts: [[0] for _ in texts])
    assert isinstance(found, str) and found.startswith("probe ")


# --- the pre-tokenizer as one pattern ------------------------------------------------------------------------
def _split(regex):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}


@pytest.mark.parametrize("pre, why", [
    (None, "no pre-tokenizer"),
    ({"type": "Whitespace"}, "does not end with ByteLevel"),
    ({**BYTE_LEVEL, "add_prefix_space": True}, "add_prefix_space"),
    ({"type": "Sequence", "pretokenizers": [{**_split("a"), "behavior": "Removed"}, BYTE_LEVEL]}, "behavior"),
    ({"type": "Sequence", "pretokenizers": [_split(r"\w+\s"), _split("x"), BYTE_LEVEL]}, "not a run of one character class"),
    ({"type": "Sequence", "pretokenizers": [_split(r"^a|b"), BYTE_LEVEL]}, "anchor"),
    ({"type": "Sequence", "pretokenizers": [_split(r"(a)\1"), BYTE_LEVEL]}, "escape"),
    ({"type": "Sequence", "pretokenizers": [_split(r"a++"), BYTE_LEVEL]}, "possessive"),
    ({"type": "Sequence", "pretokenizers": [{"type": "Metaspace"}, BYTE_LEVEL]}, "Metaspace"),
])
def test_pre_tokenizers_without_a_pattern_are_refused(pre, why):
    with pytest.raises(Refused, match=why):
        pattern_for(pre)


def test_sequences_of_splits_become_one_pattern_that_splits_alike():
    """Digits, then a class run, then a general split with a look-ahead: the same pieces as tokenizers gives,
    including at the edges of the earlier splits' runs (where the look-ahead must not see past them)."""
    import regex  # the third-party module reads the same \\p classes and && as tiktoken's engine

    from tokenizers import pre_tokenizers

    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False}, _split("[α-ω]+"), _split(r"[^\s\p{N}]+|\s+(?!\S)|\s+"), BYTE_LEVEL]}
    pattern = pattern_for(pre)
    reference = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=False),
                                         pre_tokenizers.Split(regex_pattern(r"[α-ω]+"), "isolated"),
                                         pre_tokenizers.Split(regex_pattern(r"[^\s\p{N}]+|\s+(?!\S)|\s+"), "isolated")])
    compiled = regex.compile(pattern, regex.V1)
    for text in ["ab  12  cd", "x   αβγ   y", "a1 b22 c333\n\n d", "  1", "1  ", "αβ12γδ  ε", "!!  \t 9z"]:
        want = [piece for piece, _ in reference.pre_tokenize_str(text)]
        assert [m.group(0) for m in compiled.finditer(text)] == want, text
    assert pattern_for(BYTE_LEVEL) == r"[\s\S]+"
    assert GPT2_PATTERN in pattern_for({**BYTE_LEVEL, "use_regex": True})


def regex_pattern(text):
    from tokenizers import Regex

    return Regex(text)

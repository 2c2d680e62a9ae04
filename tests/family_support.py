"""The profiles of the family registry, each with the real tokenizer its tests load: the folder named
like the profile under ``$TOKFIDELITY_TOKENIZERS`` when there is one, else the profile's default
tokenizer (gpt-oss: ``o200k_harmony``). ChatML's default (SmolLM2's, inside a GGUF model package) is
stood in for by Qwen3's vocabulary, which has ChatML's markers as special ids; Llama 3's folder is
``llama-3.1``, and DeepSeek-V3.2 has V3.1's tokenizer (its own folder holds only its encoder)."""

from __future__ import annotations

from pipeline.core.families import specs
from pipeline.core.tokenizer import TokenizerNotFound, load_tokenizer

STAND_INS = {"chatml": "qwen3", "llama3": "llama-3.1", "deepseek-v3.2": "deepseek-v3.1"}


def profile_names() -> list[str]:
    return [spec.name for spec in specs()]


def tokenizer_for(profile: str):
    """The tokenizer the tests bind ``profile`` to."""
    spec = next(s for s in specs() if s.name == profile)
    try:
        return load_tokenizer(STAND_INS.get(profile, profile))
    except TokenizerNotFound:
        return load_tokenizer(spec.default_tokenizer)

"""The engines' parsers, keyed by the names their servers give them, imported on first use.

As in the engines themselves (vLLM's ``ReasoningParserManager`` / ``ToolParserManager``, SGLang's
reasoning-parser and function-call-parser maps), a name maps to the code that parses; the code is
imported only when a view uses it. Each entry is ``"module:Class"`` under ``pipeline.core.engines``;
the class is built once per bound profile and view (``Class(profile, view, tokenizer)``) and called per
sample:

* a reasoning parser: ``parser(text) -> (reasoning or None, rest)``;
* a tool-call parser: ``parser(text) -> (content, [(name, arguments, id or None)])``;
* a whole-output parser, where the engine composes the parsers itself (vLLM serves a harmony model
  through its ``HarmonyParser`` whatever the names): ``parser(text, ids) -> (reasoning, content, calls)``.
"""

from __future__ import annotations

import functools
import importlib

__all__ = ["REASONING", "TOOLS", "WHOLE", "parser_class", "registered"]

REASONING: dict[str, dict[str, str]] = {
    "sglang": {
        "kimi_k2": "sglang_kimi:KimiK2Reasoning",
        "qwen3": "sglang_qwen:Qwen3Reasoning",
        "gpt-oss": "sglang_gpt_oss:GptOssReasoning",
    },
    "vllm": {
        "kimi_k2": "vllm_kimi:KimiK2Reasoning",
        "qwen3": "vllm_qwen:Qwen3Reasoning",
    },
}
TOOLS: dict[str, dict[str, str]] = {
    "sglang": {
        "kimi_k2": "sglang_kimi:KimiK2Tools",
        "qwen25": "sglang_qwen:Qwen25Tools",
        "deepseekv3": "sglang_deepseek:DeepSeekV3Tools",
        "gpt-oss": "sglang_gpt_oss:GptOssTools",
        "llama3": "sglang_llama:Llama3Tools",
        "qwen3_coder": "sglang_qwen3_coder:Qwen3CoderTools",
    },
    "vllm": {
        "kimi_k2": "vllm_kimi:KimiK2Tools",
        "hermes": "vllm_qwen:HermesTools",
        "deepseek_v3": "vllm_deepseek:DeepSeekV3Tools",
        "openai": "vllm_harmony:HarmonyParser",  # only ever composed with openai_gptoss (WHOLE)
        "llama3_json": "vllm_llama:Llama3JsonTools",
        "qwen3_coder": "vllm_qwen3_coder:Qwen3CoderTools",
    },
}
# (engine, reasoning parser name) -> a whole-output parser the engine uses instead of composing two.
WHOLE: dict[tuple[str, str], str] = {
    ("vllm", "openai_gptoss"): "vllm_harmony:HarmonyParser",
}


def registered(engine: str, kind: str, name: str) -> bool:
    table = {"reasoning": REASONING, "tool": TOOLS}[kind]
    return name in table.get(engine, {}) or (kind == "reasoning" and (engine, name) in WHOLE)


@functools.cache
def parser_class(engine: str, kind: str, name: str) -> type:
    """The class registered as ``engine``'s ``kind`` ("reasoning", "tool" or "whole") parser ``name``."""
    if kind == "whole":
        target = WHOLE[(engine, name)]
    else:
        target = {"reasoning": REASONING, "tool": TOOLS}[kind][engine][name]
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), attr)

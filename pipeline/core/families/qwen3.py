"""Qwen3 (hybrid thinking): its profile and its views; the `sglang` view is SGLang 0.5.23 serving it with
``--reasoning-parser qwen3 --tool-call-parser qwen25`` (``engines/sglang_qwen.py``).

The model writes (``../shared/tokenizers/qwen3/tokenizer_config.json``'s chat template):

    <think>\\n{reasoning}\\n</think>\\n\\n{content}\\n<tool_call>\\n{"name": "NAME", "arguments": ARGS}\\n</tool_call>
    \\n<tool_call>\\n...\\n</tool_call><|im_end|>

(the "\\n" before the first call only after non-empty content, one "\\n" between calls). With
``enable_thinking=false`` the prompt ends ``<think>\\n\\n</think>\\n\\n`` and the output is content and
calls only. ``<think>``, ``</think>``, ``<tool_call>`` and ``</tool_call>`` are single ids; the engine stops
on ``<|im_end|>`` and ``<|endoftext|>`` (Qwen3's generation_config eos ids).
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from .family import Family
from .spec import ProfileSpec, ToolCallFormat

__all__ = ["SPECS", "FAMILY"]

# The added tokens Qwen3's tokenizer class does not treat as special (tokenizer.json: "special": false).
_ORDINARY = ("<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
             "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>")


SPECS = (
    ProfileSpec(
        name="qwen3",
        default_tokenizer="Qwen/Qwen3-8B",
        markers={
            "think_begin": "<think>",
            "think_end": "</think>",
            "tool_call_begin": "<tool_call>",
            "tool_call_end": "</tool_call>",
            "stop": "<|im_end|>",
        },
        extra_stops=("<|endoftext|>",),
        prompt_markers={"start": "<|im_start|>", "end": "<|im_end|>"},
        thinking=True,
        think_gap="\n\n",
        tool_calls=ToolCallFormat(
            call=("@tool_call_begin", '\n{"name": "', "$name", '", "arguments": ', "$arguments", "}\n", "@tool_call_end"),
            separator="\n",
            content_separator="\n",
            strips_content=True,
        ),
        views={"sglang": sglang("qwen3", "qwen25"), **vllm_views("qwen3", "hermes", class_ordinary=_ORDINARY)},
        description="Qwen3 hybrid thinking: <think>\\n...\\n</think>\\n\\n, content, <tool_call> JSON blocks, <|im_end|>; "
        "with thinking off (enable_thinking=false) no think block.",
    ),
)

FAMILY = Family("qwen3", SPECS, __name__, parsers=("pipeline.core.engines.sglang_qwen", "pipeline.core.engines.vllm_qwen"),
                cases="pipeline.cases.family_outputs:QWEN3", description="Qwen3 hybrid thinking: <think> block, <tool_call> JSON blocks")

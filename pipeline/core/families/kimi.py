"""Kimi K2 / K2.5: their profiles and the engines serving them (their views).
SGLang serves Kimi with ``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2`` (``engines/sglang_kimi.py``)."""

from __future__ import annotations

from ..engines.view import View, sglang, sglang_legacy, vllm_views
from .family import Family
from .spec import ProfileSpec, ToolCallFormat

# What Kimi's tokenizer class (TikTokenTokenizer, the model repository's Python, through which both
# engines decode) treats as special: bos/eos/unk/pad and tokenizer_config.json's additional_special_tokens.
# </think> and the tool-call markers are not among them.
_KIMI_CLASS_SPECIAL = ("[BOS]", "[EOS]", "[UNK]", "[PAD]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>",
                       "<|start_header_id|>", "<|end_header_id|>", "[EOT]", "<|im_system|>", "<|im_middle|>")
_K25_CLASS_SPECIAL = _KIMI_CLASS_SPECIAL + ("<|media_begin|>", "<|media_content|>", "<|media_end|>", "<|media_pad|>")


def _views(reasoning: str | None, tool: str | None, class_special: tuple[str, ...]) -> dict[str, View]:
    served = sglang(reasoning, tool, call_id="functions.{name}:{index}")  # serving_chat rebuilds Kimi's ids
    # K2's generation prompt ends <|im_middle|>, one of the class's specials; K2.5's ends <think>, not one.
    served_by_vllm = vllm_views(reasoning, tool, class_special=class_special, leading_space=reasoning is None)
    return {"sglang": served, "sglang-legacy": sglang_legacy(served), **served_by_vllm}


_KIMI_TOOL_MARKERS = {
    "tool_calls_begin": "<|tool_calls_section_begin|>",
    "tool_calls_end": "<|tool_calls_section_end|>",
    "tool_call_begin": "<|tool_call_begin|>",
    "tool_call_argument_begin": "<|tool_call_argument_begin|>",
    "tool_call_end": "<|tool_call_end|>",
}
_KIMI_PROMPT_MARKERS = {
    "system": "<|im_system|>",
    "user": "<|im_user|>",
    "assistant": "<|im_assistant|>",
    "middle": "<|im_middle|>",
    "end": "<|im_end|>",
}
_KIMI_COMMON = dict(
    # <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{args}<|tool_call_end|>, inside
    # <|tool_calls_section_begin|> ... <|tool_calls_section_end|>, nothing between the parts.
    tool_calls=ToolCallFormat(
        call=("@tool_call_begin", "$id", "@tool_call_argument_begin", "$arguments", "@tool_call_end"),
        head_end="tool_call_argument_begin",
    ),
    tool_call_id_template="functions.{name}:{index}",
    tool_call_id_pattern=r"functions\.[^:\s]+:\d+",
)

SPECS = (
    ProfileSpec(
        name="kimi-k2.5",
        default_tokenizer="moonshotai/Kimi-K2.5",
        markers={"think_end": "</think>", **_KIMI_TOOL_MARKERS, "stop": "<|im_end|>"},
        prompt_markers={**_KIMI_PROMPT_MARKERS, "think_begin": "<think>", "think_end": "</think>"},
        thinking=True,
        # Kimi K2.5's tokenizer class: tools deep-sorted, declared in TypeScript (tools_ts_str), thinking on.
        tools_preprocess=("deep-sort", "kimi-typescript"),
        chat_template_kwargs={"thinking": True, "preserve_thinking": False},
        views=_views("kimi_k2", "kimi_k2", _K25_CLASS_SPECIAL),
        description="Kimi K2.5 with thinking: the prompt ends <|im_assistant|>assistant<|im_middle|><think>, "
        "so the output is reasoning, </think>, content, tool-call section, <|im_end|>.",
        **_KIMI_COMMON,
    ),
    ProfileSpec(
        name="kimi-k2",
        default_tokenizer="moonshotai/Kimi-K2-Instruct",
        markers={**_KIMI_TOOL_MARKERS, "stop": "<|im_end|>"},
        prompt_markers=_KIMI_PROMPT_MARKERS,
        views=_views(None, "kimi_k2", _KIMI_CLASS_SPECIAL),
        tools_preprocess=("deep-sort",),  # Kimi K2's tokenizer class key-sorts the tools; JSON declarations
        description="Kimi K2 Instruct: content, tool-call section, <|im_end|>; no thinking.",
        **_KIMI_COMMON,
    ),
)

FAMILY = Family(
    "kimi", SPECS, __name__,
    parsers=("pipeline.core.engines.sglang_kimi", "pipeline.core.engines.vllm_kimi"),
    cases="pipeline.cases.kimi_outputs:CASES",
    description="Kimi K2.5 and K2: tool-call sections with functions.NAME:IDX ids",
)

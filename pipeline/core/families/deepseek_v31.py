"""DeepSeek-V3.1: its profile and its views. The `sglang` view is SGLang 0.5.23 with
``--reasoning-parser deepseek-v3 --tool-call-parser deepseekv31`` (``engines/sglang_deepseek_v31.py``); the
`vllm` views are vLLM with ``--reasoning-parser deepseek_v3 --tool-call-parser deepseek_v31``
(``engines/vllm_deepseek_v31.py``).

The model writes (DeepSeek-V3.1's chat template, the copies in ``../shared/tokenizers/deepseek-v3.1/``):

    {reasoning}</think>{content}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{ARGS}<｜tool▁call▁end｜>
    <｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>

with no text between two calls. Thinking is the request's ``thinking`` template variable (off by default,
in the template and in both engines): on, the prompt ends ``<｜Assistant｜><think>`` and the output opens
with its reasoning, closed by ``</think>``; off, the prompt ends ``<｜Assistant｜></think>`` and the output is
content and calls only. A response without reasoning is therefore laid out without a think block
(``think_optional``). ``<think>``, ``</think>`` and the tool markers are single ids that the tokenizer class
does not treat as special (``"special": false``), so no engine's decoding removes them.
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from .deepseek_v3 import _ORDINARY as _V3_ORDINARY
from .family import Family
from .spec import ProfileSpec, ToolCallFormat

__all__ = ["SPECS", "V31_MARKERS", "V31_ORDINARY"]

# The added tokens DeepSeek-V3.1's tokenizer class does not treat as special (tokenizer.json: "special": false).
V31_ORDINARY = (*_V3_ORDINARY, "<think>", "</think>", "<｜search▁begin｜>", "<｜search▁end｜>")

V31_MARKERS = {
    "think_end": "</think>",
    "tool_calls_begin": "<｜tool▁calls▁begin｜>",
    "tool_calls_end": "<｜tool▁calls▁end｜>",
    "tool_call_begin": "<｜tool▁call▁begin｜>",
    "tool_sep": "<｜tool▁sep｜>",
    "tool_call_end": "<｜tool▁call▁end｜>",
    "stop": "<｜end▁of▁sentence｜>",
}

SPECS = (
    ProfileSpec(
        name="deepseek-v3.1",
        default_tokenizer="deepseek-ai/DeepSeek-V3.1",
        markers=V31_MARKERS,
        prompt_markers={"bos": "<｜begin▁of▁sentence｜>", "user": "<｜User｜>", "assistant": "<｜Assistant｜>",
                        "think_begin": "<think>", "think_end": "</think>"},
        thinking=True,
        think_optional=True,
        tool_calls=ToolCallFormat(
            call=("@tool_call_begin", "$name", "@tool_sep", "$arguments", "@tool_call_end"),
            strips_content=True,  # SGLang's deepseekv31 detector returns the content .strip()ped
            head_end="tool_sep",
        ),
        views={"sglang": sglang("deepseek-v3", "deepseekv31"),
               **vllm_views("deepseek_v3", "deepseek_v31", skip_special_tokens=True, class_ordinary=V31_ORDINARY)},
        description="DeepSeek-V3.1: with thinking on (chat_template_kwargs thinking=true) reasoning then </think>; "
        "content, <｜tool▁calls▁begin｜> calls NAME<｜tool▁sep｜>ARGS <｜tool▁calls▁end｜>, <｜end▁of▁sentence｜>.",
    ),
)

FAMILY = Family("deepseek-v3.1", SPECS, __name__, parsers=("pipeline.core.engines.sglang_deepseek_v31", "pipeline.core.engines.vllm_deepseek_v31"),
                cases="pipeline.cases.deepseek_v31_outputs:CASES",
                description="DeepSeek-V3.1: thinking by request, tool-call section NAME<｜tool▁sep｜>ARGS")

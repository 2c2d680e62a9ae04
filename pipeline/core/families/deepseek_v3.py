"""DeepSeek-V3: its profile and its views; the `sglang` view is SGLang 0.5.23 with
``--tool-call-parser deepseekv3`` (``engines/sglang_deepseek.py``; no reasoning parser: this tokenizer
has no think tokens).

The model writes (``../shared/tokenizers/deepseek-v3/tokenizer_config.json``'s chat template, and the
format SGLang's ``DeepSeekV3Detector`` documents):

    {content}<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{ARGS}\\n```<｜tool▁call▁end｜>
    \\n<｜tool▁call▁begin｜>...<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from .family import Family
from .spec import ProfileSpec, ToolCallFormat

__all__ = ["SPECS", "FAMILY"]

# The added tokens DeepSeek-V3's tokenizer class does not treat as special (tokenizer.json: "special": false).
_ORDINARY = ("<｜fim▁hole｜>", "<｜fim▁begin｜>", "<｜fim▁end｜>", "<｜User｜>", "<｜Assistant｜>", "<｜tool▁calls▁begin｜>",
             "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁outputs▁begin｜>",
             "<｜tool▁outputs▁end｜>", "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>", "<｜tool▁sep｜>")


SPECS = (
    ProfileSpec(
        name="deepseek-v3",
        default_tokenizer="deepseek-ai/DeepSeek-V3",
        markers={
            "tool_calls_begin": "<｜tool▁calls▁begin｜>",
            "tool_calls_end": "<｜tool▁calls▁end｜>",
            "tool_call_begin": "<｜tool▁call▁begin｜>",
            "tool_sep": "<｜tool▁sep｜>",
            "tool_call_end": "<｜tool▁call▁end｜>",
            "stop": "<｜end▁of▁sentence｜>",
        },
        prompt_markers={"bos": "<｜begin▁of▁sentence｜>", "user": "<｜User｜>", "assistant": "<｜Assistant｜>"},
        tool_calls=ToolCallFormat(
            call=("@tool_call_begin", "function", "@tool_sep", "$name", "\n```json\n", "$arguments", "\n```", "@tool_call_end"),
            separator="\n",
            strips_content=True,
            head_end="tool_sep",
        ),
        # vLLM: its deepseek_v3 parser leaves skip_special_tokens on; the tool markers are not special.
        views={"sglang": sglang(None, "deepseekv3"),
               **vllm_views(None, "deepseek_v3", skip_special_tokens=True, class_ordinary=_ORDINARY)},
        description="DeepSeek-V3: content, <｜tool▁calls▁begin｜> calls with JSON code-block arguments "
        "<｜tool▁calls▁end｜>, <｜end▁of▁sentence｜>; no thinking.",
    ),
)

FAMILY = Family("deepseek-v3", SPECS, __name__, parsers=("pipeline.core.engines.sglang_deepseek", "pipeline.core.engines.vllm_deepseek"),
                cases="pipeline.cases.family_outputs:DEEPSEEK_V3", description="DeepSeek-V3: tool-call section with JSON code-block arguments")

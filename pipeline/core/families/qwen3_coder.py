"""Qwen3-Coder (30B-A3B, 480B-A35B): its profile and its views; the `sglang` view is SGLang 0.5.23 with
``--tool-call-parser qwen3_coder`` (``engines/sglang_qwen3_coder.py``), the `vllm` views vLLM with
``--tool-call-parser qwen3_coder`` (``engines/vllm_qwen3_coder.py``). No reasoning. Qwen3's vocabulary,
merges and added tokens (``../shared/tokenizers/qwen3``), the chat template of ``qwen3-coder/``.

The model writes (the template's assistant turn with tool calls):

    {content}\\n\\n<tool_call>\\n<function=NAME>\\n<parameter=KEY>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>
    \\n<tool_call>\\n...</tool_call><|im_end|>

(without content the output opens ``<tool_call>``); a value is the argument's text: a string as it is,
an object or array as ``tojson``, anything else as Jinja's ``string`` (``True``, ``5.0``, ``None``).
``<tool_call>`` and ``</tool_call>`` are single ids, ``<function=`` and ``<parameter=`` ordinary text. The
engine stops on ``<|im_end|>`` and ``<|endoftext|>``. Laid out by ``qwen3_coder_layout`` (an
``OwnLayout``: the arguments are written as XML parameters, not as the JSON text the API returns).
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from .qwen3 import _ORDINARY
from . import qwen3_coder_layout
from .family import Family
from .spec import OwnLayout, ProfileSpec, ToolCallFormat

__all__ = ["SPECS"]

SPECS = (
    ProfileSpec(
        name="qwen3-coder",
        default_tokenizer="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        markers={"tool_call_begin": "<tool_call>", "tool_call_end": "</tool_call>", "stop": "<|im_end|>"},
        extra_stops=("<|endoftext|>",),
        prompt_markers={"start": "<|im_start|>", "end": "<|im_end|>"},
        tool_calls=ToolCallFormat(call=("@tool_call_begin", "$arguments", "@tool_call_end"), separator="\n"),
        views={"sglang": sglang(None, "qwen3_coder"), **vllm_views(None, "qwen3_coder", class_ordinary=_ORDINARY,
                                                                   note="the parser engine's Qwen3 tool adapter")},
        own_layout=OwnLayout(bind=qwen3_coder_layout.bind, reconstruct=qwen3_coder_layout.reconstruct,
                             split=qwen3_coder_layout.split),
        description="Qwen3-Coder: content, <tool_call> blocks of <function=NAME> with <parameter=KEY> values, "
        "<|im_end|>; no thinking.",
    ),
)

FAMILY = Family("qwen3-coder", SPECS, __name__, parsers=("pipeline.core.engines.sglang_qwen3_coder", "pipeline.core.engines.vllm_qwen3_coder"),
                cases="pipeline.cases.llama_coder_outputs:QWEN3_CODER",
                description="Qwen3-Coder: XML <tool_call><function=...><parameter=...> calls, no reasoning")

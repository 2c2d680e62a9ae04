"""DeepSeek-V3.2: its profile and its views. Prompts come from the model's Python encoder, restated in
``pipeline/core/dsv32_prompts.py`` (``prompt_renderer="dsv32"``); outputs are laid out by
``deepseek_v32_layout`` (DSML tool calls are ordinary text: an ``OwnLayout``). The `sglang` view is SGLang
0.5.23 with ``--reasoning-parser deepseek-v3 --tool-call-parser deepseekv32`` (``engines/sglang_deepseek_v31.py``
for the reasoning, ``engines/sglang_deepseek_v32.py`` for the DSML calls; SGLang picks the ``dsv32`` encoder
itself for that tool-call parser); the `vllm` views are vLLM with ``--tokenizer-mode deepseek_v32
--reasoning-parser deepseek_v3 --tool-call-parser deepseek_v32`` (``engines/vllm_deepseek_v31.py``,
``engines/vllm_deepseek_v32.py``).

The tokenizer is DeepSeek-V3.1's (the same vocabulary and added tokens): ``</think>`` 128799 and
``<｜end▁of▁sentence｜>`` 1 are the only single-id markers of the output.
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from .deepseek_v31 import V31_ORDINARY
from . import deepseek_v32_layout
from .family import Family
from .spec import OwnLayout, ProfileSpec

__all__ = ["SPECS"]

SPECS = (
    ProfileSpec(
        name="deepseek-v3.2",
        default_tokenizer="deepseek-ai/DeepSeek-V3.1",  # V3.2 ships V3.1's tokenizer files
        markers={"think_end": "</think>", "stop": "<｜end▁of▁sentence｜>"},
        prompt_markers={"bos": "<｜begin▁of▁sentence｜>", "user": "<｜User｜>", "assistant": "<｜Assistant｜>",
                        "think_begin": "<think>"},
        thinking=True,
        think_optional=True,
        prompt_renderer="dsv32",
        views={"sglang": sglang("deepseek-v3", "deepseekv32"),
               **vllm_views("deepseek_v3", "deepseek_v32", class_ordinary=V31_ORDINARY,
                            note="`--tokenizer-mode deepseek_v32`")},
        own_layout=OwnLayout(bind=deepseek_v32_layout.bind, reconstruct=deepseek_v32_layout.reconstruct,
                             split=deepseek_v32_layout.split_dsml,
                             call_text=deepseek_v32_layout.BLOCK_START),
        description="DeepSeek-V3.2: with thinking on reasoning then </think>; content, then DSML tool calls "
        "(\\n\\n<｜DSML｜function_calls> invoke / parameter blocks), <｜end▁of▁sentence｜>.",
    ),
)

FAMILY = Family("deepseek-v3.2", SPECS, __name__, parsers=("pipeline.core.engines.sglang_deepseek_v31", "pipeline.core.engines.vllm_deepseek_v31",
                                                   "pipeline.core.engines.sglang_deepseek_v32", "pipeline.core.engines.vllm_deepseek_v32"),
                cases="pipeline.cases.deepseek_v32_outputs:CASES",
                description="DeepSeek-V3.2: DSML tool calls, prompts from its Python encoder")

"""Plain ChatML (SmolLM2, Qwen without tools): content then ``<|im_end|>``; no reasoning, no tool calls, so
its views run no parsers (what each engine does with the text alone: its decode and its response assembly)."""

from __future__ import annotations

from ..engines.view import sglang, sglang_legacy, vllm_views
from .family import Family
from .spec import ProfileSpec

__all__ = ["SPECS", "FAMILY"]

_SGLANG = sglang(call_id="functions.{name}:{index}")

SPECS = (
    ProfileSpec(
        name="chatml",
        default_tokenizer="HuggingFaceTB/SmolLM2-135M-Instruct",
        markers={"stop": "<|im_end|>"},
        prompt_markers={"start": "<|im_start|>", "end": "<|im_end|>"},
        description="ChatML (SmolLM2, Qwen without tools): content then <|im_end|>.",
        # vLLM without parsers keeps skip_special_tokens on (its default): the class's specials are skipped.
        views={"sglang": _SGLANG, "sglang-legacy": sglang_legacy(_SGLANG), **vllm_views(skip_special_tokens=True)},
    ),
)

FAMILY = Family("chatml", SPECS, __name__, cases="pipeline.cases.chatml_outputs:CASES",
                description="ChatML: content then <|im_end|>")

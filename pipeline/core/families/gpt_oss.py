"""gpt-oss (the harmony format): its profile, as data.

The model's prompt ends ``<|start|>assistant``; its output is harmony messages (analysis, commentary,
final), laid out by ``gpt_oss_layout`` from pieces openai-harmony renders (a family of its own
layout: ``OwnLayout``); the `sglang` view is SGLang 0.5.23's gpt-oss parsers, restated in
``engines/sglang_gpt_oss.py``. The engine stops on ``<|return|>`` (an answer), ``<|call|>`` (a tool call) and
``<|endoftext|>`` (gpt-oss's generation_config eos ids 200002, 200012, 199999).
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from . import gpt_oss_layout
from .family import Family
from .spec import OwnLayout, ProfileSpec

__all__ = ["SPECS", "FAMILY", "MARKERS", "EXTRA_STOPS", "RECIPIENT"]

# Marker roles of the harmony output: each is one special id, bound and cross-checked by bind_profile.
MARKERS = {
    "start": "<|start|>",
    "channel": "<|channel|>",
    "message": "<|message|>",
    "constrain": "<|constrain|>",
    "end": "<|end|>",
    "call": "<|call|>",
    "stop": "<|return|>",
}
EXTRA_STOPS = ("<|call|>", "<|endoftext|>")
RECIPIENT = gpt_oss_layout.RECIPIENT  # how the model addresses a declared function


SPECS = (
    ProfileSpec(
        name="gpt-oss",
        default_tokenizer="o200k_harmony",
        markers=MARKERS,
        extra_stops=EXTRA_STOPS,
        prompt_renderer="harmony",  # openai-harmony's render_conversation_for_completion
        chat_template_kwargs={"reasoning_effort": "medium"},  # gpt-oss's template default
        # SGLang's detokenizer keeps <|call|> (200012) for --tool-call-parser gpt-oss
        # vLLM parses the ids with openai-harmony (its HarmonyParser), whatever the detokenized text.
        views={"sglang": sglang("gpt-oss", "gpt-oss", keeps_stops=("<|call|>",)),
               **vllm_views("openai_gptoss", "openai", class_ordinary=(), note="vLLM's `HarmonyParser`, on the ids")},
        own_layout=OwnLayout(bind=gpt_oss_layout.bind, reconstruct=gpt_oss_layout.reconstruct,
                             split=gpt_oss_layout.split_harmony),
        description="gpt-oss (harmony format, openai-harmony): analysis, commentary and final messages; "
        "<|return|> ends an answer, <|call|> a tool call.",
    ),
)

FAMILY = Family("gpt-oss", SPECS, __name__, parsers=("pipeline.core.engines.sglang_gpt_oss", "pipeline.core.engines.vllm_harmony"),
                cases="pipeline.cases.gpt_oss_outputs:CASES", description="gpt-oss: harmony messages (its own layout)")

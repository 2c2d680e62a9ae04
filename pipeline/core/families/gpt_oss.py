"""gpt-oss (the harmony format): its profile, as data.

The model's prompt ends ``<|start|>assistant``; its output is harmony messages (analysis, commentary,
final), laid out by ``gpt_oss_layout`` from pieces openai-harmony renders (a family of its own
layout: ``OwnLayout``); the `sglang` view is SGLang 0.5.23's gpt-oss parsers, restated in
``gpt_oss_sglang``. The engine stops on ``<|return|>`` (an answer), ``<|call|>`` (a tool call) and
``<|endoftext|>`` (gpt-oss's generation_config eos ids 200002, 200012, 199999).
"""

from __future__ import annotations

from .gpt_oss_sglang import parse_sglang
from .spec import OwnLayout, ProfileSpec

__all__ = ["SPECS", "MARKERS", "EXTRA_STOPS", "RECIPIENT"]

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
RECIPIENT = "functions.{name}"  # how the model addresses a declared function


def _bind(profile, tokenizer):
    from .gpt_oss_layout import bind

    bind(profile, tokenizer)


def _reconstruct(turn, profile, tokenizer):
    from .gpt_oss_layout import reconstruct

    return reconstruct(turn, profile, tokenizer)


def _split(ids, profile):
    from .gpt_oss_layout import split_harmony

    return split_harmony(ids, profile)


SPECS = (
    ProfileSpec(
        name="gpt-oss",
        default_tokenizer="o200k_harmony",
        markers=MARKERS,
        extra_stops=EXTRA_STOPS,
        parse_text=parse_sglang,
        text_keeps_stops=("<|call|>",),  # SGLang's detokenizer keeps 200012 for --tool-call-parser gpt-oss
        own_layout=OwnLayout(bind=_bind, reconstruct=_reconstruct, split=_split),
        description="gpt-oss (harmony format, openai-harmony): analysis, commentary and final messages; "
        "<|return|> ends an answer, <|call|> a tool call.",
    ),
)

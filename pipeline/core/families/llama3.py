"""Llama 3.1 / 3.3 Instruct: its profile and its views; the `sglang` view is SGLang 0.5.23 with
``--tool-call-parser llama3`` (``engines/sglang_llama.py``), the `vllm` views vLLM with
``--tool-call-parser llama3_json`` (``engines/vllm_llama.py``). No reasoning.

The model writes (``../shared/tokenizers/llama-3.1/chat_template.jinja``, the 3.1 / 3.3 template):

    {content}<|eot_id|>                                                  an answer
    {"name": "NAME", "parameters": ARGS}<|eot_id|>                        a call to a custom (JSON) tool
    <|python_tag|>brave_search.call(query="...")<|eom_id|>               a call to a builtin tool

A JSON call is the whole output (the template allows one call per turn; several are joined ``; `` as
SGLang's detector reads them); text before a call is written ``{content}<|python_tag|>{call}``, the
form both engines' parsers read. The engine stops on ``<|eot_id|>``, ``<|eom_id|>`` and
``<|end_of_text|>`` (Llama 3.1's generation_config eos ids 128009, 128008, 128001). Laid out by
``llama3_layout`` (an ``OwnLayout``: a JSON call has no marker around it).
"""

from __future__ import annotations

from ..engines.view import sglang, vllm_views
from . import llama3_layout
from .family import Family
from .spec import OwnLayout, ProfileSpec, ToolCallFormat

__all__ = ["SPECS"]

SPECS = (
    ProfileSpec(
        name="llama3",
        default_tokenizer="meta-llama/Llama-3.1-8B-Instruct",
        markers={"tool_call_begin": "<|python_tag|>", "stop": "<|eot_id|>"},
        extra_stops=("<|eom_id|>", "<|end_of_text|>"),
        prompt_markers={"bos": "<|begin_of_text|>", "header_start": "<|start_header_id|>", "header_end": "<|end_header_id|>"},
        tool_calls=ToolCallFormat(call=("@tool_call_begin", '{"name": "', "$name", '", "parameters": ', "$arguments", "}"),
                                  separator="; "),
        # vLLM: llama3_json leaves skip_special_tokens on (every added token of Llama's tokenizer is special).
        views={"sglang": sglang(None, "llama3"), **vllm_views(None, "llama3_json", skip_special_tokens=True)},
        own_layout=OwnLayout(bind=llama3_layout.bind, reconstruct=llama3_layout.reconstruct, split=llama3_layout.split),
        description="Llama 3.1 / 3.3 Instruct: content <|eot_id|>, or a JSON call {\"name\": ..., \"parameters\": ...}; "
        "builtin tools <|python_tag|>NAME.call(...)<|eom_id|>; no thinking.",
    ),
)

FAMILY = Family("llama3", SPECS, __name__, parsers=("pipeline.core.engines.sglang_llama", "pipeline.core.engines.vllm_llama"),
                cases="pipeline.cases.llama_coder_outputs:LLAMA3",
                description="Llama 3.1 / 3.3 Instruct: JSON tool calls, <|python_tag|> and builtin tools, <|eot_id|> / <|eom_id|>")

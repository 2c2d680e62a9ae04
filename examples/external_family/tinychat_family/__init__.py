"""tinychat: a ChatML model family with JSON tool calls, added to tokfidelity from outside its package.

The model (any ChatML model with the Qwen vocabulary; the golden data uses the ``qwen3`` tokenizer)
writes its content, then each call as ``<tool_call>\\n{"name": NAME, "arguments": ARGS}\\n</tool_call>``
(a ``\\n`` before the first call after content, one between calls), then ``<|im_end|>``. No reasoning.

Everything the family is lives here: the profile (markers, output format, views), the parsers its one
view runs (``parsers.py``, registered under the server's own name ``tinychat``), and its case generator
(``cases.py``, the writer of its outputs that ``make_golden.py`` uses). ``pyproject.toml`` registers
``FAMILY`` in the entry-point group ``tokfidelity.families``; nothing in tokfidelity names it.
"""

from __future__ import annotations

from pipeline.core.engines.view import sglang
from pipeline.core.families import Family, ProfileSpec, ToolCallFormat

__all__ = ["FAMILY", "SPEC"]

SPEC = ProfileSpec(
    name="tinychat",
    default_tokenizer="Qwen/Qwen3-8B",
    markers={"tool_call_begin": "<tool_call>", "tool_call_end": "</tool_call>", "stop": "<|im_end|>"},
    extra_stops=("<|endoftext|>",),
    prompt_markers={"start": "<|im_start|>", "end": "<|im_end|>"},
    tool_calls=ToolCallFormat(
        call=("@tool_call_begin", '\n{"name": "', "$name", '", "arguments": ', "$arguments", "}\n", "@tool_call_end"),
        separator="\n",
        content_separator="\n",
        strips_content=True,  # the parser returns the content .strip()ped
    ),
    # An SGLang-style server running the tinychat tool parser (parsers.py): whole decode, stop trimmed.
    views={"sglang": sglang(None, "tinychat")},
    description="tinychat: ChatML content, <tool_call> JSON blocks, <|im_end|>; no reasoning.",
)

FAMILY = Family(
    "tinychat", (SPEC,), __name__,
    parsers=("tinychat_family.parsers",),
    cases="tinychat_family.cases:CASES",
    description="tinychat: ChatML with <tool_call> JSON blocks (an example family from another package)",
)

"""DeepSeek-V3.2 output ids: laid out from an API turn and split. Its tool calls are DSML, written as
ordinary text (``<｜DSML｜...>`` is not one token), so the family has its own layout (``OwnLayout``).

The model writes (its encoder, ``pipeline/core/dsv32_prompts.py``, renders an assistant turn the same way):

    {reasoning}</think>{content}\\n\\n<｜DSML｜function_calls>\\n<｜DSML｜invoke name="NAME">
    <｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>
    </｜DSML｜invoke>\\n</｜DSML｜function_calls><｜end▁of▁sentence｜>

``{reasoning}</think>`` only with thinking on (the prompt then ends ``<think>``; a response without reasoning
is laid out without it); ``</think>`` and ``<｜end▁of▁sentence｜>`` are single ids, everything else one run
of ordinary text. A call's API arguments (a JSON object) become its parameters as the encoder writes them:
a string value as it is with ``string="true"``, any other value as its JSON with ``string="false"``.
Arguments that are not a JSON object are written as they are inside the invoke (the direct-JSON form
SGLang's parser also reads).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..dsv32_prompts import DSML, dsml_arguments
from ..output_spans import CONTENT, MARKER, REASONING, STOP, TOOL_ARGUMENTS, TRAILING, OutputLayout, Span, ToolCallSpans

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

__all__ = ["bind", "reconstruct", "split_dsml", "calls_text"]

BLOCK_START = f"<{DSML}function_calls>"


_BOUND: dict[tuple, object] = {}  # (profile name, its ids) -> the tokenizer it was bound with, for split_dsml


def bind(profile, tokenizer: Tokenizer) -> None:
    """Keep the tokenizer the profile is bound with (the split finds the DSML block by its bytes); the DSML
    text is ordinary text and the markers are checked by bind_profile."""
    _BOUND[(profile.name, tuple(profile.ids.values()))] = tokenizer


def _arguments(arguments: str) -> str:
    try:
        return dsml_arguments(json.loads(arguments))
    except ValueError:  # not JSON, or not an object (render.RenderError is a ValueError)
        return arguments


def calls_text(calls, gap: str = "\n\n") -> str:
    """The DSML block of these API calls, after the blank line the model writes before it (``gap``)."""
    invokes = "\n".join(f'<{DSML}invoke name="{c.name}">\n{_arguments(c.arguments)}\n</{DSML}invoke>' for c in calls)
    return f"{gap}{BLOCK_START}\n{invokes}\n</{DSML}function_calls>"


def reconstruct(turn, profile, tokenizer: Tokenizer) -> list[int]:
    """Output ids for one API turn (``responses.ApiTurn``), laid out as DeepSeek-V3.2 writes them."""
    m = profile.ids
    encode = tokenizer.encode_ordinary
    cut = turn.finish_reason == "length"
    out: list[int] = []
    if turn.reasoning is not None:
        out += encode(turn.reasoning) if turn.reasoning else []
        if not cut or turn.content or turn.tool_calls:  # cut while reasoning: no </think>
            out.append(m["think_end"])
    content = turn.content or ""
    # vLLM sends the blank line before the block as part of the content; SGLang removes it
    text = content + (calls_text(turn.tool_calls, "" if content.endswith("\n\n") else "\n\n") if turn.tool_calls else "")
    if text:
        out += encode(text)
    if not cut:
        out.append(m["stop"])
    return out


def _token_starts(ids: Sequence[int], tokenizer) -> list[int]:
    starts, pos = [], 0
    for token in ids:
        starts.append(pos)
        pos += len(tokenizer.token_bytes(token))
    return starts


def split_dsml(ids: Sequence[int], profile) -> OutputLayout:
    """Regions of DeepSeek-V3.2 output ids: reasoning (up to ``</think>``), content, the DSML block as one
    tool-call region, the stop token."""
    m = profile.ids
    tokenizer = _BOUND.get((profile.name, tuple(profile.ids.values())))
    layout = OutputLayout()
    n = len(ids)
    stops = set(profile.stop_ids)
    end = next((i for i, t in enumerate(ids) if t in stops), n)
    pos = 0
    if m["think_end"] in ids[:end]:
        close = list(ids).index(m["think_end"])
        layout.reasoning = Span(REASONING, 0, close)
        layout.think_closed = True
        layout.spans += [layout.reasoning, Span(MARKER, close, close + 1)]
        pos = close + 1
    block = end
    if tokenizer is not None:
        data = tokenizer.decode_bytes(ids[pos:end])
        at = data.find(("\n\n" + BLOCK_START).encode())
        if at >= 0:
            block = pos + next(i for i, s in enumerate(_token_starts(ids[pos:end], tokenizer) + [len(data)]) if s >= at)
            block = min(block, end)
    layout.content = Span(CONTENT, pos, block)
    layout.spans.append(layout.content)
    if block < end:
        args = Span(TOOL_ARGUMENTS, block, end)
        layout.tool_calls.append(ToolCallSpans(Span(MARKER, block, block), args, True))
        layout.spans.append(args)
    if end < n:
        layout.stop_index = end
        layout.spans.append(Span(STOP, end, end + 1))
        if end + 1 < n:
            layout.spans.append(Span(TRAILING, end + 1, n))
    return layout

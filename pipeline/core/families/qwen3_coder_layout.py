"""Qwen3-Coder output ids: laid out from an API turn, and split into regions.

The API returns a call's arguments as JSON text; the model writes them as XML parameters, so the
generic template layout (which writes ``$arguments`` verbatim) does not fit: this module is the
family's ``OwnLayout``. Each call is written as the chat template writes an assistant tool call:
``<tool_call>\\n<function=NAME>\\n`` then per argument ``<parameter=KEY>\\nVALUE\\n</parameter>\\n``, then
``</function>\\n</tool_call>``; calls are joined by ``\\n``; content before the calls is followed by
``\\n\\n`` (the template's ``content.trim() + '\\n'`` and the call's leading ``\\n``) unless it already ends
with a newline (SGLang returns it unstripped). VALUE: a string as it is, an object or array as
``tojson`` writes it (``json.dumps``, ``ensure_ascii=False``), anything else as Jinja's ``string``
(Python's ``str``: ``True``, ``None``, ``5.0``). Arguments that are not a JSON object are written as
they are between the function's lines. A length cut leaves the stop token off.

The split is the generic one (content up to ``<tool_call>``, each call's body as its arguments).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

__all__ = ["bind", "reconstruct", "split", "value_text", "call_text"]

_PLAIN: dict = {}  # profile key -> the same profile without its own layout (for the generic split)


def bind(profile, tokenizer) -> None:
    for role in ("tool_call_begin", "tool_call_end", "stop"):
        if role not in profile.ids:
            raise ValueError(f"the qwen3-coder layout needs the {role} marker")


def value_text(value) -> str:
    """One argument value as the template writes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def call_text(name: str, arguments: str) -> str:
    """The text between ``<tool_call>`` and ``</tool_call>`` for one call."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        body = "".join(f"<parameter={key}>\n{value_text(value)}\n</parameter>\n" for key, value in parsed.items())
    else:
        body = arguments + "\n" if arguments else ""
    return f"\n<function={name}>\n{body}</function>\n"


def reconstruct(turn, profile, tokenizer) -> list[int]:
    """Output ids for one API turn (``responses.ApiTurn``), laid out as Qwen3-Coder writes them."""
    ids, encode = profile.ids, tokenizer.encode_ordinary
    if turn.reasoning:
        from ..reconstruct import ReconstructionError

        raise ReconstructionError("reasoning", f"profile {profile.name} has no reasoning section")
    content = turn.content or ""
    out: list[int] = []
    if turn.tool_calls:
        if content and not content.endswith("\n"):
            content += "\n\n"
        out = encode(content) if content else []
        for index, call in enumerate(turn.tool_calls):
            if index:
                out += encode("\n")
            out.append(ids["tool_call_begin"])
            out += encode(call_text(call.name, call.arguments))
            out.append(ids["tool_call_end"])
    else:
        out = encode(content)
    if turn.finish_reason != "length":
        out.append(ids["stop"])
    return out


def split(ids: Sequence[int], profile):
    """The generic split (``layout.split_output``) of the profile's markers."""
    from ..layout import split_output

    key = profile.texts_key
    plain = _PLAIN.get(key)
    if plain is None:
        plain = _PLAIN[key] = dataclasses.replace(profile, spec=dataclasses.replace(profile.spec, own_layout=None))
    return split_output(ids, plain)

"""Text back to ids: rebuild a model's output token ids from one API response.

Text fields are encoded as ordinary text (literal marker text in content stays ordinary
tokens); the structure between them is inserted as the profile's marker ids. The layout is the
profile's data (``ProfileSpec``: think block, ``think_gap``, the ``ToolCallFormat`` template);
adjacent pieces of text (a field and the template's literal text) are one run of ordinary text,
encoded together as the model's tokenizer sees it. It runs once per sample: no per-call setup.
"""

from __future__ import annotations

from array import array
from typing import Any

from .errors import TokfidelityError
from .profiles import Profile
from .responses import ApiTurn, parse_response
from .tokenizer import Tokenizer

__all__ = ["reconstruct_output_ids", "reconstruct_unless", "ReconstructionError"]


class ReconstructionError(TokfidelityError, ValueError):
    """The response cannot be laid out in this profile's format (e.g. reasoning for a non-thinking model)."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


def _pieces(turn: ApiTurn, profile: Profile) -> list:
    """The output as marker ids (int) and runs of text (str), in order."""
    spec, ids = profile.spec, profile.ids
    cut = turn.finish_reason == "length"
    pieces: list = []
    think_closed = False
    if spec.thinking:
        # Kimi K2.5's prompt opens the think block, so it is always there; Qwen3 opens it itself, and a
        # response without reasoning was generated with thinking off (no think block).
        if not (spec.opens_think or spec.think_optional) or turn.reasoning is not None:
            if spec.opens_think:
                pieces.append(ids["think_begin"])
            if turn.reasoning:
                pieces.append(turn.reasoning)
            # Cut while still reasoning: the parser saw no </think>, so there is no content either.
            if not cut or turn.content or turn.tool_calls:
                pieces.append(ids["think_end"])
                think_closed = True
    elif turn.reasoning:
        raise ReconstructionError(
            "reasoning", f"profile {profile.name} has no reasoning section; use a thinking profile (e.g. kimi-k2.5)"
        )

    content = turn.content or ""
    fmt = spec.tool_calls
    if turn.tool_calls:
        if fmt is None:
            raise ReconstructionError("tool_calls", f"profile {profile.name} has no tool-call format")
        if fmt.strips_content:  # the server stripped what the model wrote around the content
            content = (spec.think_gap if think_closed else "") + content + (fmt.content_separator if content else "")
    pieces.append(content)

    if turn.tool_calls:
        section = "tool_calls_begin" in ids
        if section:
            pieces.append(ids["tool_calls_begin"])
        for index, call in enumerate(turn.tool_calls):
            if index:
                pieces.append(fmt.separator)
            for part in fmt.call:
                if part[0] == "@":
                    pieces.append(ids[part[1:]])
                elif part == "$arguments":
                    pieces.append(call.arguments)
                elif part == "$name":
                    pieces.append(call.name)
                elif part == "$id":
                    pieces.append(profile.tool_call_id(call.id, call.name, index))
                else:
                    pieces.append(part)
        if section:
            pieces.append(ids["tool_calls_end"])

    if not cut:
        pieces.append(ids["stop"])
    return pieces


def _runs(turn: ApiTurn, profile: Profile):
    """The output as marker ids (int) and runs of text (str): adjacent pieces of text joined, empty ones dropped."""
    text: list[str] = []
    for piece in _pieces(turn, profile):
        if type(piece) is str:
            if piece:
                text.append(piece)
        else:
            if text:
                yield text[0] if len(text) == 1 else "".join(text)
                text = []
            yield piece
    if text:
        yield "".join(text)


def reconstruct_output_ids(response: Any, profile: Profile, tokenizer: Tokenizer) -> list[int]:
    """The output ids a model emitted for ``response`` (a dict or ApiTurn), stop token included
    unless the response was cut at the length limit."""
    turn: ApiTurn = response if type(response) is ApiTurn else parse_response(response)
    if profile.spec.own_layout is not None:
        return profile.spec.own_layout.reconstruct(turn, profile, tokenizer)
    encode = tokenizer.encode_ordinary
    out: list[int] = []
    for run in _runs(turn, profile):
        if type(run) is str:
            ids = encode(run)
            if out:
                out += ids
            else:  # the first run is the output so far (a new list from the encoder): no copy
                out = ids
        else:
            out.append(run)
    return out


_PACKS = array("I").itemsize == 4  # the packed encoders' items: native unsigned 32-bit ints


def reconstruct_unless(
    golden: list[int], response: Any, profile: Profile, tokenizer: Tokenizer, packed: bool = True
) -> list[int] | None:
    """None when ``reconstruct_output_ids(response, ...)`` equals ``golden``; else that reconstruction.

    The judge's question, answered (``packed``) without a Python int per rebuilt id where the
    tokenizer packs its ids (``encode_ordinary_packed``): the golden ids packed the same way are
    compared as bytes, and the list is built only when they differ (packing the golden ids is then
    wasted: a caller that expects most samples to differ says ``packed=False``)."""
    turn: ApiTurn = response if type(response) is ApiTurn else parse_response(response)
    packed = getattr(tokenizer, "encode_ordinary_packed", None) if packed else None  # (a tokenizer-like object may have none)
    if packed is not None and _PACKS and profile.spec.own_layout is None:
        want = array("I")
        try:
            want.fromlist(golden)  # (from a list: about 3/4 of array("I", golden)'s cost)
        except (OverflowError, TypeError):  # ids no encoder gives (negative, past 32 bits, not ints), not a list
            want = None
        if want is not None:
            parts = []
            for run in _runs(turn, profile):
                if type(run) is str:
                    part = packed(run)
                    parts.append(part if part is not None else array("I", tokenizer.encode_ordinary(run)))
                else:
                    parts.append(array("I", (run,)))
            got = b"".join(parts)
            return None if got == want.tobytes() else array("I", got).tolist()
    rebuilt = reconstruct_output_ids(turn, profile, tokenizer)
    return None if rebuilt == golden else rebuilt

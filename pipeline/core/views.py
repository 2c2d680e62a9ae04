"""API views: what a server's chat-completions response looks like for given golden output ids.

A golden sample holds the exact ids an engine produced. ``api_view`` turns them into the flat
response (``{"reasoning", "content", "tool_calls", "finish_reason"}``) a given server would have
returned for them, so reconstruction can be tested against golden ids without a live API.

A view is declared by the profile's family (``ProfileSpec.views``: ``pipeline.core.engines.view.View``):
the engine, its reasoning and tool-call parsers by the names its server flags take, its decode options
and its response-assembly rules. Here the three steps run in the engine's order: decode the ids as the
engine's detokenizer does, run the parsers the registry (``pipeline.core.engines.registry``) holds under
those names, assemble the message as the engine's chat endpoint does.

A view answers for one request (``pipeline.core.engines.request``): the tools it declares with their
parameter schemas, its ``tool_choice`` and its chat template kwargs, as the golden sample records them;
the engines' parsers and response assembly read them. Without one, ``ASSUMED``: tools declared, every
name among them, no schemas, ``tool_choice`` auto.

The views parse the decoded *text*, as servers do, not the ids: marker text that the model wrote
as ordinary tokens looks exactly like the marker to a server's parser, and a faithful view must
be fooled the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .engines import registry
from .engines.request import ASSUMED, NAMED, NONE, REQUIRED, Request
from .engines.view import View
from .errors import TokfidelityError
from .golden import DEFAULT_VIEW
from .families import family_of
from .names import view_names
from .profiles import Profile
from .responses import ApiTurn, ToolCall, normalize_finish_reason, parse_response
from .tokenizer import Tokenizer

__all__ = ["api_view", "api_choice", "view_turn_and_bytes", "ViewError", "get_view"]



def __getattr__(name: str):
    if name == "VIEWS":  # every view name (pipeline.core.names); each profile lists those it has
        return view_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ViewError(TokfidelityError, ValueError):
    """An unknown view name, or a view the profile does not have."""


def get_view(profile: Profile, name: str) -> View:
    """The profile's view ``name``, or a ViewError naming the views it has."""
    view = profile.spec.views.get(name)
    if view is None:
        if name not in view_names():
            raise ViewError(f"unknown api view {name!r}; known views: {', '.join(view_names())}")
        raise ViewError(f"profile {profile.name} has no api view {name!r}; its views: {', '.join(profile.spec.views)}")
    return view


class _Bound:
    """One view bound to one profile: its parsers built, its stop handling resolved (made once)."""

    __slots__ = ("view", "decode", "whole", "reasoning", "tools", "trimmed_stops", "assembly", "profile", "tokenizer",
                 "_plain_decode")

    def __init__(self, profile: Profile, view: View, tokenizer: Tokenizer):
        self.view = view
        self.assembly = view.assembly
        kept = view.decode.keeps_stops
        self.trimmed_stops = frozenset(
            i for r, i in profile.ids.items() if (r == "stop" or r.startswith("stop.")) and profile.texts[r] not in kept
        )
        self.profile, self.tokenizer = profile, tokenizer
        self.decode = _decoder(view, view.decode.skip_special_tokens, tokenizer)
        self._plain_decode = None
        self.whole = self.reasoning = self.tools = None
        family = family_of(profile.name)
        if family is not None:
            family.load_parsers(registry)  # its parser modules imported, their parsers in this registry
        name = view.reasoning_parser
        if name is not None and registry.is_whole(view.engine, name):
            self.whole = registry.parser_class(view.engine, "whole", name)(profile, view, tokenizer)
            return
        if name is not None:
            self.reasoning = registry.parser_class(view.engine, "reasoning", name)(profile, view, tokenizer)
        if view.tool_parser is not None:
            self.tools = registry.parser_class(view.engine, "tool", view.tool_parser)(profile, view, tokenizer)


    def decoder(self, request: Request) -> Callable:
        """The decoder for this request: vLLM's ``skip_special_tokens`` as the parsers' ``adjust_request``
        leaves it, which depends on whether the request declares tools (``Decode.skip_without_tools``)."""
        decode = self.view.decode
        if decode.skip_without_tools is None or (request.declares_tools and request.choice != NONE):
            return self.decode
        if self._plain_decode is None:
            self._plain_decode = _decoder(self.view, decode.skip_without_tools, self.tokenizer)
        return self._plain_decode


def _bound(profile: Profile, name: str, tokenizer: Tokenizer) -> _Bound:
    bound = profile.bound_views.get(name)
    if bound is None:  # a profile is bound to one tokenizer: the view is bound to it too
        bound = profile.bound_views[name] = _Bound(profile, get_view(profile, name), tokenizer)
    return bound


def api_view(
    output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str = DEFAULT_VIEW,
    request: Request | None = None,
) -> dict:
    """The flat response a server (``view``, one of the profile's views) returns for these output ids,
    answering ``request`` (``ASSUMED`` when None).

    ``finish_reason`` is the engine's ("stop", "length", or SGLang's ``{"type": ...}``). The result
    has ``reasoning`` (None when empty), ``content`` (the engine's empty content, "" or None, when
    empty), ``tool_calls`` (None when there are none) and ``finish_reason``."""
    reasoning, content, calls, finish = _parsed(output_ids, finish_reason, profile, tokenizer, view, request)[0]
    tool_calls = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for name, arguments, call_id in calls
    ]
    return {"reasoning": reasoning, "content": content, "tool_calls": tool_calls or None, "finish_reason": finish}


def api_choice(
    output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str = DEFAULT_VIEW,
    request: Request | None = None,
) -> dict:
    """The choice of the chat completion the server sends for these ids (``choices[0]``, not streamed), as far as
    the view models it: ``index``, the ``message`` (``role`` and the flat response's ``content``, ``reasoning``
    and ``tool_calls``), ``finish_reason``, and each field the engine release sends as null to a request that asks
    for no logprobs and no ids (``Assembly.choice_nulls``: vLLM 0.33's ``weight_versions`` among them)."""
    flat = api_view(output_ids, finish_reason, profile, tokenizer, view, request)
    message = {"role": "assistant", "content": flat["content"], "reasoning": flat["reasoning"], "tool_calls": flat["tool_calls"]}
    choice = {"index": 0, "message": message, "finish_reason": flat["finish_reason"]}
    choice.update(dict.fromkeys(get_view(profile, view).assembly.choice_nulls))
    return choice


def view_turn_and_bytes(
    output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str = DEFAULT_VIEW,
    request: Request | None = None,
) -> tuple[ApiTurn, bytes | None]:
    """``parse_response(api_view(...))``, the turn reconstruction reads, without building the response
    between (the judge's per-sample path); and ``tokenizer.decode_bytes(output_ids)`` when the view
    decoded all the ids at once (None otherwise): a diagnosis of the sample takes them instead of
    decoding again."""
    (reasoning, content, calls, finish), data = _parsed(output_ids, finish_reason, profile, tokenizer, view, request)
    if content is None:
        return parse_response(api_view(output_ids, finish_reason, profile, tokenizer, view, request)), data
    calls = tuple([ToolCall(name, arguments, call_id) for name, arguments, call_id in calls])
    return ApiTurn(reasoning, content, calls, finish), data


def _parsed(output_ids: Sequence[int], finish_reason: Any, profile: Profile, tokenizer: Tokenizer, view: str,
            request: Request | None = None):
    """((reasoning or None, content, [(name, arguments, id)], finish_reason), the bytes of all the ids or None)."""
    bound = _bound(profile, view, tokenizer)
    request = ASSUMED if request is None else request
    ids = output_ids
    trim = bool(ids) and ids[-1] in bound.trimmed_stops  # the matched stop is not in the text
    text, data = (bound.decode if request is ASSUMED else bound.decoder(request))(ids, trim, tokenizer)
    if bound.whole is not None:
        reasoning, content, calls = bound.whole(text, ids, request)  # the engine's token ids, stop included
    else:
        reasoning, content, calls = None, text, []
        if bound.reasoning is not None:
            reasoning, content = bound.reasoning(text, request)
            if bound.assembly.strip_reasoning_split:
                reasoning, content = (reasoning or "").strip(), content.strip()
        if bound.tools is not None:
            blank = not (content and content.strip())  # what the tool parser is given
            content, calls = bound.tools(content, request)
            if blank and not calls and bound.assembly.forced_choice_rules and request.choice in (REQUIRED, NAMED):
                content = None
    cut = normalize_finish_reason(finish_reason) == "length"
    return _assemble(bound.assembly, reasoning, content, calls, cut, request), data


def _assemble(assembly, reasoning, content, calls, cut: bool, request: Request = ASSUMED):
    """The message as the engine's chat endpoint builds it from the parsers' results, for this request's
    ``tool_choice``: ``none`` sends no calls; with vLLM, ``required`` and a named tool send the content as
    "" when empty (also when the tool parser, given only whitespace, parsed no call), and ``finish_reason``
    "tool_calls" for ``required`` when the engine stopped (0.32 also without a call), the engine's own
    for a named tool."""
    choice = request.choice
    if choice == NONE:
        calls = []
    if calls:
        keep, fmt = assembly.keeps_parser_call_id, assembly.call_id
        calls = [
            (name, arguments, call_id if keep and call_id else fmt.format(name=name, index=index))
            for index, (name, arguments, call_id) in enumerate(calls)
        ]
    forced = assembly.forced_choice_rules and choice in (REQUIRED, NAMED)
    if forced:
        required = choice == REQUIRED and (bool(calls) or assembly.required_finish_without_calls)
        finish = "length" if cut else ("tool_calls" if required else "stop")
        return (reasoning if assembly.content_as_parsed else reasoning or None), content or "", calls, finish
    if calls and (not cut or assembly.tool_calls_finish_over_length):
        finish = "tool_calls"
    else:
        finish = "length" if cut else "stop"
    if assembly.content_as_parsed:  # vLLM: the message carries the parsers' answers as they are ("" reasoning stays "")
        return reasoning, content, calls, finish
    return reasoning or None, content or assembly.empty_content, calls, finish


def _decoder(view: View, skip_special_tokens: bool, tokenizer: Tokenizer) -> Callable:
    kind = view.decode.detokenizer
    if kind == "whole":
        return _decode
    from dataclasses import replace

    from .engines.vllm_decode import incremental_decoder

    return incremental_decoder(replace(view.decode, skip_special_tokens=skip_special_tokens), tokenizer)


def _decode(ids: Sequence[int], trim: bool, tokenizer: Tokenizer) -> tuple[str, bytes | None]:
    """(``tokenizer.decode(ids[:-1] if trim else ids)``, ``tokenizer.decode_bytes(ids)`` or None).

    Without copying the ids: decoding is the concatenation of each token's bytes, so the last
    token's bytes are cut off the whole's (a tokenizer with a decode of its own gets the ids)."""
    if type(tokenizer).decode is not Tokenizer.decode:
        return tokenizer.decode(ids[:-1] if trim else ids), None
    data = tokenizer.decode_bytes(ids)
    text = data[: len(data) - len(tokenizer.decode_bytes(ids[-1:]))] if trim else data
    return text.decode("utf-8", errors="replace"), data

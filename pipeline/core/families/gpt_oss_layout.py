"""gpt-oss output ids: the harmony format, as openai-harmony renders it, laid out from an API turn and split.

gpt-oss's prompt ends ``<|start|>assistant``; the model then writes messages, each after the first
opening ``<|start|>assistant`` again:

    <|channel|>analysis<|message|>{reasoning}<|end|>
    <|start|>assistant<|channel|>final<|message|>{content}<|return|>                       (an answer)
    <|start|>assistant<|channel|>commentary<|message|>{content}<|end|>                     (a preamble)
    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{args}<|call|>

The engine stops on ``<|return|>`` and on ``<|call|>`` (and ``<|endoftext|>``). The pieces of each
message (``<|start|>assistant``, the channel headers, the end tokens) are taken from openai-harmony's
own rendering when a profile is bound (``HarmonyIds.derive``), not written here, and the tool-call
header is checked by parsing it back with openai-harmony. The recipient is written in the channel
header (``<|channel|>commentary to=functions.NAME``), as the model writes it and as SGLang's
gpt-oss parser requires; openai-harmony renders history with the recipient in the role header
instead, so that one header is composed from harmony's pieces and checked with harmony's parser.

Reconstruction (``reconstruct``) from the API view: reasoning is the analysis message; with tool
calls, content is a commentary preamble and each call a commentary message to ``functions.NAME``
with its arguments verbatim; without calls, content is the final message. A length cut leaves the
last message open (no ``<|end|>`` / ``<|return|>``). Call ids are not part of harmony output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..output_spans import CONTENT, MARKER, REASONING, STOP, TOOL_ARGUMENTS, TOOL_CALL_ID
from ..output_spans import OutputLayout, Span, ToolCallSpans
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer

RECIPIENT = "functions.{name}"  # how the model addresses a declared function

__all__ = ["HarmonyIds", "HarmonyFormatError", "bind", "harmony_ids", "reconstruct", "split_harmony"]

class HarmonyFormatError(ValueError):
    """openai-harmony renders or parses something other than what this profile expects."""


@dataclass(frozen=True, slots=True)
class HarmonyIds:
    """The id pieces of each harmony message, from openai-harmony's rendering."""

    start: tuple[int, ...]  # <|start|>assistant
    analysis: tuple[int, ...]  # <|channel|>analysis<|message|>
    final: tuple[int, ...]  # <|channel|>final<|message|>
    preamble: tuple[int, ...]  # <|channel|>commentary<|message|>
    content_type: tuple[int, ...]  # <|constrain|>json
    channel: int
    message: int
    end: int
    call: int
    ret: int  # <|return|>: the final message's end as the model writes it

    def call_head(self, name: str, encode) -> list[int]:
        """<|channel|>commentary to=functions.NAME <|constrain|>json<|message|> (after <|start|>assistant)"""
        return [self.channel, *encode(f"commentary to={RECIPIENT.format(name=name)} "),
                *self.content_type, self.message]

    @classmethod
    def derive(cls, harmony, ids: dict[str, int], encode) -> "HarmonyIds":
        """Render one message per channel with openai-harmony and cut each at <|channel|> / <|message|>."""
        from openai_harmony import Conversation, Message, Role

        def render(channel, recipient=None, content_type=None, content=""):
            m = Message.from_role_and_content(Role.ASSISTANT, content).with_channel(channel)
            if recipient:
                m = m.with_recipient(recipient).with_content_type(content_type)
            return list(harmony.render(m))

        def head(rendered):
            c, m = rendered.index(ids["channel"]), rendered.index(ids["message"])
            return tuple(rendered[:c]), tuple(rendered[c : m + 1]), rendered[m + 1 :]

        start, analysis, tail = head(render("analysis"))
        _, final, _ = head(render("final"))
        _, preamble, _ = head(render("commentary"))
        call = render("commentary", "functions.f", "<|constrain|>json")
        constrain = call.index(ids["constrain"])
        content_type = tuple(call[constrain : call.index(ids["message"])])
        user = Message.from_role_and_content(Role.USER, "x")
        answer = Message.from_role_and_content(Role.ASSISTANT, "").with_channel("final")
        trained = harmony.render_conversation_for_training(Conversation.from_messages([user, answer]))
        pieces = cls(start, analysis, final, preamble, content_type, ids["channel"], ids["message"], tail[-1], call[-1],
                     trained[-1])
        pieces._check(harmony, ids, encode)
        return pieces

    def _check(self, harmony, ids, encode) -> None:
        from openai_harmony import Role

        expected = {"end": (self.end, ids["end"]), "call": (self.call, ids["call"]), "return": (self.ret, ids["stop"]),
                    "start": (self.start[0], ids["start"]), "constrain": (self.content_type[0], ids["constrain"])}
        wrong = {k: v for k, v in expected.items() if v[0] != v[1]}
        if wrong:
            raise HarmonyFormatError(f"openai-harmony renders these markers with other ids than the profile binds: {wrong}")
        probe = [*self.analysis, *encode("r"), self.end, *self.start, *self.call_head("get_weather", encode), *encode("{}"), self.call]
        parsed = [m.to_dict() for m in harmony.parse_messages_from_completion_tokens(probe, Role.ASSISTANT)]
        got = [(m.get("channel"), m.get("recipient"), m.get("content_type")) for m in parsed]
        want = [("analysis", None, None), ("commentary", "functions.get_weather", "<|constrain|>json")]
        if got != want:
            raise HarmonyFormatError(f"openai-harmony parses a gpt-oss tool call as {got}, expected {want}")


# HarmonyIds per bound profile, keyed by its name and ids (a Profile is frozen: nothing is written onto it);
# by name alone too, for copies made by Profile.with_ids (a misconfigured pipeline, modelled).
_BOUND: dict[object, HarmonyIds] = {}


def _key(profile) -> tuple:
    return profile.name, tuple(profile.ids.values())


def bind(profile, tokenizer: Tokenizer) -> None:
    """Derive the profile's HarmonyIds with openai-harmony and check them (raises ValueError)."""
    from ..harmony import HarmonyUnavailable, harmony_encoding

    try:
        pieces = HarmonyIds.derive(harmony_encoding(tokenizer), dict(profile.ids), tokenizer.encode_ordinary)
    except HarmonyUnavailable as e:
        raise HarmonyFormatError(str(e)) from None
    _BOUND[_key(profile)] = _BOUND[profile.name] = pieces


def harmony_ids(profile) -> HarmonyIds:
    """The HarmonyIds of a bound profile."""
    pieces = _BOUND.get(_key(profile)) or _BOUND.get(profile.name)
    if pieces is None:
        raise HarmonyFormatError(f"profile {profile.name} is not bound: use pipeline.core.profiles.bind_profile")
    return pieces


def reconstruct(turn, profile, tokenizer: Tokenizer) -> list[int]:
    """Output ids for one API turn (``responses.ApiTurn``), laid out as gpt-oss writes them."""
    h = harmony_ids(profile)
    encode = tokenizer.encode_ordinary
    cut = turn.finish_reason == "length"
    content = turn.content or ""
    calls = turn.tool_calls
    out: list[int] = []

    def open_message(head):
        if out:
            out.extend(h.start)
        out.extend(head)

    if turn.reasoning:
        open_message(h.analysis)
        out += encode(turn.reasoning)
        if not (cut and not content and not calls):  # cut while reasoning: the analysis stays open
            out.append(h.end)
    if calls:
        if content:
            open_message(h.preamble)
            out += encode(content)
            out.append(h.end)
        for call in calls:
            open_message(h.call_head(call.name, encode))
            out += encode(call.arguments)
            out.append(h.call)
    elif content or not cut:
        open_message(h.final)
        out += encode(content)
        if not cut:
            out.append(h.ret)
    return out


def split_harmony(ids: Sequence[int], profile) -> OutputLayout:
    """Regions of gpt-oss output ids, message by message (the profile must be bound: ``bind_profile``
    derives its HarmonyIds). A call's header words are its TOOL_CALL_ID region. Never raises."""
    h = harmony_ids(profile)
    m = profile.ids
    start, channel, message = m["start"], m["channel"], m["message"]
    enders = {m["end"], m["call"], m["stop"]}
    stops = set(profile.stop_ids)
    analysis, commentary = list(h.analysis[1:-1]), list(h.preamble[1:-1])
    layout = OutputLayout()
    n = len(ids)
    end = n - 1 if n and ids[-1] in stops else n
    if end < n:
        layout.stop_index = end
    pos = 0
    while pos < end:
        header_end = pos
        while header_end < end and ids[header_end] != message:
            header_end += 1
        body = min(header_end + 1, end)
        close = body
        while close < end and ids[close] not in enders and ids[close] != start:
            close += 1
        header = list(ids[pos:header_end])
        words = header[header.index(channel) + 1 :] if channel in header else []
        words = [t for t in words if t != m["constrain"]]
        if words == analysis:
            kind = REASONING
        elif words[: len(commentary)] == commentary and len(words) > len(commentary):
            kind = TOOL_ARGUMENTS
        else:
            kind = CONTENT
        if kind == TOOL_ARGUMENTS:  # the recipient words are the call's identity; the rest are markers
            first = pos + header.index(channel) + 1
            last = first
            while last < header_end and ids[last] != m["constrain"]:
                last += 1
            head = Span(TOOL_CALL_ID, first, last)
            layout.spans += [Span(MARKER, pos, first), head, Span(MARKER, last, body)]
        else:
            head = Span(MARKER, pos, body)
            layout.spans.append(head)
        span = Span(kind, body, close)
        layout.spans.append(span)
        if kind == REASONING and layout.reasoning is None:
            layout.reasoning = span
        elif kind == CONTENT and layout.content is None:
            layout.content = span
        elif kind == TOOL_ARGUMENTS:
            layout.tool_calls.append(ToolCallSpans(head, span, close < n and ids[close] == m["call"]))
        if close < end and ids[close] in enders:
            layout.spans.append(Span(MARKER, close, close + 1))
            close += 1
        pos = close
    if layout.stop_index is not None:
        layout.spans.append(Span(STOP, end, n))
    return layout

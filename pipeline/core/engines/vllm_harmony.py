"""vLLM 0.32.0 serving gpt-oss, restated: ``--reasoning-parser openai_gptoss --tool-call-parser openai``.

vLLM composes both into its ``HarmonyParser`` (``vllm/parser/harmony.py``) for any gpt-oss model,
which parses the output *ids* with openai-harmony's ``StreamableParser`` (run here too, the same
library): every id of the output, the stop token included, is processed (an id the parser rejects is
skipped); at the end ``process_eos``, and if the parser is then not in a terminal state, the ids since
the last whole message come back decoded, special tokens as text (``<|endoftext|>`` stays), as a final
message. Each completed assistant message with text: ``analysis`` is reasoning, ``final`` or
``commentary`` without a recipient is content (a preamble, not stripped), a function recipient
(``functions.NAME``, or a bare name that is no built-in tool) is a call named without ``functions.``,
its arguments ``json.dumps(json.loads(text))`` (non-ASCII escaped; the text itself when not JSON).
Reasoning parts and content parts are each joined with newlines.
"""

from __future__ import annotations

import json

from ..harmony import harmony_encoding
from .registry import register

__all__ = ["HarmonyParser"]

_BUILTIN = ("browser", "python", "container")  # vLLM's BUILTIN_TOOL_TO_MCP_SERVER_LABEL


def _is_function(recipient: str | None) -> bool:
    if not recipient or recipient.startswith("<|") or recipient == "assistant":
        return False
    if recipient.startswith("functions."):
        return len(recipient) > len("functions.")
    return recipient.split(".", 1)[0] not in _BUILTIN


def _normalize(recipient: str | None) -> str | None:
    if recipient is None:
        return None
    i = recipient.find("<|constrain|>")
    return recipient if i == -1 else recipient[:i].rstrip() or None


def _fields(m):
    """(channel, recipient, content type, text or None without content, role) of a harmony message."""
    return m.channel, _normalize(m.recipient), m.content_type, m.content[0].text if m.content else None, m.author.role


@register("vllm", "whole", "openai_gptoss")
@register("vllm", "tool", "openai")  # only ever composed with openai_gptoss (whole)
class HarmonyParser:
    __slots__ = ("encoding", "tokenizer")

    def __init__(self, profile, view, tokenizer):
        self.encoding = harmony_encoding(tokenizer)
        self.tokenizer = tokenizer

    def _messages(self, ids):
        from openai_harmony import HarmonyError, Role, StreamableParser

        parser = StreamableParser(self.encoding, role=Role.ASSISTANT)
        pending: list[int] = []
        done = 0
        for token in ids:
            try:
                parser.process(token)
            except HarmonyError:
                continue
            if len(parser.messages) > done:
                done += 1
                pending.clear()
            else:
                pending.append(token)
        try:
            parser.process_eos()
        except HarmonyError:  # not a terminal state: the rest, decoded, as a final message
            return [_fields(m) for m in parser.messages[:done]] + [("final", None, None, self.tokenizer.decode(pending), Role.ASSISTANT)]
        return [_fields(m) for m in parser.messages]

    def __call__(self, text: str, ids, request=None) -> tuple[str | None, str | None, list[tuple[str, str, None]]]:
        from openai_harmony import Role

        reasoning: list[str] = []
        content: list[str] = []
        calls: list[tuple[str, str, None]] = []
        for channel, recipient, content_type, body, role in self._messages(ids):
            if role != Role.ASSISTANT or body is None:  # a message without content
                continue
            if _is_function(recipient):  # a call even with empty arguments
                arguments = body
                if content_type is None or "json" in content_type:
                    try:
                        arguments = json.dumps(json.loads(body))
                    except json.JSONDecodeError:
                        pass
                calls.append((recipient.removeprefix("functions."), arguments, None))
            elif channel == "analysis" and body:
                reasoning.append(body)
            elif (channel == "final" or (channel == "commentary" and recipient is None)) and body:
                content.append(body)
        return "\n".join(reasoning) or None, "\n".join(content) or None, calls

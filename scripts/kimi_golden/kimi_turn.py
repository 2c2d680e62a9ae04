"""Kimi K2.5 turns as ids: the prompt through the model's own chat template, the output laid out
exactly as the model writes it (reasoning, </think>, content, tool-call section, <|im_end|>)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.kimi_tools_ts import tools_typescript  # checked against the official encoder
from pipeline.core.profiles import Profile
from pipeline.core.tokenizer import Tokenizer


@dataclass
class Call:
    name: str
    arguments: str  # exactly as the model writes it
    id: str  # exactly as the model writes it: functions.NAME:IDX, IDX conversation-wide


@dataclass
class Turn:
    reasoning: str
    content: str = ""
    calls: list[Call] = field(default_factory=list)


def _deep_sort(value):
    if isinstance(value, dict):
        return {k: _deep_sort(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_deep_sort(v) for v in value]
    return value


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' own override of jinja's tojson (no HTML escaping), as engines render it
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def load_template(tokenizer_dir: Path):
    """The chat template compiled the way transformers' apply_chat_template compiles it."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    return env.from_string((tokenizer_dir / "chat_template.jinja").read_text(encoding="utf-8"))


class KimiIds:
    def __init__(self, tokenizer: Tokenizer, profile: Profile, template):
        self.tok = tokenizer
        self.ids = profile.ids
        self.template = template

    def prompt_text(self, messages: list[dict], tools: list[dict] | None) -> str:
        """As Kimi K2.5's tokenizer class (apply_chat_template) renders it: every tool dict key-sorted
        (deep_sort_dict), the tools declared in TypeScript (tools_ts_str; left unset where the official
        encoder raises, so the template writes JSON), thinking on."""
        tools = [_deep_sort(t) for t in tools] if tools else tools
        kwargs = {}
        if tools:
            declarations = tools_typescript(tools)
            if declarations is not None:
                kwargs["tools_ts_str"] = declarations
        return self.template.render(messages=messages, tools=tools, add_generation_prompt=True, thinking=True,
                                    preserve_thinking=False, **kwargs)

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        return self.tok.encode(self.prompt_text(messages, tools))  # the model's tokenizer: markers are specials

    def enc(self, text: str) -> list[int]:
        return self.tok.encode_ordinary(text)

    def tool_section(self, calls: list[Call]) -> list[int]:
        ids = self.ids
        out = [ids["tool_calls_begin"]]
        for call in calls:
            out += [ids["tool_call_begin"], *self.enc(call.id), ids["tool_call_argument_begin"]]
            out += self.enc(call.arguments) + [ids["tool_call_end"]]
        return out + [ids["tool_calls_end"]]

    def output_ids(self, turn: Turn, *, reasoning_ids=None, content_ids=None, stop: bool = True) -> list[int]:
        ids = self.ids
        out = list(self.enc(turn.reasoning) if reasoning_ids is None else reasoning_ids)
        out.append(ids["think_end"])
        out += self.enc(turn.content) if content_ids is None else content_ids
        if turn.calls:
            out += self.tool_section(turn.calls)
        if stop:
            out.append(ids["stop"])
        return out


def api_tool_calls(calls: list[Call], *, ids: list[str] | None = None, arguments: list[str] | None = None) -> list[dict]:
    return [
        {
            "id": (ids[i] if ids else c.id),
            "type": "function",
            "function": {"name": c.name, "arguments": arguments[i] if arguments else c.arguments},
        }
        for i, c in enumerate(calls)
    ]


def chat_response(reasoning, content, tool_calls, finish_reason, completion_tokens, *, reasoning_key="reasoning_content",
                  model="moonshotai/kimi-k2.5"):
    """A recorded non-streaming chat-completions body, as an OpenAI-compatible provider returns it."""
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message[reasoning_key] = reasoning
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"completion_tokens": completion_tokens},
    }


def non_canonical_split(tok: Tokenizer, ids: list[int], *, start: int = 0, min_len: int = 5) -> tuple[list[int], int] | None:
    """Re-split the first token at or after ``start`` whose bytes also split into two other
    single tokens: same bytes, different ids, as a sampling model sometimes emits. Returns the
    new ids and the index of the re-split token, or None."""
    for i in range(start, len(ids)):
        b = tok.token_bytes(ids[i])
        if len(b) < min_len or ids[i] in tok.special_ids:
            continue
        try:
            text = b.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for k in range(len(text) - 2, 1, -1):
            left, right = tok.encode_ordinary(text[:k]), tok.encode_ordinary(text[k:])
            if len(left) == 1 and len(right) == 1:
                return ids[:i] + left + right + ids[i + 1 :], i
    return None

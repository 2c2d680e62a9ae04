"""Model turn formats ("profiles"): data, plus the little code that binds them to a tokenizer.

A profile names the marker texts of a model's assistant turn. Ids are never written here:
``bind_profile`` encodes each marker's text through the tokenizer and checks the result
against the tokenizer's special-token table, so a wrong id cannot be configured by hand.
Adding a model is adding one ``ProfileSpec`` to ``PROFILES``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .tokenizer import Tokenizer

__all__ = ["ProfileSpec", "Profile", "ProfileError", "PROFILES", "get_profile_spec", "bind_profile"]

# Marker roles that structure an assistant output. Prompt-only roles live in ``prompt_markers``.
OUTPUT_ROLES = (
    "think_end",
    "tool_calls_begin",
    "tool_calls_end",
    "tool_call_begin",
    "tool_call_argument_begin",
    "tool_call_end",
    "stop",
)


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    default_tokenizer: str  # a hub id; a local folder of the same last name is found first
    markers: Mapping[str, str]  # role -> marker text, for the output structure (OUTPUT_ROLES)
    prompt_markers: Mapping[str, str] = field(default_factory=dict)  # roles used when rendering prompts
    thinking: bool = False  # the output starts inside the reasoning and closes it with think_end
    tool_call_id_template: str | None = None  # how the model writes a call id, e.g. functions.{name}:{index}
    tool_call_id_pattern: str | None = None  # regex an API-returned id must match to be used verbatim
    description: str = ""
    # Prompt rendering (pipeline.core.render): which turn format, and the system prompt the model's chat
    # template inserts when a conversation has none (None: it inserts nothing).
    chat_format: str | None = None
    chat_default_system: str | None = None

    @property
    def has_tools(self) -> bool:
        return "tool_calls_begin" in self.markers


_KIMI_TOOL_MARKERS = {
    "tool_calls_begin": "<|tool_calls_section_begin|>",
    "tool_calls_end": "<|tool_calls_section_end|>",
    "tool_call_begin": "<|tool_call_begin|>",
    "tool_call_argument_begin": "<|tool_call_argument_begin|>",
    "tool_call_end": "<|tool_call_end|>",
}
_KIMI_PROMPT_MARKERS = {
    "system": "<|im_system|>",
    "user": "<|im_user|>",
    "assistant": "<|im_assistant|>",
    "middle": "<|im_middle|>",
    "end": "<|im_end|>",
}
_KIMI_COMMON = dict(
    tool_call_id_template="functions.{name}:{index}",
    tool_call_id_pattern=r"functions\.[^:\s]+:\d+",
)

PROFILES: dict[str, ProfileSpec] = {
    spec.name: spec
    for spec in (
        ProfileSpec(
            name="kimi-k2.5",
            default_tokenizer="moonshotai/Kimi-K2.5",
            markers={"think_end": "</think>", **_KIMI_TOOL_MARKERS, "stop": "<|im_end|>"},
            prompt_markers={**_KIMI_PROMPT_MARKERS, "think_begin": "<think>", "think_end": "</think>"},
            thinking=True,
            chat_format="kimi-k2.5",  # as ../shared/tokenizers/kimi-k2.5/chat_template.jinja: no default system
            description="Kimi K2.5 with thinking: the prompt ends <|im_assistant|>assistant<|im_middle|><think>, "
            "so the output is reasoning, </think>, content, tool-call section, <|im_end|>.",
            **_KIMI_COMMON,
        ),
        ProfileSpec(
            name="kimi-k2",
            default_tokenizer="moonshotai/Kimi-K2-Instruct",
            markers={**_KIMI_TOOL_MARKERS, "stop": "<|im_end|>"},
            prompt_markers=_KIMI_PROMPT_MARKERS,
            chat_format="kimi-k2",
            chat_default_system="You are a helpful assistant",  # as kimi-k2/chat_template.jinja
            description="Kimi K2 Instruct: content, tool-call section, <|im_end|>; no thinking.",
            **_KIMI_COMMON,
        ),
        ProfileSpec(
            name="chatml",
            default_tokenizer="HuggingFaceTB/SmolLM2-135M-Instruct",
            markers={"stop": "<|im_end|>"},
            prompt_markers={"start": "<|im_start|>", "end": "<|im_end|>"},
            chat_format="chatml",
            chat_default_system="You are a helpful AI assistant named SmolLM, trained by Hugging Face",  # SmolLM2's template
            description="ChatML (SmolLM2, Qwen without tools): content then <|im_end|>.",
        ),
    )
}


class ProfileError(ValueError):
    """A profile does not fit its tokenizer (a marker is not exactly one special id)."""


def get_profile_spec(name: str) -> ProfileSpec:
    try:
        return PROFILES[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r}; known profiles: {', '.join(sorted(PROFILES))}") from None


@dataclass(frozen=True)
class Profile:
    """A profile bound to one tokenizer: every marker role has its verified id."""

    spec: ProfileSpec
    ids: Mapping[str, int]  # role -> id, output and prompt markers alike
    texts: Mapping[str, str]  # role -> marker text

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def stop_id(self) -> int:
        return self.ids["stop"]

    @property
    def marker_ids(self) -> frozenset[int]:
        return frozenset(self.ids.values())

    def tool_call_id(self, api_id: str | None, name: str, index: int) -> str:
        """The call id as the model wrote it: the API's id when it has the model's shape, else rebuilt."""
        spec = self.spec
        if api_id and spec.tool_call_id_pattern and re.fullmatch(spec.tool_call_id_pattern, api_id):
            return api_id
        if spec.tool_call_id_template is None:
            return api_id or ""
        return spec.tool_call_id_template.format(name=name, index=index)

    def with_ids(self, **overrides: int) -> "Profile":
        """A copy with some ids replaced, bypassing the checks: to model a misconfigured pipeline."""
        return Profile(self.spec, {**self.ids, **overrides}, self.texts)


def marker_id(tokenizer: Tokenizer, text: str) -> int:
    """The one id a marker text encodes to, checked against the special-token table."""
    ids = tokenizer.encode(text)
    if len(ids) != 1:
        raise ProfileError(
            f"marker {text!r} encodes to {len(ids)} ids {ids} with tokenizer {tokenizer.name} "
            f"({tokenizer.source}), not one special id: the tokenizer does not match this profile"
        )
    (token_id,) = ids
    table_id = tokenizer.special_tokens.get(text)
    if table_id != token_id:
        raise ProfileError(
            f"marker {text!r} encodes to {token_id} but the special-token table of {tokenizer.name} "
            f"says {table_id}: the tokenizer files disagree with each other"
        )
    return token_id


def bind_profile(spec: ProfileSpec | str, tokenizer: Tokenizer) -> Profile:
    """Resolve every marker of a profile to its id through the tokenizer, or raise ProfileError."""
    if isinstance(spec, str):
        spec = get_profile_spec(spec)
    texts = {**{f"prompt.{r}": t for r, t in spec.prompt_markers.items()}, **spec.markers}
    ids = {role: marker_id(tokenizer, text) for role, text in texts.items()}
    return Profile(spec, ids, texts)

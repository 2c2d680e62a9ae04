"""What a model family is, as data: ``ProfileSpec`` (marker texts, stop tokens, the output layout and
the tool-call template) and ``ToolCallFormat``.

Ids are never written here: ``pipeline.core.profiles.bind_profile`` encodes each marker text
through the tokenizer and cross-checks it against the special-token table.

A tool-call template is a tuple of parts: ``"@role"`` is the marker of that role (one id),
``"$name"``, ``"$arguments"`` and ``"$id"`` are the call's fields, anything else is literal text.
Adjacent text parts (literal text and fields) are one run of ordinary text, encoded together, as
the model's tokenizer sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..engines.view import View

__all__ = ["ProfileSpec", "ToolCallFormat", "OwnLayout", "OUTPUT_ROLES"]

# Marker roles that structure an assistant output. Prompt-only roles live in ``prompt_markers``.
OUTPUT_ROLES = (
    "think_begin",  # only for models that open their reasoning themselves (Qwen3)
    "think_end",
    "tool_calls_begin",
    "tool_calls_end",
    "tool_call_begin",
    "tool_call_argument_begin",
    "tool_sep",
    "tool_call_end",
    "stop",
)


@dataclass(frozen=True)
class ToolCallFormat:
    """How the model writes its tool calls, and what the server's tool-call parser does to the text
    around them."""

    call: tuple[str, ...]  # one call: "@role" markers, "$field"s, literal text
    separator: str = ""  # text the model writes between two calls
    content_separator: str = ""  # text between non-empty content and the first call
    # The server's tool-call parser returns content .strip()ped when it finds calls (sglang's qwen25
    # and deepseekv3 detectors): the model's whitespace around the content is rebuilt from the layout.
    strips_content: bool = False
    # The marker that ends the call's head (Kimi's id before <|tool_call_argument_begin|>, DeepSeek's
    # type before <｜tool▁sep｜>); None when the whole call body is arguments (Qwen3's JSON object).
    head_end: str | None = None

    def markers(self) -> tuple[str, ...]:
        return tuple(part[1:] for part in self.call if part.startswith("@"))


@dataclass(frozen=True)
class OwnLayout:
    """A family whose output is not one template (gpt-oss: harmony messages rendered by openai-harmony)
    brings its own functions; the generic layout, reconstruction and split are then not used."""

    bind: Callable  # (profile, tokenizer) -> None: derive and check what the layout needs; raises ValueError
    reconstruct: Callable  # (ApiTurn, profile, tokenizer) -> output ids
    split: Callable  # (ids, profile) -> layout.OutputLayout
    # The marker roles that make up one tool call (a diagnosis reads an inserted one as a rebuilt call head).
    call_markers: tuple[str, ...] = ()
    # The ordinary text that opens the tool calls when they are text, not marker ids (DeepSeek-V3.2's
    # ``<｜DSML｜function_calls>``): a parser cuts the output where the model writes it, a diagnosis reads
    # what is lost after it as what that cut dropped.
    call_text: str = ""


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    default_tokenizer: str  # a hub id; a local folder of the same last name is found first
    markers: Mapping[str, str]  # role -> marker text, for the output structure (OUTPUT_ROLES)
    prompt_markers: Mapping[str, str] = field(default_factory=dict)  # roles used when rendering prompts
    # Kimi K2.5: the prompt opens <think>, so the output starts inside the reasoning and closes it with
    # think_end. Qwen3: the output opens it itself (markers has think_begin); a response with no
    # reasoning is laid out without a think block (enable_thinking=false).
    thinking: bool = False
    # DeepSeek-V3.1: the prompt opens the think block only when the request asks for thinking, so a response
    # without reasoning was generated with it off and is laid out without one.
    think_optional: bool = False
    think_gap: str = ""  # text the model writes between think_end and the content (Qwen3: "\n\n")
    tool_calls: ToolCallFormat | None = None
    extra_stops: tuple[str, ...] = ()  # further stop-token texts the engine stops on (markers["stop"] first)
    tool_call_id_template: str | None = None  # how the model writes a call id, e.g. functions.{name}:{index}
    tool_call_id_pattern: str | None = None  # regex an API-returned id must match to be used verbatim
    description: str = ""
    # Prompt rendering (pipeline.core.render renders the model's own chat template): what the model's
    # tokenizer class does in Python before the template, as data. tools_preprocess names steps of
    # pipeline.core.render.TOOL_STEPS, in order; chat_template_kwargs are the template variables it sets.
    tools_preprocess: tuple[str, ...] = ()
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    # Who renders prompts, by name in pipeline.core.prompt_renderers: "template" (the model's chat template,
    # pipeline.core.render), "harmony" (openai-harmony, gpt-oss's official renderer) or "dsv32" (DeepSeek-V3.2's
    # encoder, restated); every caller that renders a prompt goes through the one named here.
    prompt_renderer: str = "template"
    # The views this profile has, by name (pipeline.core.views): each a declared engine serving it
    # (pipeline.core.engines.view.View: its parsers by the server's names, decode options, assembly).
    views: Mapping[str, View] = field(default_factory=dict)
    own_layout: OwnLayout | None = None

    @property
    def has_tools(self) -> bool:
        return self.tool_calls is not None

    @property
    def stop_texts(self) -> tuple[str, ...]:
        return (self.markers["stop"], *self.extra_stops)

    @property
    def call_marker_roles(self) -> tuple[str, ...]:
        """The marker roles one tool call is written with: its template's markers, or its own layout's."""
        if self.tool_calls is not None:
            return self.tool_calls.markers()
        return self.own_layout.call_markers if self.own_layout is not None else ()

    @property
    def opens_think(self) -> bool:
        return "think_begin" in self.markers

"""A view as data: which engine, which of its parsers (by the names its server flags take), how it
decodes the output ids and how it assembles the response. A leaf module: the families declare their
views with it, and checking a manifest reads the names without importing any parser."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Decode", "Assembly", "View", "release", "view_for_release"]


@dataclass(frozen=True)
class Decode:
    """How the engine turns output ids into the text its parsers see."""

    # The engine's detokenizer: "whole" decodes all ids at once, invalid UTF-8 as U+FFFD (SGLang);
    # "incremental" is vLLM's, which holds back an incomplete character at the end of the output.
    detokenizer: str = "whole"
    skip_special_tokens: bool = False
    # vLLM: skip_special_tokens when the request declares no tools or sets tool_choice "none" (the tool
    # parser's adjust_request then leaves the request's default); None: the same as with tools.
    skip_without_tools: bool | None = None
    # vLLM's default; it puts spaces only where the tokenizer *class* decodes through Python
    # (transformers' slow path: Kimi's TikTokenTokenizer), around the class's special tokens.
    spaces_between_special_tokens: bool = False
    # The texts the tokenizer class treats as special (bos/eos/unk/pad and additional_special_tokens):
    # skipped with skip_special_tokens, spaced with spaces_between_special_tokens, and deleted from
    # the text by vLLM's parser engine when they are not the parser's own markers. None: none.
    class_special: tuple[str, ...] | None = None
    # Or, for a class whose specials are the tokenizer's flagged ones: the added tokens it does not
    # treat as special (Qwen3's <think>, DeepSeek's tool markers), every other special being special.
    class_ordinary: tuple[str, ...] = ()
    # vLLM's slow detokenizer, spacing the class's specials, also spaces the first output text off the
    # prompt's last token when that is one of them (Kimi K2's generation prompt ends <|im_middle|>).
    leading_space: bool = False
    # Stop tokens whose text the detokenizer keeps (SGLang keeps gpt-oss's <|call|> for its parser).
    keeps_stops: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assembly:
    """How the chat endpoint builds the message from the parsers' results."""

    # The id of a call the parser gave none: a format of ``name`` and ``index`` (the call's position).
    call_id: str = "call_{index:024x}"
    # Whether a call id the parser read from the output is kept (vLLM's Kimi parser) or replaced.
    keeps_parser_call_id: bool = False
    # finish_reason "tool_calls" whenever calls were parsed, even after a length cut (vLLM 0.32).
    tool_calls_finish_over_length: bool = False
    # tool_choice "required": finish_reason "tool_calls" after a stop even when no call was parsed (vLLM
    # 0.32; 0.33 says "stop" then).
    required_finish_without_calls: bool = False
    # What an empty content is sent as (SGLang: ""), unless the content goes out as the parsers give it
    # (vLLM: null from a parser that found nothing to say, "" from one that passed an empty text through).
    empty_content: str | None = ""
    content_as_parsed: bool = False
    # vLLM's chat endpoint for tool_choice "required" / a named tool: content "" when empty, finish_reason
    # "tool_calls" after any stop for "required", the engine's own for a named tool.
    forced_choice_rules: bool = False
    # SGLang before PR #24251: .strip() on the reasoning and on the text after it.
    strip_reasoning_split: bool = False
    # The fields of a non-streaming choice the endpoint sends as null to a request that asks for no logprobs
    # and no ids (vLLM: logprobs, token_ids, routed_experts; from 0.33 weight_versions too). Not modelled:
    # stop_reason (the matched stop's id or text), and SGLang's extra fields.
    choice_nulls: tuple[str, ...] = ()


@dataclass(frozen=True)
class View:
    """One engine serving one model family: parsers named as the server's flags name them
    (``--reasoning-parser`` / ``--tool-call-parser``), its decode options and assembly rules."""

    engine: str  # "sglang" or "vllm": the registry the parsers come from
    version: str
    reasoning_parser: str | None = None
    tool_parser: str | None = None
    decode: Decode = Decode()
    assembly: Assembly = Assembly()
    note: str = ""  # what the README says about it

    @property
    def flags(self) -> str:
        """The server flags this view stands for."""
        parts = []
        if self.reasoning_parser:
            parts.append(f"--reasoning-parser {self.reasoning_parser}")
        if self.tool_parser:
            parts.append(f"--tool-call-parser {self.tool_parser}")
        return " ".join(parts) or "(no parsers)"


SGLANG_VERSION = "0.5.23"
VLLM_VERSION = "0.33.0"  # the newest vLLM release proven: the ``vllm`` view; older lines are ``vllm-X.Y``
VLLM_OLDER = ("0.32.0",)


def release(version: str) -> tuple[int, ...]:
    """A release's version as numbers (``"0.33.0"`` -> ``(0, 33, 0)``); a view that names no release: ()."""
    parts = []
    for piece in version.split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def view_for_release(views, engine: str, version) -> str | None:
    """The name of the view (of ``views``, name -> View) standing for this engine release's line: the same
    major and minor release (a server running vLLM 0.32.1 gets the view of 0.32.0). None when no view stands
    for it, or ``version`` names no release."""
    line = release(version)[:2] if isinstance(version, str) else ()
    if len(line) < 2:
        return None
    for name, view in views.items():
        if view.engine == engine and release(view.version)[:2] == line:
            return name
    return None


def sglang(reasoning: str | None = None, tool: str | None = None, *, keeps_stops: tuple[str, ...] = (),
           call_id: str = "call_{index:024x}") -> View:
    """SGLang 0.5.23 serving with these parsers: the whole output decoded with its special tokens
    (``skip_special_tokens`` is off whenever a parser runs), the matched stop trimmed, empty reasoning
    sent as null (``serving_chat``: ``reasoning_text if reasoning_text ... else None``), ``finish_reason``
    "length" after a cut, else "tool_calls" when calls were parsed. ``tool_choice`` ``required`` or a named tool
    is parsed as ``auto``: each detector restated here owns its format, so ``serving_chat`` constrains the
    decoding with the detector's structural tag and parses the output as it parses an ``auto`` one."""
    return View("sglang", SGLANG_VERSION, reasoning, tool, Decode(keeps_stops=keeps_stops), Assembly(call_id=call_id))


def vllm_views(reasoning: str | None = None, tool: str | None = None, **options) -> dict[str, View]:
    """The vLLM views of one family, a view per release line: ``vllm`` for the newest release proven,
    ``vllm-X.Y`` for each older one still selectable by name."""
    views = {"vllm": vllm(reasoning, tool, **options)}
    for version in VLLM_OLDER:
        views["vllm-" + ".".join(version.split(".")[:2])] = vllm(reasoning, tool, version=version, **options)
    return views


def vllm(reasoning: str | None = None, tool: str | None = None, *, skip_special_tokens: bool = False,
         class_special: tuple[str, ...] | None = None, class_ordinary: tuple[str, ...] = (),
         leading_space: bool = False, version: str = VLLM_VERSION, note: str = "") -> View:
    """vLLM (``version``, 0.32.0 or 0.33.0) serving with these parsers, for the request: its
    incremental detokenizer (``skip_special_tokens`` as the parsers' ``adjust_request`` leaves it,
    ``spaces_between_special_tokens`` on, its default), the matched stop not decoded; the message built
    as ``chat_completion_full_generator`` builds it: the reasoning and the content as the parsers give them
    (null, ``""`` from DeepSeek's reasoning parser, or the detokenized text passed through), a call's id
    the parser's or ``chatcmpl-tool-<random>``. ``finish_reason`` "tool_calls" when calls were parsed: in
    0.32 also after a length cut, and after any stop with ``tool_choice`` "required"; from 0.33 only
    when the engine stopped, never for a named tool. Parsers that differ between releases read
    ``release(view.version)``: from 0.33 a ``number`` parameter is tried as ``int()`` first, and
    DeepSeek-V3's calls may span lines, its text after the calls kept as content; every choice carries
    ``"weight_versions": null``."""
    newer = release(version) >= (0, 33)
    # A reasoning parser built on vLLM's parser engine turns skip_special_tokens off for every request;
    # a tool parser alone only for a request with tools and tool_choice other than "none".
    skip_without_tools = None if reasoning is not None else True
    decode = Decode("incremental", skip_special_tokens, skip_without_tools, True, class_special, class_ordinary, leading_space)
    assembly = Assembly(call_id="chatcmpl-tool-{index:016x}", keeps_parser_call_id=True,
                        tool_calls_finish_over_length=not newer, required_finish_without_calls=not newer,
                        content_as_parsed=True, forced_choice_rules=True,
                        choice_nulls=("logprobs", "token_ids", "routed_experts") + (("weight_versions",) if newer else ()))
    return View("vllm", version, reasoning, tool, decode, assembly, note)


def sglang_legacy(view: View) -> View:
    """The same server before SGLang PR #24251 (2026-05): reasoning and the text after it ``.strip()``ped."""
    return View(view.engine, "before PR #24251", view.reasoning_parser, view.tool_parser, view.decode,
                Assembly(**{**view.assembly.__dict__, "strip_reasoning_split": True}))

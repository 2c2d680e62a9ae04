"""Prompt verdicts: does a golden sample's conversation render to the prompt ids it records?

A drafter's training sample is the prompt ids followed by the output ids; the output side is judged
by reconstruction (fidelity.py), the prompt side here. ``PromptJudge`` renders a sample's ``messages``
with its ``tools`` and ``chat_template_kwargs`` as the engine's tokenizer does (the profile's prompt
renderer, pipeline.core.prompt_renderers: the model's own template, openai-harmony for gpt-oss, DeepSeek-V3.2's
encoder) and compares the ids with the golden
``prompt_ids``. Per-sample work, bound once per dataset and cached where it is exactly the same work:

* a conversation (messages, tools, template variables) is rendered and encoded once: the samples of
  one prompt (n completions of it) share its ids, and each sample's own ``prompt_ids`` are compared
  with them (``PromptJudge.conversation_ids``);
* the tool pre-processing (Kimi K2.5's deep sort and TypeScript declarations) of an identical tool
  set and template variables is done once (keyed by the tools' JSON, in order: order matters to
  templates that do not sort), and so is the plain copy of them transformers makes before each render
  (pipeline.core.template_adapter);
* the encoding of an identical piece of text between two special tokens (a tool declaration, a
  system turn, a message an earlier sample of the same conversation had) is done once, where the
  tokenizer encodes each such piece on its own: tiktoken tokenizers do (their encode finds the next
  special token and encodes the ordinary text before it by itself), when no special token's text is
  a prefix of another's and the text is shorter than Kimi's long-input cut. Other tokenizers encode
  the whole text.

Identical means equal as JSON, byte for byte (types, key order: ``1``, ``1.0`` and ``true`` differ),
and equal as Python values (a NaN and a null are both written ``null``).

A divergence is diagnosed by segment (``diagnose_prompt``): the tool declarations, the system turn,
message k (role), the history of an earlier assistant turn, or the generation prompt; with a class a
person can act on and advice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .golden import GoldenSample
from .profiles import Profile
from .render import RenderError, check_messages, prepare, render_with, template_inputs
from .prompt_renderers import prompt_renderer
from .template_adapter import Prepared
from .tokenizer import Tokenizer

__all__ = [
    "PROMPT_EXACT", "PROMPT_UNCHECKED", "PROMPT_OFF", "PROMPT_ADVICE",
    "PromptDivergence", "PromptJudge", "diagnose_prompt",
]

PROMPT_EXACT = "exact"  # the rendered prompt is the golden prompt_ids
PROMPT_UNCHECKED = ""  # the sample records no prompt_ids (or no messages)
PROMPT_OFF = "off"  # --tokfidelity-prompts=off: not rendered

TOOL_DECLARATIONS = "tool-declarations"
TEMPLATE_VARIABLE = "template-variable"
HISTORY = "history"
SPECIAL_TOKEN_ID = "special-token-id"
WHITESPACE = "whitespace"
TEMPLATE_TEXT = "template-text"

PROMPT_ADVICE = {
    TOOL_DECLARATIONS: "the tool declarations differ: TypeScript declarations against the template's JSON fallback, "
    "the order of a schema's keys (templates that do not sort write them as given), a default or enum written "
    "another way; check the profile's tools_preprocess (pipeline/core/families) and that the sample's tools are the "
    "request's, byte for byte",
    TEMPLATE_VARIABLE: "the generation prompt or a template switch differs: thinking / enable_thinking or another "
    "template variable; a sample whose request set chat_template_kwargs must record them (e.g. "
    '{"enable_thinking": false}); the profile\'s chat_template_kwargs are the engine\'s defaults',
    HISTORY: "an earlier assistant turn is rendered differently: its reasoning kept on one side and dropped on the "
    "other; Kimi K2.5 drops the reasoning of turns up to the last plain answer unless preserve_thinking is set: "
    "record the request's preserve_thinking in chat_template_kwargs",
    SPECIAL_TOKEN_ID: "a special token differs: another marker id, or marker text where the engine has the marker "
    "(or the other way round); check the tokenizer (fingerprint) and that the template's marker texts are the "
    "tokenizer's special tokens",
    WHITESPACE: "the texts differ only in whitespace: the template (or the messages) adds or strips a newline or "
    "a space; compare the template file with the engine's and check the messages' content as sent",
    TEMPLATE_TEXT: "the template writes other text here than the engine's: the chat template file differs from "
    "the engine's (its sha256 is in the gate record), or the message text differs from the request's",
}

_CACHE_LIMIT = 4096  # entries per cache; a full cache is emptied (identical tool sets come back at once)
_MIN_CACHED = 48  # characters: shorter pieces are encoded again (a dict lookup costs about as much)
WINDOW = 6  # tokens either side of the first difference, in a report


@dataclass(frozen=True)
class PromptDivergence:
    """Where and how a rendered prompt leaves the golden prompt ids."""

    cls: str
    segment: str  # "tool declarations", "system turn", "message 2 (user)", "history: assistant turn 1", "generation prompt"
    first_index: int
    golden_len: int
    rendered_len: int
    golden_window: tuple[int, ...]
    rendered_window: tuple[int, ...]
    golden_text: tuple[str, ...]
    rendered_text: tuple[str, ...]

    def signature(self) -> dict[str, Any]:
        """What a reviewed snapshot stores of it (the ``prompt`` entry of the sample's signature)."""
        return {"class": self.cls, "segment": self.segment, "first_index": self.first_index,
                "golden_window": list(self.golden_window), "rendered_window": list(self.rendered_window),
                "golden_text": list(self.golden_text), "rendered_text": list(self.rendered_text)}

    def render(self) -> str:
        return (
            f"prompt divergence [{self.cls}] in the {self.segment} at index {self.first_index} (golden prompt_ids "
            f"{self.golden_len} ids, rendered {self.rendered_len} ids)\n"
            f"  golden:   {' '.join(f'{i}:{t!r}' for i, t in zip(self.golden_window, self.golden_text)) or '(end)'}\n"
            f"  rendered: {' '.join(f'{i}:{t!r}' for i, t in zip(self.rendered_window, self.rendered_text)) or '(end)'}\n"
            f"  advice: {PROMPT_ADVICE[self.cls]}"
        )


def _trie_pattern(texts: Sequence[str]) -> str:
    """A regular expression matching any of ``texts``, written as a trie (``<\\|(?:im_end|im_user)\\|>``...): one
    test per character where an alternation of Kimi's 258 special tokens tries each in turn (0.02 against
    0.08 ms a prompt). For a prefix-free set it matches what the alternation matches."""
    trie: dict = {}
    for text in texts:
        node = trie
        for ch in text:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(ch) + pattern(node[ch]) for ch in sorted(node) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return pattern(trie)


class _Encoder:
    """``tokenizer.encode``, with the ordinary text between special tokens encoded once per distinct
    piece where that is exactly what the tokenizer does (see the module's docstring)."""

    def __init__(self, tokenizer: Tokenizer):
        from .tokenizer.tiktoken_files import KIMI_MAX_RUN_CHARS, TiktokenTokenizer

        self.tokenizer = tokenizer
        self.specials = dict(tokenizer.special_tokens)
        texts = sorted(self.specials, key=len, reverse=True)
        prefix_free = not any(b.startswith(a) for i, a in enumerate(texts) for b in texts[:i])
        self.piecewise = isinstance(tokenizer, TiktokenTokenizer) and prefix_free and bool(texts)
        self.max_chars = KIMI_MAX_RUN_CHARS
        self.split = re.compile("(" + _trie_pattern(texts) + ")").split if self.piecewise else None
        self.cache: dict[str, list[int]] = {}

    def __call__(self, text: str) -> list[int]:
        if not self.piecewise or len(text) > self.max_chars:
            return self.tokenizer.encode(text)
        out: list[int] = []
        cache, specials, encode = self.cache, self.specials, self.tokenizer.encode_ordinary
        for i, part in enumerate(self.split(text)):
            if i & 1:
                out.append(specials[part])
            elif len(part) < _MIN_CACHED:
                if part:
                    out += encode(part)
            else:
                ids = cache.get(part)
                if ids is None:
                    if len(cache) >= _CACHE_LIMIT:
                        cache.clear()
                    ids = cache[part] = encode(part)
                out += ids
        return out


class PromptJudge:
    """Prompt verdicts for one dataset's samples: ``PROMPT_EXACT``, ``PROMPT_UNCHECKED`` or a
    ``PromptDivergence``; a conversation that cannot be rendered raises ``RenderError``."""

    def __init__(self, profile: Profile, tokenizer: Tokenizer, render: Callable[..., list[int]] | None = None):
        self.profile = profile
        self.tokenizer = tokenizer
        # a user's renderer (own_code.bound_renderer), judged instead of the model's template; a
        # divergence is still placed by segment with the model's template
        self.render = render
        self._encoder: _Encoder | None = None  # made on first use (a Judge that never sees prompt_ids needs none)
        self._inputs: dict[tuple[bytes, bytes], tuple[Prepared, tuple]] = {}
        self._conversations: dict[bytes, tuple[list[int], tuple]] = {}  # conversation_ids' memo
        # the family's renderer where it is not the model's chat template (openai-harmony, DeepSeek-V3.2's encoder);
        # None: the template, rendered here with the tool sets and encodings cached
        renderer = prompt_renderer(profile.spec)
        self._own = None if renderer.uses_template else renderer

    def preamble_bytes(self, messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None) -> int:
        """Bytes the renderer writes before the first turn on its own (harmony: its system and developer
        messages); 0 for a template, whose preamble belongs to the first message."""
        if self._own is None or self._own.preamble_ids is None:
            return 0
        ids = self._own.preamble_ids(messages, tools, kwargs, self.profile, self.tokenizer)
        return len(self.tokenizer.decode_bytes(ids))

    def __call__(self, sample: GoldenSample) -> str | PromptDivergence:
        golden = sample.prompt_ids
        if golden is None or not sample.messages:
            return PROMPT_UNCHECKED
        if self.render is not None:
            rendered = self.render(sample.messages, sample.tools, sample.chat_template_kwargs)
        else:
            rendered = self.conversation_ids(sample.messages, sample.tools, sample.chat_template_kwargs)
        if rendered == golden:
            return PROMPT_EXACT
        return diagnose_prompt(self, sample, rendered)

    def conversation_ids(self, messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None) -> list[int]:
        """``ids`` with the generation prompt, rendered and encoded once per distinct conversation: the samples
        of one prompt (n completions of it, a dataset sampled several times) share it. Distinct means equal as
        JSON, byte for byte (types, key order, every value: ``1``, ``1.0`` and ``true`` differ) and equal as
        Python values (which tells a NaN from a null, both written ``null``): two such conversations are the
        same input to the template. The caller compares the ids with each sample's own ``prompt_ids``."""
        key = _conversation_key(messages, tools, kwargs)
        if key is not None:
            found = self._conversations.get(key)
            if found is not None and found[1] == (messages, tools, kwargs):
                return found[0]
        ids = self.ids(messages, tools, kwargs)
        if key is not None:
            if len(self._conversations) >= _CACHE_LIMIT:
                self._conversations.clear()
            self._conversations[key] = (ids, (messages, tools, kwargs))
        return ids

    def inputs(self, tools: Sequence | None, kwargs: Mapping[str, Any] | None) -> Prepared:
        """``template_inputs``, prepared for the template (``render.prepare``), once per distinct tool set and
        template variables."""
        import orjson

        key = (orjson.dumps(tools) if tools is not None else b"", orjson.dumps(kwargs) if kwargs is not None else b"")
        found = self._inputs.get(key)
        if found is None or found[1] != (tools, kwargs):  # equal as JSON and as values (a NaN and a null: not)
            if len(self._inputs) >= _CACHE_LIMIT:
                self._inputs.clear()
            found = self._inputs[key] = (prepare(*template_inputs(tools, self.profile, kwargs), self.tokenizer), (tools, kwargs))
        return found[0]

    def text(self, messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None,
             add_generation_prompt: bool = True) -> str:
        """The prompt text the model's template renders (another renderer: its decoded ids)."""
        if self._own is not None:
            return self.tokenizer.decode(self.ids(messages, tools, kwargs, add_generation_prompt))
        check_messages(messages)
        return render_with(messages, self.inputs(tools, kwargs), self.tokenizer, add_generation_prompt)

    def ids(self, messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None,
            add_generation_prompt: bool = True) -> list[int]:
        """The prompt ids an engine feeds the model for this conversation."""
        if self._own is not None:
            return self._own.ids(messages, tools, kwargs, self.profile, self.tokenizer, add_generation_prompt)
        if self._encoder is None:
            self._encoder = _Encoder(self.tokenizer)
        return self._encoder(self.text(messages, tools, kwargs, add_generation_prompt))


def _conversation_key(messages: Any, tools: Any, kwargs: Any) -> bytes | None:
    """The conversation as compact JSON (``conversation_ids``' memo key), or None where orjson cannot write it."""
    import orjson

    try:
        return orjson.dumps((messages, tools, kwargs))
    except TypeError:  # (orjson's JSONEncodeError): a key not a string, an integer past 64 bits
        return None


# ------------------------------------------------------------------------------------------
# Diagnosis: which segment, which class
# ------------------------------------------------------------------------------------------
def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # the longest equal prefix, by halving (bytes compare in C)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _segment(judge: PromptJudge, sample: GoldenSample, at: int, full: bytes) -> tuple[str, str]:
    """(segment name, kind) of the byte offset ``at`` of the rendered prompt ``full``."""
    messages, tools, kwargs = sample.messages, sample.tools, sample.chat_template_kwargs
    if tools:
        try:
            bare = judge.text(messages, None, kwargs).encode()
        except RenderError:
            bare = full
        start = _common_prefix(full, bare)
        end = len(full) - _common_prefix(full[::-1], bare[::-1])
        if start <= at < max(end, start + 1) and bare != full:
            return "tool declarations", "tools"
    try:
        if at < judge.preamble_bytes(messages, tools, kwargs):
            return "system message (the renderer's own: date, reasoning effort, instructions)", "generation"
    except RenderError:
        pass
    last = len(messages) - 1
    for i, message in enumerate(messages):
        try:
            part = judge.text(messages[: i + 1], tools, kwargs, add_generation_prompt=False).encode()
        except RenderError:
            continue
        common = _common_prefix(part, full)
        if at < common or (at == common and common < len(part)):
            role = message.get("role") if isinstance(message, Mapping) else "?"
            if i == 0 and role == "system":
                return "system turn", "system"
            if role == "assistant" and i < last:
                return f"history: assistant turn {i} (messages[{i}])", "history"
            return f"message {i} ({role})", "message"
    return "generation prompt", "generation"


def _strip_ws(data: bytes) -> bytes:
    return re.sub(rb"\s+", b"", data)


def diagnose_prompt(judge: PromptJudge, sample: GoldenSample, rendered: Sequence[int]) -> PromptDivergence:
    """Where and why ``rendered`` (the ids judge renders for ``sample``) leaves its golden prompt_ids."""
    tok = judge.tokenizer
    golden = sample.prompt_ids
    n = next((i for i, (a, b) in enumerate(zip(golden, rendered)) if a != b), min(len(golden), len(rendered)))
    outside = [i for i in golden if not tok.is_valid_id(i)]  # ids outside the vocabulary (bad input, shown as such)
    gbytes = b"" if outside else tok.decode_bytes(golden)
    rbytes = tok.decode_bytes(rendered)
    at = len(tok.decode_bytes(list(rendered[:n])))
    segment, kind = _segment(judge, sample, at, rbytes)
    specials = set(tok.special_tokens.values())
    if kind == "tools":
        cls = TOOL_DECLARATIONS
    elif kind == "history":
        cls = HISTORY
    elif kind == "generation":
        cls = TEMPLATE_VARIABLE
    elif gbytes != rbytes and _strip_ws(gbytes) == _strip_ws(rbytes):
        cls = WHITESPACE
    elif outside or [i for i in golden if i in specials] != [i for i in rendered if i in specials]:
        cls = SPECIAL_TOKEN_ID
    else:
        cls = TEMPLATE_TEXT

    def window(ids: Sequence[int]) -> tuple[tuple[int, ...], tuple[str, ...]]:
        part = tuple(ids[max(0, n - WINDOW): n + WINDOW + 1])
        return part, tuple(tok.token_text(i) if tok.is_valid_id(i) else "(outside the vocabulary)" for i in part)

    gw, gt = window(golden)
    rw, rt = window(rendered)
    return PromptDivergence(cls, segment, n, len(golden), len(rendered), gw, rw, gt, rt)

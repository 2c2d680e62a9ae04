"""The trainers' own preprocessing, judged: are the ids a trainer trains on the ids the model generated?

A drafter trainer re-renders each regenerated conversation through a chat template of its own and
trains on the loss-masked span. ``--tokfidelity-trainer=specforge:TEMPLATE`` judges SpecForge's
``preprocess_conversations`` with a template from its registry: each sample's conversation is its
``messages`` plus the assistant message the view returns; it passes when the last loss-masked span is
the engine's output ids and the ids before it are the engine's prompt ids. Each difference gets a
named class with advice (``CLASSES``, ``ADVICE``), and the output side tokfidelity's own diagnosis. SpecForge's
tokenizer renders as the dataset's engine did (``load_trainer``: the folder's template, one kept apart from it, or
DeepSeek-V3.2's encoder as its ``apply_chat_template``), so that what is judged is SpecForge's own preprocessing.

The only module touching SpecForge (and its transformers tokenizer, loaded with
``trust_remote_code=False`` from a folder whose config names no code of its own; for a folder that names its
own class, as Kimi's does, a copy of that class the user names, run only when its sha256 is pinned in
``PINNED_CLASSES``). ``--tokfidelity-trainer=speculators:ENDPOINT`` judges speculators' own data preparation,
which gets every id from the vLLM server at ENDPOINT (``speculators_adapter``, the module touching speculators),
with the same classes.
"""

from __future__ import annotations

import re
from pathlib import Path
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import TokfidelityError
from .speculators_adapter import NoTrainingRow

__all__ = ["Trainer", "TrainerError", "CLASSES", "ADVICE", "trainer_name", "load_trainer", "judge_with_trainer", "classify",
           "CLASS_PREFIX", "api_messages"]

SPECFORGE = "specforge"
SPECULATORS = "speculators"
SPECULATORS_NEEDS_SERVER = (
    "speculators needs a running vLLM server: its data preparation (speculators.data_generation.preprocessing) gets "
    "every id and the loss-mask boundary from the server's /v1/chat/completions/render, with no tokenizer or "
    "template path of its own; give its address, --tokfidelity-trainer=speculators:http://HOST:PORT (docs/trainers.md)")
CLASS_PREFIX = "trainer:"  # a trainer divergence's class among a verdict's classes
SYSTEM_PROMPT_ADDED = "system-prompt-added"
SYSTEM_PROMPT_DROPPED = "system-prompt-dropped"
EMPTY_REASONING_ADDED = "empty-reasoning-added"
REASONING_DROPPED = "reasoning-dropped"
STOP_OUTSIDE_MASK = "stop-token-outside-mask"
STOP_ADDED = "stop-token-added"
MASK_OFF_BY_N = "mask-off-by-n"
TOOL_CALL_RERENDERED = "tool-call-re-rendered"
TEMPLATE_HEADER_WRONG = "template-header-wrong"
PROMPT_WHITESPACE = "prompt-whitespace"
NO_TRAINING_ROW = "no-training-row"
RETOKENIZED = "re-tokenized"
OTHER = "other"
CLASSES = (SYSTEM_PROMPT_ADDED, SYSTEM_PROMPT_DROPPED, EMPTY_REASONING_ADDED, REASONING_DROPPED, STOP_OUTSIDE_MASK,
           STOP_ADDED, MASK_OFF_BY_N, TOOL_CALL_RERENDERED, TEMPLATE_HEADER_WRONG, PROMPT_WHITESPACE, RETOKENIZED,
           NO_TRAINING_ROW, OTHER)
ADVICE = {
    SYSTEM_PROMPT_ADDED: "the trainer's template adds a system prompt the engine never saw (or writes its own in "
    "place of the engine's): set the template's system_prompt to None, or train on the prompt the engine rendered",
    SYSTEM_PROMPT_DROPPED: "what the engine's prompt held before the first user turn (a system message, the tool "
    "declarations) is missing from the trainer's: the drafter trains without the context the model answered in; "
    "give the trainer a template that renders the system message and tools",
    EMPTY_REASONING_ADDED: "the template writes an empty <think></think> block where the model wrote none: the "
    "drafter learns to emit it; use a template that leaves an answer without reasoning as it is",
    REASONING_DROPPED: "the model's reasoning is missing from the trained span: keep reasoning_content in the "
    "conversation and use a thinking template",
    STOP_OUTSIDE_MASK: "the stop token the model generated is not in the loss mask: the drafter never learns to stop",
    STOP_ADDED: "the trained span ends with a stop token the model never generated (its answer was cut at the token "
    "limit, and the template closes every turn): the drafter learns to stop where the model went on; keep cut answers "
    "out of the training set, or train on the engine's ids",
    MASK_OFF_BY_N: "the loss mask starts or ends N tokens away from what the model generated (e.g. the template's "
    "newline after the end-of-turn token, a token the model never generated, is trained on)",
    TOOL_CALL_RERENDERED: "the tool calls are re-rendered by the template (other JSON spacing or key order, other "
    "framing) instead of the text the model wrote (in the trained span, or an earlier turn's in the prompt)",
    TEMPLATE_HEADER_WRONG: "the ids before the span end differently from the engine's prompt (or the loss mask "
    "starts with the assistant header the engine's prompt ended with): the assistant header "
    "or generation prompt of the trainer's template is not the model's (or, at an earlier assistant turn, its think "
    "block is written for another thinking mode)",
    PROMPT_WHITESPACE: "the ids before the span differ from the engine's prompt only in whitespace: the template "
    "renders otherwise than for the engine's request (a chat-template argument the request set, such as thinking, "
    "left undefined: DeepSeek-V3.1's template writes spaces for each one undefined); pass the request's "
    "chat_template_kwargs to the trainer's template",
    RETOKENIZED: "the same text, other ids: the trainer encodes the text again, so the engine's own (non-canonical) "
    "split is lost; train on the engine's ids",
    NO_TRAINING_ROW: "the trainer made no training row of the model's answer (its preprocessing skipped the "
    "conversation: a render it could not make, a template whose renders do not extend each other, nothing left "
    "to train on; or raised on it, which stops the run); the drafter never sees this answer",
    OTHER: "the trained ids differ from the engine's in another way: compare the windows below",
}


class TrainerError(TokfidelityError, ValueError):
    """A trainer spec that names no trainer or template, or a tokenizer the trainer cannot load."""


@dataclass(frozen=True)
class Trainer:
    """``build(messages, tools, assistant message) -> (input_ids, loss_mask)``, as the trainer makes them."""

    name: str  # "specforge 0.2.0:qwen3-thinking"
    build: Callable[[Sequence[Mapping], Sequence | None, Mapping], tuple[list[int], list[int]]]
    rendered_by: str = ""  # what the trainer's tokenizer was given to render as the engine did ("": its own files)

    def judge(self, judge, sample):
        """The verdict on ``sample`` under this preprocessing (``judge``: the fidelity.Judge holding it, whose
        tokenizer, profile and view it reads): fidelity.py hands the sample here, and this module reads it."""
        return judge_with_trainer(judge, sample)


def _templates() -> list[str]:
    from specforge.data.template import TEMPLATE_REGISTRY

    return TEMPLATE_REGISTRY.get_all_template_names()


def trainer_name(spec: str, field: str = "--tokfidelity-trainer") -> str:
    """The name a record gives the trainer ``spec`` names, with its version; a TrainerError when it names none."""
    kind, _, template = spec.partition(":")
    if kind == SPECULATORS:
        if not template:
            raise TrainerError(SPECULATORS_NEEDS_SERVER, field=field)
        from .speculators_adapter import speculators_name

        try:
            return speculators_name(template)
        except ValueError as e:
            raise TrainerError(str(e), field=field) from None
    if kind != SPECFORGE or not template:
        raise TrainerError(f"expected specforge:TEMPLATE (SpecForge's chat templates) or speculators:http://HOST:PORT, "
                           f"got {spec!r}", field=field)
    try:
        from importlib.metadata import version

        names = _templates()
    except ImportError as e:
        raise TrainerError(f"SpecForge is not installed ({e}): pip install specforge --no-deps", field=field) from None
    if template not in names:
        raise TrainerError(f"SpecForge has no template {template!r}; its templates: {', '.join(names)}", field=field)
    return f"{SPECFORGE} {version('specforge')}:{template}"


def load_trainer(spec: str, tokenizer_location: str, template_kwargs: Mapping[str, Any] | None = None,
                 profile: str | None = None, *, model_template: bool = True) -> Trainer:
    """The trainer ``spec`` names, over the transformers tokenizer in ``tokenizer_location``; ``template_kwargs``
    go to the chat template as SpecForge's per-conversation keyword arguments (none: its defaults).

    ``profile`` (the dataset's) says how the engine rendered its prompts, and the tokenizer SpecForge gets
    renders the same way (``model_template``; False: the tokenizer files alone, as ``AutoTokenizer`` loads
    them): a folder whose files hold no chat template gets the one tokfidelity renders its prompts with
    (``pipeline.core.render.chat_template``, e.g. DeepSeek-V3.1's kept beside its folder), and a model whose
    prompts come from its own Python encoder (DeepSeek-V3.2, no jinja template) gets that encoder as its
    ``apply_chat_template`` (``_attach_dsv32_encoder``). Without either SpecForge renders with its own
    fallback (bos, then each turn between the template's headers)."""
    name = trainer_name(spec)
    if spec.startswith(SPECULATORS + ":"):
        return _speculators_trainer(name, spec.partition(":")[2], tokenizer_location)
    from .model_files import FolderCodeRefused, refuse_folder_code

    tokenizer = None
    try:
        if Path(tokenizer_location).is_dir():
            refuse_folder_code(tokenizer_location)
    except FolderCodeRefused as e:
        tokenizer = pinned_class_tokenizer(Path(tokenizer_location), e.message)
    from specforge.data.preprocessing import preprocess_conversations
    from specforge.data.template import TEMPLATE_REGISTRY

    if tokenizer is None:
        tokenizer = _transformers_tokenizer(tokenizer_location)
    rendered = _engine_rendering(tokenizer, tokenizer_location, profile, model_template)
    template = TEMPLATE_REGISTRY.get(spec.partition(":")[2])

    def build(messages, tools, message):
        conversation = [*messages, {"role": "assistant", **message}]
        extra = {k: [v] for k, v in (template_kwargs or {}).items()}  # one value per conversation
        try:
            out = preprocess_conversations(tokenizer, [conversation], template, max_length=1 << 20,
                                           tools=[list(tools or [])], **extra)
        except EncoderRefused as e:  # not a ValueError: SpecForge does not fall back, its preprocessing stops
            raise NoTrainingRow(f"SpecForge's preprocessing raised {type(e).__name__}: {e} (the model's encoder "
                                f"refuses the conversation as SpecForge renders it; the whole run stops there)") from None
        return out["input_ids"][0][0].tolist(), out["loss_mask"][0][0].tolist()

    suffix = "".join(f" {k}={v!r}" for k, v in (template_kwargs or {}).items())
    if not model_template and getattr(tokenizer, "chat_template", None) is None:
        suffix += " (no chat template: SpecForge's fallback rendering)"
    return Trainer(name + suffix, build, rendered)


class EncoderRefused(Exception):  # noqa: N818 - as the model's DS32EncodingError, an Exception, not a ValueError
    """DeepSeek-V3.2's encoder refuses a conversation (its encoder raises ``DS32EncodingError``)."""


def _engine_rendering(tokenizer, tokenizer_location: str, profile: str | None, model_template: bool) -> str:
    """Make ``tokenizer`` render prompts as the dataset's engine rendered them (see ``load_trainer``); what
    was given, for the table ("" where the tokenizer files render so already). Either way a tokenizer whose
    files name no bos or eos token (a folder holding only tokenizer.json) gets the profile's, as the model's
    tokenizer_config.json names them."""
    from .families import specs

    spec = next((s for s in specs() if s.name == profile), None)
    for key, text in (("bos_token", spec and spec.prompt_markers.get("bos")), ("eos_token", spec and spec.markers.get("stop"))):
        if text and getattr(tokenizer, key, None) is None:
            setattr(tokenizer, key, text)
    renderer = spec.prompt_renderer if spec is not None else "template"
    if not model_template:
        return ""
    if renderer == "dsv32":
        _attach_dsv32_encoder(tokenizer)
        return "the model's encoder"
    if renderer != "template" or getattr(tokenizer, "chat_template", None):
        return ""
    from .render import RenderError, chat_template, special_token_variables
    from .tokenizer import load_tokenizer

    ours = load_tokenizer(tokenizer_location)
    try:
        text, where = chat_template(ours)
    except RenderError:
        return ""  # none anywhere: SpecForge's fallback rendering, as with the model's files alone
    tokenizer.chat_template = text
    for key, value in special_token_variables(ours).items():
        if getattr(tokenizer, key, None) is None:
            setattr(tokenizer, key, value)
    return f"chat template {Path(where).resolve().name if Path(where).exists() else where}"


def _attach_dsv32_encoder(tokenizer) -> None:
    """DeepSeek-V3.2 ships no jinja template but a Python encoder (``encoding_dsv32.encode_messages``): give
    ``tokenizer`` an ``apply_chat_template`` that returns its text (tokfidelity's restatement,
    ``dsv32_prompts``, the dataset's prompts' renderer), called as SGLang calls it (tools in a first system
    message, past reasoning from ``reasoning_content``), thinking on when the call asks for it (``thinking`` or
    ``enable_thinking``, as vLLM's ``deepseek_v32`` tokenizer reads them). Where the encoder refuses the
    conversation it raises ``EncoderRefused`` (the model's ``DS32EncodingError`` is no ValueError either)."""
    from .dsv32_prompts import dsv32_prompt_text
    from .render import RenderError

    def apply_chat_template(messages, tools=None, tokenize=True, add_generation_prompt=False, **kwargs):
        thinking = bool(kwargs.get("thinking") or kwargs.get("enable_thinking"))
        try:
            text = dsv32_prompt_text(messages, tools, {"thinking": thinking}, "sglang")
        except RenderError as e:
            raise EncoderRefused(e.message) from None
        return tokenizer.encode(text, add_special_tokens=False) if tokenize else text

    tokenizer.apply_chat_template = apply_chat_template


def _speculators_trainer(name: str, endpoint: str, tokenizer_location: str) -> Trainer:
    """speculators' preparation through the server at ``endpoint``, checked to serve the dataset's tokenizer."""
    from .speculators_adapter import PROBE, speculators_build
    from .tokenizer import load_tokenizer

    try:
        probe = load_tokenizer(tokenizer_location).encode(PROBE)
        return Trainer(name, speculators_build(endpoint, probe))
    except ValueError as e:
        raise TrainerError(str(e), field="--tokfidelity-trainer") from None


def _transformers_tokenizer(tokenizer_location: str):
    from transformers import AutoTokenizer

    from .model_files import transformers_source
    from .tokenizer.hf_files import derived_hf_base

    lender = derived_hf_base(Path(tokenizer_location)) if Path(tokenizer_location).is_dir() else None
    try:
        if lender is not None:  # Qwen3-Coder: its config and template here, the vocabulary it lends beside it
            return _derived_tokenizer(Path(tokenizer_location), lender)
        with transformers_source(tokenizer_location) as (folder, kwargs):  # a GGUF file alone, or a checked folder
            return AutoTokenizer.from_pretrained(folder, trust_remote_code=False, **kwargs)
    except (OSError, ValueError) as e:  # not a transformers tokenizer (a bare tiktoken encoding)
        raise TrainerError(f"SpecForge needs a transformers tokenizer; transformers cannot load one from "
                           f"{tokenizer_location} ({type(e).__name__}: {str(e).splitlines()[0][:160]})", field="tokenizer") from None


def _derived_tokenizer(folder: Path, lender: Path):
    """The model's tokenizer as its repository holds it: ``folder``'s files beside the vocabulary ``lender``
    lends it (linked into one folder, as the model repository has them together)."""
    import tempfile

    from transformers import AutoTokenizer

    from .model_files import refuse_folder_code

    refuse_folder_code(folder)
    with tempfile.TemporaryDirectory() as tmp:
        for source in (lender, folder):
            for f in source.iterdir():
                if f.is_file():
                    (Path(tmp) / f.name).unlink(missing_ok=True)
                    (Path(tmp) / f.name).symlink_to(f.resolve())
        return AutoTokenizer.from_pretrained(tmp, trust_remote_code=False)


# The model repositories' own tokenizer classes a trainer may run: each file by its sha256, loaded as a module
# by path (never through trust_remote_code, never from the model folder's auto_map). The file is the user's
# copy, named by TOKENIZER_CLASS_ENV; its text is never edited (the sha256 is the check).
TOKENIZER_CLASS_ENV = "TOKFIDELITY_TOKENIZER_CLASS"
PINNED_CLASSES = {  # sha256 -> (file, class): Moonshot's Kimi tokenizer class (K2 generation)
    "30ee74ac117c1478905dd4e7e52d17fbb286789ad451163d722485ec98cd1280": ("tokenization_kimi.py", "TikTokenTokenizer"),
}
_CONFIG_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "additional_special_tokens", "added_tokens_decoder")


def pinned_class_tokenizer(folder: Path, refused: str):
    """The tokenizer of a folder whose config names its own class, built by a pinned copy of that class.

    ``TOKFIDELITY_TOKENIZER_CLASS`` names the file; its sha256 must be one of ``PINNED_CLASSES``. The class is
    built as ``from_pretrained`` would build it: the folder's vocabulary file, its special tokens from
    ``tokenizer_config.json``, its ``chat_template.jinja``."""
    import hashlib
    import importlib.util
    import json
    import os
    import sys

    path = os.environ.get(TOKENIZER_CLASS_ENV)
    if not path:
        raise TrainerError(f"SpecForge needs a transformers tokenizer; {refused}. To run the model repository's own "
                           f"class instead, set {TOKENIZER_CLASS_ENV} to its file (sha256-pinned: "
                           f"{', '.join(f for f, _ in PINNED_CLASSES.values())})", field="tokenizer")
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        raise TrainerError(f"{path}: cannot read it ({e.strerror})", field=TOKENIZER_CLASS_ENV) from None
    if digest not in PINNED_CLASSES:
        raise TrainerError(f"{path}: sha256 {digest} is none of the pinned tokenizer classes; refusing to run it",
                           field=TOKENIZER_CLASS_ENV)
    _, class_name = PINNED_CLASSES[digest]
    import transformers.tokenization_python as slow  # transformers 5 moved tokenization_utils; the file imports the old name
    import transformers.models.gpt2.tokenization_gpt2 as gpt2
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    sys.modules.setdefault("transformers.tokenization_utils", slow)
    if not hasattr(gpt2, "bytes_to_unicode"):  # moved in transformers 5 as well
        gpt2.bytes_to_unicode = bytes_to_unicode
    spec = importlib.util.spec_from_file_location(f"tokfidelity_pinned_{digest[:12]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    kwargs = {k: config[k] for k in _CONFIG_KEYS if k in config}
    fields = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")
    if "added_tokens_decoder" in kwargs:  # as from_pretrained hands them over: int ids, AddedToken values
        kwargs["added_tokens_decoder"] = {int(i): AddedToken(**{k: v for k, v in t.items() if k in fields})
                                          for i, t in kwargs["added_tokens_decoder"].items()}
    tokenizer = getattr(module, class_name)(vocab_file=str(folder / "tiktoken.model"), **kwargs)
    if (folder / "chat_template.jinja").is_file():
        tokenizer.chat_template = (folder / "chat_template.jinja").read_text(encoding="utf-8")
    return tokenizer


def assistant_message(response: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message a regenerated conversation stores: the view's text fields as returned."""
    message: dict[str, Any] = {"content": response.get("content") or ""}
    if response.get("reasoning"):
        message["reasoning_content"] = response["reasoning"]
    if response.get("tool_calls"):
        message["tool_calls"] = [dict(c) for c in response["tool_calls"]]
    return message


def api_messages(messages: Sequence[Mapping]) -> list[dict]:
    """The conversation as one regenerated through an OpenAI-style API holds it: each earlier tool call's
    arguments a JSON string (a dataset may store them as objects, the form chat templates take; the engines
    parse the string back into that object before rendering, and vLLM's endpoints refuse any other form)."""
    out = []
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, Mapping) else None
        if calls and any(not isinstance(c.get("function", {}).get("arguments", ""), str) for c in calls):
            import json

            m = {**m, "tool_calls": [{**c, "function": {**c["function"], "arguments": json.dumps(
                c["function"]["arguments"], ensure_ascii=False)}} if not isinstance(c["function"].get("arguments"), str)
                else c for c in calls]}
        out.append(m)
    return out


def last_span(ids: Sequence[int], mask: Sequence[int]) -> tuple[list[int], list[int]]:
    """(the ids before the last loss-masked span, that span); ([], []) with nothing masked."""
    end = max((i + 1 for i, m in enumerate(mask) if m), default=0)
    start = end
    while start > 0 and mask[start - 1]:
        start -= 1
    return list(ids[:start]), list(ids[start:end])


def _contains(big: Sequence[int], small: Sequence[int]) -> int | None:
    """Where ``small`` starts inside ``big`` (None: nowhere)."""
    n = len(small)
    return next((i for i in range(len(big) - n + 1) if list(big[i:i + n]) == list(small)), None) if n else None


def _output_classes(golden: Sequence[int], span: Sequence[int], tokenizer, profile) -> list[str]:
    out: list[str] = []
    gtext, stext = tokenizer.decode(golden), tokenizer.decode(span)
    think_end = profile.ids.get("think_end")
    reasoning = ""
    if think_end is not None and think_end in golden:
        reasoning = tokenizer.decode(golden[: golden.index(think_end)]).replace("<think>", "").strip()
    header = profile.spec.prompt_markers.get("assistant")
    body = stext.lstrip()
    if header and body.startswith(header) and not gtext.lstrip().startswith(header):
        out.append(TEMPLATE_HEADER_WRONG)  # the assistant header (the engine's prompt ended with it) in the mask
        body = body[len(header):]
    # an empty block: <think></think>, or (DeepSeek-V3.1's non-thinking mode) a </think> opening the answer
    empty = re.compile(r"<think>\s*</think>|^\s*</think>")
    if empty.search(body) and not empty.search(gtext) and not reasoning:  # an empty block in place of reasoning: dropped
        out.append(EMPTY_REASONING_ADDED)
    if reasoning and reasoning not in stext:
        out.append(REASONING_DROPPED)
    stop = profile.stop_ids
    if golden and golden[-1] in stop and golden[-1] not in span:  # missing, or another stop token in its place
        out.append(STOP_OUTSIDE_MASK)
    if golden and golden[-1] not in stop and set(stop).intersection(span[-2:]):  # a cut answer, closed by the template
        out.append(STOP_ADDED)  # (its end-of-turn: the stop token, perhaps a newline after it)
    if len(span) != len(golden) and (_contains(span, golden) is not None or _contains(golden, span) is not None):
        out.append(MASK_OFF_BY_N)
    calls = {i for r, i in profile.ids.items() if r in ("tool_call_begin", "tool_calls_begin")}
    first = next((k for k, i in enumerate(golden) if i in calls), None)
    if first is not None:
        tail = tokenizer.decode([i for i in golden[first:] if i not in stop]).strip()
    else:
        marker = next((m for m in ("<tool_call>", "to=functions.") if m in gtext), None)
        tail = gtext[gtext.find(marker):].strip() if marker else _unmarked_calls(golden, tokenizer, profile)
    if tail and tail not in stext and not any(_strip_stop(tail, t) in stext for t in profile.spec.stop_texts):
        out.append(TOOL_CALL_RERENDERED)
    elif tail and tail in stext and _separator_rewritten(gtext[:gtext.find(tail)], stext[:stext.find(tail)]):
        out.append(TOOL_CALL_RERENDERED)  # the calls as written, the template's own whitespace before them
    if not out and gtext != stext and _extends(gtext, stext):
        out.append(MASK_OFF_BY_N)  # the mask takes more (or less) text: the template's, before or after the answer
        if list(tokenizer.encode(gtext)) != list(golden):
            out.insert(0, RETOKENIZED)  # and the engine's own split of the answer is lost
    if not out:
        out.append(RETOKENIZED if gtext == stext else OTHER)
    return out


def _offset(golden: Sequence[int], span: Sequence[int], tokenizer) -> str:
    """How far the mask is off: N tokens where one side holds the other, else the text it adds or leaves out."""
    if _contains(span, golden) is not None or _contains(golden, span) is not None:
        return f"{len(span) - len(golden):+d} tokens"
    gtext, stext = tokenizer.decode(golden), tokenizer.decode(span)
    longer, shorter = (stext, gtext) if len(stext) > len(gtext) else (gtext, stext)
    extra = longer[len(shorter):] if longer.startswith(shorter) else longer[: len(longer) - len(shorter)]
    return f"the text {extra!r} {'added' if longer is stext else 'left out'}"


def _extends(gtext: str, stext: str) -> bool:
    """One text is the other with more text before or after it."""
    longer, shorter = (stext, gtext) if len(stext) > len(gtext) else (gtext, stext)
    return longer.startswith(shorter) or longer.endswith(shorter)


def _separator_rewritten(golden_before: str, span_before: str) -> bool:
    """The text before the tool calls differs only in the whitespace right before them (the template writes its
    own separator between the content and the calls)."""
    return golden_before != span_before and golden_before.rstrip() == span_before.rstrip()


def _unmarked_calls(golden: Sequence[int], tokenizer, profile) -> str:
    """The text of tool calls no marker opens (Llama 3.1's JSON call, the whole output), from the first call's
    name on, as the profile's layout finds them; "" without calls."""
    from .layout import split_output

    calls = split_output(golden, profile).tool_calls
    if not calls:
        return ""
    return tokenizer.decode([i for i in golden[calls[0].id.start:] if i not in profile.stop_ids]).strip()


def _strip_stop(text: str, stop: str) -> str:
    return text[: -len(stop)].strip() if text.endswith(stop) else text


def _prompt_classes(golden: Sequence[int], before: Sequence[int], tokenizer, profile) -> list[str]:
    """A prompt that differs only in whitespace, a system prompt added where the engine's prompt had none (or had
    only its tool declarations), a header that differs near the end (the assistant header, the generation
    prompt), else another difference. Compared as text without whitespace, so that whitespace a template writes
    otherwise (for a variable the engine's request set and the trainer leaves undefined) does not hide what
    differs after it."""
    gtext, btext = (re.sub(r"\s+", "", tokenizer.decode(ids)) for ids in (golden, before))
    if gtext == btext:  # whitespace only: the header's own (its newline) at the end, else the template's elsewhere
        k = next((i for i, (a, b) in enumerate(zip(golden, before)) if a != b), min(len(golden), len(before)))
        return [TEMPLATE_HEADER_WRONG if k >= min(len(golden), len(before)) - 8 else PROMPT_WHITESPACE]
    n = next((i for i, (a, b) in enumerate(zip(gtext, btext)) if a != b), min(len(gtext), len(btext)))
    marker = _user_marker(tokenizer, profile)
    before_user = marker not in gtext[:n] if marker else "user" not in gtext[:n].lower()
    if before_user and marker and _dropped_before(gtext, btext, marker):
        return [SYSTEM_PROMPT_DROPPED]  # the trainer's prompt reaches the first user turn with less before it
    if before_user and (marker or "system" in btext[: n + 24].lower()):
        return [SYSTEM_PROMPT_ADDED]  # the difference is in what comes before the first user turn
    if n >= len(gtext) - 24 or n >= len(btext) - 24:  # within the last few tokens' text
        return [TEMPLATE_HEADER_WRONG]
    if any(t.startswith(("<think>", "</think>")) for t in (gtext[n:], btext[n:])):
        return [TEMPLATE_HEADER_WRONG]  # an earlier turn's generation prompt: its think block, in another mode
    if _inside_call(gtext, n, profile):
        return [TOOL_CALL_RERENDERED]  # an earlier turn's tool call, written otherwise (its arguments, say)
    return [OTHER]


def _inside_call(text: str, n: int, profile) -> bool:
    """Is position ``n`` of ``text`` inside a tool call (after a call's opening marker, before its end)?"""
    markers = profile.spec.markers
    opens = [markers[r] for r in ("tool_calls_begin", "tool_call_begin") if r in markers] + ["<tool_call>"]
    ends = [markers[r] for r in ("tool_calls_end",) if r in markers] + list(profile.spec.stop_texts) + ["</tool_call>"]
    last_open = max(text.rfind(t, 0, n) for t in opens)
    return last_open >= 0 and last_open > max(text.rfind(t, 0, n) for t in ends)


def _user_marker(tokenizer, profile) -> str:
    """The text opening a user turn: the profile's user marker, or its header markers around ``user`` (Llama 3's
    ``<|start_header_id|>user<|end_header_id|>``); "" where the profile names neither."""
    user = profile.ids.get("prompt.user")
    if user is not None:
        return tokenizer.token_text(user)
    markers = profile.spec.prompt_markers
    if "header_start" in markers and "header_end" in markers:
        return markers["header_start"] + "user" + markers["header_end"]
    return ""


def _dropped_before(gtext: str, btext: str, user: str) -> bool:
    """The text before the first user marker is, in the trainer's prompt, the engine's with parts left out (and
    nothing of its own added)."""
    from difflib import SequenceMatcher

    g, b = gtext.split(user, 1)[0], btext.split(user, 1)[0]
    if user not in btext or len(b) >= len(g):
        return False
    return {op[0] for op in SequenceMatcher(None, g, b, autojunk=False).get_opcodes()} <= {"equal", "delete"}


def classify(golden_output: Sequence[int], golden_prompt: Sequence[int] | None, before: Sequence[int], span: Sequence[int],
             tokenizer, profile) -> tuple[list[str], list[str]]:
    """(output classes, prompt classes) of a trainer's sequence against the engine's ids (empty: equal)."""
    output = [] if list(span) == list(golden_output) else _output_classes(list(golden_output), list(span), tokenizer, profile)
    prompt = [] if golden_prompt is None or list(before) == list(golden_prompt) else _prompt_classes(golden_prompt, before, tokenizer, profile)
    return output, prompt


def _window(ids: Sequence[int], at: int, tokenizer) -> str:
    return " ".join(f"{i}:{tokenizer.token_text(i)!r}" for i in ids[max(0, at - 4): at + 5]) or "(end)"


def judge_with_trainer(judge, sample):
    """The verdict on one golden sample under ``judge.trainer`` (a fidelity.Judge): output and prompt side."""
    from .diagnose import diagnose
    from .fidelity import DIVERGENT, EXACT, Verdict
    from .prompt_check import PROMPT_EXACT, PROMPT_UNCHECKED
    from .views import api_view

    tok, golden = judge.tokenizer, sample.output_ids
    if sample.response is not None:  # a recorded provider response: the message the trainer got
        from .own_code import flat_message

        response = flat_message(sample.response)
    else:
        response = api_view(golden, sample.finish_reason, judge.profile, tok, judge.view)
    try:
        ids, mask = judge.trainer.build(api_messages(sample.messages or []), sample.tools, assistant_message(response))
    except NoTrainingRow as e:  # nothing to compare: the answer is not trained on at all
        classes = (CLASS_PREFIX + NO_TRAINING_ROW,)
        return Verdict(sample.id, sample.line, DIVERGENT, len(golden), classes=classes, hunks=1,
                       hunks_by_class=dict.fromkeys(classes, 1), signature={"trainer": list(classes)},
                       report=f"trainer {judge.trainer.name}: {NO_TRAINING_ROW}: {ADVICE[NO_TRAINING_ROW]}\n  {e}",
                       prompt=PROMPT_UNCHECKED)
    before, span = last_span(ids, mask)
    checked = sample.prompt_ids is not None and bool(sample.messages)
    output, prompt = classify(golden, sample.prompt_ids if checked else None, before, span, tok, judge.profile)
    prompt_side = (CLASS_PREFIX + prompt[0]) if prompt else PROMPT_EXACT if checked else PROMPT_UNCHECKED
    if not output and not prompt:
        return Verdict(sample.id, sample.line, EXACT, len(golden), prompt=prompt_side)
    lines = [f"trainer {judge.trainer.name}: " + ", ".join(dict.fromkeys(output + prompt))]
    lines += [f"  {c}{f' ({_offset(golden, span, tok)})' if c == MASK_OFF_BY_N else ''}: {ADVICE[c]}"
              for c in dict.fromkeys(output + prompt)]
    if prompt:
        n = next((i for i, (a, b) in enumerate(zip(sample.prompt_ids, before)) if a != b), min(len(before), len(sample.prompt_ids)))
        lines.append(f"prompt side at index {n}: engine {_window(sample.prompt_ids, n, tok)}\n  trainer {_window(before, n, tok)}")
    if output:
        lines.append("output side (the loss-masked span against the engine's output ids):\n"
                     + diagnose(golden, span, tok, profile=judge.profile, finish_reason=sample.finish_reason).render())
    classes = tuple(dict.fromkeys(CLASS_PREFIX + c for c in output + prompt))
    return Verdict(sample.id, sample.line, DIVERGENT, len(golden), classes=classes, hunks=len(classes),
                   hunks_by_class=dict.fromkeys(classes, 1), signature={"trainer": list(classes), "span": span[-8:],
                   "before": before[-8:]}, report="\n".join(lines), prompt=prompt_side)

"""Prompt rendering: a conversation to the prompt ids an engine feeds the model.

An engine (SGLang, vLLM, transformers) calls the model tokenizer's ``apply_chat_template``: the tokenizer
class may pre-process the inputs, transformers renders the model's chat template with them, and the text
is encoded with the model's own tokenizer, every special token allowed. tokfidelity does the same, and
runs no code from a model repository:

* the template is the model's own, from the tokenizer's files (:func:`chat_template`): the file of the
  tokenizer folder a dataset's manifest names (``chat_template``: a folder with no template of its own, or
  several copies; pinned by sha256, checked when the dataset is loaded), else ``chat_template.jinja`` in the
  tokenizer folder, else ``tokenizer_config.json``'s ``chat_template``, else a GGUF file's
  ``tokenizer.chat_template``;
* it is rendered as transformers' ``render_jinja_template`` renders it (what ``apply_chat_template`` calls), byte
  for byte: by MiniJinja where it renders the template identically, else by transformers' own functions
  (:mod:`pipeline.core.chat_renderer` chooses; :mod:`pipeline.core.minijinja_renderer`,
  :mod:`pipeline.core.template_adapter`);
* the pre-processing a tokenizer class does in Python is data on the profile
  (``ProfileSpec.tools_preprocess``, ``ProfileSpec.chat_template_kwargs``), carried out by
  :data:`TOOL_STEPS`. Kimi K2.5: every tool dict deep-sorted by key, then ``tools_ts_str`` written by
  :mod:`pipeline.core.kimi_tools_ts` (left unset where the official encoder raises, so the template
  writes its compact JSON of the sorted tools), and ``thinking=True``, ``preserve_thinking=False``.

No format is hand-written here: the template is the only description of the prompt, so a new model
needs its tokenizer files and, where its tokenizer class pre-processes, a profile entry.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import TokfidelityError
from .pins import sha256_bytes
from .kimi_tools_ts import deep_sort, tools_typescript
from .profiles import Profile
from .chat_renderer import ChatRenderer
from .minijinja_renderer import TemplateRaised
from .template_adapter import Prepared
from .tokenizer import Tokenizer
from .watchdog import TimeLimitExceeded, time_limit

__all__ = ["RenderError", "TemplateMismatch", "TemplateChoice", "use_chat_template", "template_choice",
           "check_messages", "chat_template", "template_pin", "template_digest", "template_source", "render_settings", "special_token_variables", "template_inputs", "render_text", "prepare", "renderer_for", "render_with", "TOOL_STEPS"]


class RenderError(TokfidelityError, ValueError):
    """A conversation that cannot be rendered; ``field`` names the message and field."""

    def __init__(self, field: str, message: str):
        super().__init__(message, field=field)


# ------------------------------------------------------------------------------------------
# The model's own template
# ------------------------------------------------------------------------------------------
SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
_GGUF_SPECIAL_IDS = {"bos_token": "bos", "eos_token": "eos", "unk_token": "unknown", "sep_token": "seperator",
                     "pad_token": "padding", "cls_token": "cls", "mask_token": "mask"}  # tokenizer.ggml.<x>_token_id


@dataclass(frozen=True)
class _TemplateFiles:
    templates: dict[str, str]  # name -> template ("default", and "tool_use" where a config names it)
    where: str
    special_tokens: dict[str, Any]  # bos_token... -> text, or (GGUF) id
    pin: dict[str, str]  # the file the templates were read from -> sha256 of the bytes read (the gate pins it)


def _gguf(path: Path) -> _TemplateFiles | None:
    import gguf

    from .pins import file_sha256

    fields = gguf.GGUFReader(str(path)).fields
    field = fields.get("tokenizer.chat_template")
    if field is None:
        return None
    ids = {}
    for name, key in _GGUF_SPECIAL_IDS.items():
        f = fields.get(f"tokenizer.ggml.{key}_token_id")
        if f is not None:
            ids[name] = int(f.parts[f.data[0]][0])
    return _TemplateFiles({"default": bytes(field.parts[field.data[0]]).decode("utf-8")}, f"{path} (tokenizer.chat_template)", ids,
                          {str(path.resolve()): file_sha256(path)})


def _config(data: bytes) -> tuple[dict[str, str], dict[str, str]]:
    data = json.loads(data)
    value = data.get("chat_template")
    if isinstance(value, str):
        named = {"default": value}
    elif isinstance(value, list):  # named templates, as transformers stores several
        named = {t["name"]: t["template"] for t in value if isinstance(t, Mapping) and "name" in t and "template" in t}
    else:
        named = {}
    special = {}
    for name in SPECIAL_TOKEN_NAMES:
        token = data.get(name)
        token = token.get("content") if isinstance(token, Mapping) else token
        if isinstance(token, str):
            special[name] = token
    return named, special


class TemplateMismatch(TokfidelityError, ValueError):
    """The chat template a dataset's manifest names cannot be read, or is not the one it pins."""


@dataclass(frozen=True)
class TemplateChoice:
    """The chat template a dataset names (its manifest's ``chat_template``), for a tokenizer folder that has none
    of its own or several copies: a file of that folder, pinned by sha256, and the special-token variables
    (``bos_token``...) the template is given where the folder has no ``tokenizer_config.json`` to give them."""

    file: str  # relative to the tokenizer folder
    sha256: str
    special_tokens: tuple[tuple[str, str], ...] = ()
    declared_in: str = ""  # the manifest naming it (errors name it, with the field)

    def read(self, folder: Path) -> _TemplateFiles:
        """The template's files, read now; TemplateMismatch naming the manifest and field when the file cannot
        be read or its bytes are not the ones pinned."""
        path = folder / self.file
        try:
            data = path.read_bytes()
        except OSError as e:
            raise TemplateMismatch(f"the chat template it names, {path}, cannot be read ({e.strerror or type(e).__name__})",
                                   path=self.declared_in or None, field="chat_template.file") from None
        digest = sha256_bytes(data)
        if digest != self.sha256:
            raise TemplateMismatch(
                f"the chat template {path} has sha256 {digest}, the manifest pins {self.sha256}: the dataset's prompts were "
                "rendered with another template. Restore that file, or render the prompts again and pin the new sha256",
                path=self.declared_in or None, field="chat_template.sha256")
        config = folder / "tokenizer_config.json"
        special = dict(self.special_tokens) or (_config(config.read_bytes())[1] if config.is_file() else {})
        return _TemplateFiles({"default": data.decode("utf-8")}, str(path), special, {str(path.resolve()): digest})


# tokenizer folder (resolved) -> the template a dataset chose for it, and its files as read then
_CHOSEN: dict[str, tuple[TemplateChoice, _TemplateFiles]] = {}


def _folder(source: str) -> Path:
    path = Path(source)
    return (path.parent if path.is_file() else path).resolve()


def use_chat_template(tokenizer: Tokenizer, choice: TemplateChoice | None) -> None:
    """Render this tokenizer's prompts with ``choice`` from now on in this process (read and checked now).
    Two datasets naming different templates for one tokenizer folder cannot be judged in one process."""
    if choice is None:
        return
    folder = _folder(tokenizer.source)
    found = _CHOSEN.get(str(folder))
    same = lambda c: (c.file, c.sha256, c.special_tokens)  # noqa: E731
    if found is not None and same(found[0]) != same(choice):
        raise TemplateMismatch(f"names the chat template {choice.file} (sha256 {choice.sha256[:12]}) for {folder}, while "
                               f"{found[0].declared_in} names {found[0].file} (sha256 {found[0].sha256[:12]}) for it: judge "
                               "the two datasets in separate runs", path=choice.declared_in or None, field="chat_template")
    _CHOSEN[str(folder)] = (choice, choice.read(folder))
    _template_files.cache_clear()


def template_choice(manifest) -> TemplateChoice | None:
    """The chat template a golden manifest names (``chat_template``), or None."""
    declared = getattr(manifest, "chat_template", None)
    if not declared:
        return None
    special = tuple(sorted(dict(declared.get("special_tokens") or {}).items()))
    return TemplateChoice(declared["file"], declared["sha256"], special, str(Path(manifest.path) / "manifest.json"))


def _template_files_now(source: str, fresh: bool = False) -> _TemplateFiles:
    path = Path(source)
    tried = []
    if path.is_file() and path.suffix == ".gguf":
        found = _gguf(path)
        if found is not None:
            return found
        tried.append(f"{path} (no tokenizer.chat_template)")
    else:
        folder = path.parent if path.is_file() else path
        chosen = _CHOSEN.get(str(folder.resolve()))
        if chosen is not None:  # a dataset named it: read again (a fresh read sees today's file), else as read then
            return chosen[0].read(folder) if fresh else chosen[1]
        jinja, config = folder / "chat_template.jinja", folder / "tokenizer_config.json"
        config_bytes = config.read_bytes() if config.is_file() else None
        named, special = _config(config_bytes) if config_bytes is not None else ({}, {})
        if jinja.is_file():
            data = jinja.read_bytes()  # the bytes rendered are the bytes pinned
            return _TemplateFiles({"default": data.decode("utf-8")}, str(jinja), special, {str(jinja.resolve()): sha256_bytes(data)})
        if named:
            return _TemplateFiles(named, f"{config} (chat_template)", special, {str(config.resolve()): sha256_bytes(config_bytes)})
        tried += [str(jinja), f"{config} (chat_template)"]
    raise RenderError("chat_template", f"no chat template for the tokenizer from {source}; looked at: {'; '.join(tried)}. "
                      "Put the model's chat_template.jinja beside its tokenizer files, or name the template file in the "
                      "dataset's manifest (chat_template)")


_template_files = functools.cache(_template_files_now)


def chat_template(tokenizer: Tokenizer, tools: Sequence | None = None) -> tuple[str, str]:
    """(template text, where it came from) for this tokenizer, read once per process. A tokenizer_config
    with named templates gives ``tool_use`` when there are tools, else ``default`` (as transformers)."""
    files = _template_files(tokenizer.source)
    name = "tool_use" if tools and "tool_use" in files.templates else "default"
    if name not in files.templates:
        raise RenderError("chat_template", f"{files.where} has templates {sorted(files.templates)} but no 'default'")
    return files.templates[name], files.where if len(files.templates) == 1 else f"{files.where}[{name}]"


def template_pin(tokenizer: Tokenizer) -> dict[str, str]:
    """The file this tokenizer's chat template is read from -> sha256 of the bytes read (once per
    process, so the pin is of what every render in it used); {} when it has none."""
    try:
        return dict(_template_files(tokenizer.source).pin)
    except RenderError:
        return {}


def template_digest(tokenizer: Tokenizer, *, fresh: bool = False) -> str | None:
    """sha256 of the chat template's content as it is rendered: every template the tokenizer's files
    name and the special-token variables it is given. A gate pins this, not a path: the same files at
    another path (another machine, another checkout) give the same digest, and any other file winning
    (a ``chat_template.jinja`` added beside a ``tokenizer_config.json`` that embeds one) gives another.
    None: the tokenizer has no chat template. ``fresh``: read the files now, not as this process first
    read them (a gate check, which must see today's files); an unreadable file raises OSError or ValueError."""
    try:
        files = _template_files_now(tokenizer.source, fresh=True) if fresh else _template_files(tokenizer.source)
    except RenderError:
        return None
    content = {"templates": files.templates, "special_tokens": files.special_tokens}
    return sha256_bytes(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def template_source(tokenizer: Tokenizer) -> str:
    """Where the tokenizer's chat template is read from now (a file, or a file and its field), or why none is."""
    try:
        return _template_files_now(tokenizer.source, fresh=True).where
    except (RenderError, OSError, ValueError) as e:
        return f"no readable chat template ({e})"


def render_settings(spec) -> dict[str, Any]:
    """What a render depends on besides the template: a profile's (spec's) template variables and tool steps."""
    return {"chat_template_kwargs": dict(spec.chat_template_kwargs), "tools_preprocess": list(spec.tools_preprocess)}


def special_token_variables(tokenizer: Tokenizer) -> dict[str, str]:
    """bos_token, eos_token... as transformers' apply_chat_template offers them to the template."""
    special = _template_files(tokenizer.source).special_tokens
    return {k: (tokenizer.token_text(v) if isinstance(v, int) else v) for k, v in special.items()}


# ------------------------------------------------------------------------------------------
# What the tokenizer class does before the template (profile data -> steps)
# ------------------------------------------------------------------------------------------
def _deep_sort_step(tools: list, kwargs: dict) -> list:
    return deep_sort(tools)


def _kimi_typescript_step(tools: list, kwargs: dict) -> list:
    declarations = tools_typescript(tools)
    if declarations is not None:  # as Kimi's tokenizer: unset where the encoder raises
        kwargs["tools_ts_str"] = declarations
    return tools


TOOL_STEPS: dict[str, Callable[[list, dict], list]] = {
    "deep-sort": _deep_sort_step,  # every dict key-sorted (Kimi's deep_sort_dict)
    "kimi-typescript": _kimi_typescript_step,  # tools_ts_str, Kimi K2.5's TypeScript declarations
}


# Per render: a chat template is code from a model's files; one that loops without end, or writes
# megabytes, fails the conversation it renders, not the run (the other lines still render).
RENDER_SECONDS = 10.0  # a 1M-token conversation renders in well under a second
RENDER_MAX_CHARS = 16 << 20  # 16 Mi characters: a 1M-token context is about 4 Mi
_RENDER_FAILURES = (TypeError, ValueError, KeyError, AttributeError, IndexError, ArithmeticError, RecursionError, MemoryError)


def _render_failures() -> tuple[type[BaseException], ...]:
    """What a failing render raises: jinja2's TemplateError where transformers' renderer rendered (imported by then)."""
    import sys

    jinja = sys.modules.get("jinja2.exceptions")
    return (jinja.TemplateError, *_RENDER_FAILURES) if jinja is not None else _RENDER_FAILURES


RESERVED_VARIABLES = frozenset({"messages", "conversations", "tools", "documents", "chat_template",
                                "add_generation_prompt", "continue_final_message", "return_assistant_tokens_mask"})


def template_inputs(tools: Sequence | None, profile: Profile,
                    chat_template_kwargs: Mapping[str, Any] | None = None) -> tuple[list | None, dict[str, Any]]:
    """(tools, extra template variables) as the model's tokenizer class passes them to its template: the
    profile's defaults, overridden by a request's ``chat_template_kwargs``, then what the pre-processing sets."""
    kwargs = dict(profile.spec.chat_template_kwargs)
    if chat_template_kwargs is not None:
        if not isinstance(chat_template_kwargs, Mapping) or not all(isinstance(k, str) for k in chat_template_kwargs):
            raise RenderError("chat_template_kwargs", "expected an object of template variables")
        reserved = sorted(RESERVED_VARIABLES & set(chat_template_kwargs))
        if reserved:
            raise RenderError("chat_template_kwargs", f"{', '.join(reserved)} cannot be set here (they are the call's own arguments)")
        kwargs.update(chat_template_kwargs)
    if tools is None:
        return None, kwargs
    if not isinstance(tools, Sequence) or isinstance(tools, str) or not all(isinstance(t, Mapping) for t in tools):
        raise RenderError("tools", "expected a list of tool objects")
    tools = [dict(t) for t in tools]
    if tools:
        for step in profile.spec.tools_preprocess:
            tools = TOOL_STEPS[step](tools, kwargs)
    return tools, kwargs


def check_messages(messages: Any) -> None:
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        raise RenderError("messages", "expected a list of message objects")
    if not messages:
        raise RenderError("messages", "an empty conversation has no prompt (engines refuse it too)")
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RenderError(f"messages[{i}]", "expected an object with a string 'role'")
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                kind = part.get("type") if isinstance(part, Mapping) else None
                if not isinstance(part, Mapping) or kind not in (None, "text") or not isinstance(part.get("text"), str):
                    raise RenderError(f"messages[{i}].content[{j}]",
                                      f"only text parts can be rendered (the ids of media come from the engine), got {kind or type(part).__name__!r}")
        elif content is not None and not isinstance(content, str):
            raise RenderError(f"messages[{i}].content", f"expected a string or a list of text parts, got {type(content).__name__}")


def render_text(messages: Sequence[Mapping], tools: Sequence | None, profile: Profile, tokenizer: Tokenizer,
                add_generation_prompt: bool = True, *, chat_template_kwargs: Mapping[str, Any] | None = None) -> str:
    """The prompt text the model's chat template renders (marker text included), as transformers'
    ``apply_chat_template`` renders it: keys whose value is null dropped from each message, the
    tokenizer's bos_token, eos_token... offered to the template, then the call's variables."""
    check_messages(messages)
    tools, kwargs = template_inputs(tools, profile, chat_template_kwargs)
    return render_with(messages, prepare(tools, kwargs, tokenizer), tokenizer, add_generation_prompt)


def prepare(tools: list | None, kwargs: Mapping[str, Any], tokenizer: Tokenizer) -> Prepared:
    """``template_inputs``' tools and variables, with the tokenizer's bos_token, eos_token... as the template
    will see them; a caller may keep the answer for identical tool sets (PromptJudge does)."""
    return Prepared(tools, {**special_token_variables(tokenizer), **kwargs})


@functools.cache
def _renderer(template: str) -> ChatRenderer:
    return ChatRenderer(template)


def renderer_for(tokenizer: Tokenizer, tools: Sequence | None = None) -> ChatRenderer:
    """This tokenizer's chat template, compiled (once per process: a lone pytest compiles it before its judges fork;
    MiniJinja where it renders the template as transformers does, else transformers' renderer, see chat_renderer)."""
    return _renderer(chat_template(tokenizer, tools)[0])


def render_with(messages: Sequence[Mapping], prepared: Prepared, tokenizer: Tokenizer, add_generation_prompt: bool = True) -> str:
    """The prompt text for ``messages`` with ``prepared`` tools and variables (``prepare``); the messages checked by the caller."""
    template, where = chat_template(tokenizer, prepared.tools)
    conversation = [{k: v for k, v in m.items() if v is not None} for m in messages]
    try:
        render = _renderer(template)  # a template that does not compile fails here, each render that uses it
        with time_limit(RENDER_SECONDS):
            rendered = render(conversation, prepared, add_generation_prompt)
    except TimeLimitExceeded:
        raise RenderError("messages", f"the chat template {where} did not finish rendering this conversation in "
                          f"{RENDER_SECONDS:g} s (a loop without end?); check the template") from None
    except TemplateRaised as e:  # the template's raise_exception: jinja2 raises it as a TemplateError
        raise RenderError("messages", f"the chat template {where} cannot render this conversation: TemplateError: {str(e)[:300]}") from None
    except _render_failures() as e:
        raise RenderError("messages", f"the chat template {where} cannot render this conversation: {type(e).__name__}: {str(e)[:300]}") from None
    if len(rendered) > RENDER_MAX_CHARS:
        raise RenderError("messages", f"the chat template {where} rendered {len(rendered):,} characters for this "
                          f"conversation, over the limit of {RENDER_MAX_CHARS:,}; check the template")
    return rendered

"""A user's own reconstruction and prompt rendering, judged in place of tokfidelity's.

A team that keeps its own pipeline points the suite at its functions:

* a reconstructor ``(response, tokenizer) -> output ids``: ``response`` is the message dict the
  dataset's view returns (``reasoning`` and its alias ``reasoning_content``, ``content``,
  ``tool_calls``, ``finish_reason``), or the sample's recorded response flattened the same way;
* a renderer ``(messages, tools, chat_template_kwargs, tokenizer) -> prompt ids``.

``tokenizer`` is a ``TokenizerFacade``: the transformers-style methods such code calls, answered by
the tokenizer tokfidelity loaded (and fingerprinted) for the dataset. ``OwnFunction`` is one such
function with its name and the sha256 of its source files, which a gate record pins: a record
opened for a user's function opens nothing for another, nor for tokfidelity's own.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import operator
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import TokfidelityError
from .tokenizer import Tokenizer

__all__ = [
    "TOKFIDELITY", "OwnFunction", "OwnCodeError", "TokenizerFacade", "load_function", "own_function",
    "source_pins", "flat_message", "output_ids_of", "bound_reconstructor", "bound_renderer", "snapshot_suffix",
    "file_changes", "record_fields", "record_problems", "judged_note",
]

TOKFIDELITY = "tokfidelity"  # the name a gate record gives tokfidelity's own reconstruction and rendering
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # tokfidelity's own sources are never the user's


class OwnCodeError(TokfidelityError, ValueError):
    """A user's function cannot be found, or returned something that is not a list of token ids."""


@dataclass(frozen=True)
class OwnFunction:
    """A user's function: ``name`` (``MODULE:FUNCTION``, or ``PATH::HOOK`` for a conftest hook), the
    callable, and ``files``: sha256 of its source files by absolute path (``source_pins``)."""

    name: str
    function: Callable[..., Any]
    files: Mapping[str, str] = field(default_factory=dict)

    def changes(self) -> list[str]:
        """Source files pinned here that differ on disk now."""
        return file_changes(self.files, f"source of {self.name}")


def file_changes(pinned: Mapping[str, str], what: str) -> list[str]:
    """``pinned`` files (path -> sha256) that are gone or differ now, said as ``what`` PATH changed."""
    out = []
    for path, digest in sorted(pinned.items()):
        try:
            now = _sha256(Path(path))
        except OSError:
            out.append(f"{what} {path} is gone")
            continue
        if now != digest:
            out.append(f"{what} {path} changed")
    return out


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _user_file(path: str | None) -> Path | None:
    """``path`` resolved when it is a user's source file: not tokfidelity's, not an installed library's."""
    if not path or not path.endswith(".py"):
        return None
    resolved = Path(path).resolve()
    if resolved.is_relative_to(_PACKAGE_ROOT / "pipeline") or resolved.is_relative_to(_PACKAGE_ROOT / "pytest_tokfidelity"):
        return None
    if "site-packages" in resolved.parts or "dist-packages" in resolved.parts or resolved.is_relative_to(Path(sys.base_prefix).resolve()):
        return None
    return resolved if resolved.is_file() else None


def source_pins(functions: Sequence[Callable[..., Any]]) -> dict[str, str]:
    """sha256 of the source files behind ``functions``: the file defining each, and every module loaded
    now from that file's folder or below (the pipeline a conftest hook imports at its top); test modules
    other than the defining file are left out."""
    files: set[Path] = set()
    for fn in functions:
        defining = _user_file(inspect.getsourcefile(inspect.unwrap(fn)) or "")
        if defining is None:
            continue
        files.add(defining)
        folder = defining.parent
        for module in list(sys.modules.values()):
            found = _user_file(getattr(module, "__file__", None))
            if found is not None and found.is_relative_to(folder) and not found.name.startswith(("test_", "conftest")):
                files.add(found)
    return {str(p): _sha256(p) for p in sorted(files)}


def load_function(spec: str, option: str, search: Sequence[os.PathLike | str] = ()) -> OwnFunction:
    """The function ``spec`` (``MODULE:FUNCTION``, FUNCTION may be dotted) names, imported; ``search``:
    folders tried after sys.path when MODULE is not importable from it (the project's root)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise OwnCodeError(f"expected MODULE:FUNCTION (e.g. my_pipeline.reconstruct:reconstruct_output_ids), got {spec!r}", field=option)
    try:
        module = _import(module_name, search)
    except ImportError as e:
        raise OwnCodeError(f"cannot import module {module_name!r} ({type(e).__name__}: {e}); run pytest from the folder "
                           "that holds it, or put it on PYTHONPATH", field=option) from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise OwnCodeError(f"module {module_name!r} ({getattr(module, '__file__', '?')}) has no {attr!r}", field=option)
    if not callable(target):
        raise OwnCodeError(f"{spec} is a {type(target).__name__}, not a function", field=option)
    return own_function(spec, target)


def own_function(name: str, function: Callable[..., Any], sources: Sequence[Callable[..., Any]] = ()) -> OwnFunction:
    """An OwnFunction named ``name``, its sources pinned from ``sources`` (default: the function itself)."""
    return OwnFunction(name, function, source_pins(sources or [function]))


def _import(name: str, search: Sequence[os.PathLike | str]):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name.split(".")[0]:
            raise
    added = [str(s) for s in search if str(s) not in sys.path]
    sys.path.extend(added)  # after everything else: a project module never shadows an installed one
    return importlib.import_module(name)


def judged_label(reconstructor: OwnFunction | None, renderer: OwnFunction | None, trainer: bool) -> str:
    """The project's own code judged, as a sample's failure names it ("": tokfidelity's own)."""
    if trainer and reconstructor is not None:
        return f" (judged: trainer {reconstructor.name})"
    own = [f"{what} {f.name}" for what, f in (("reconstruction", reconstructor), ("rendering", renderer)) if f]
    return f" (judged: {', '.join(own)})" if own else ""


def snapshot_suffix(reconstructor: OwnFunction | None, renderer: OwnFunction | None) -> str:
    """What sets a user's reviewed divergences apart from tokfidelity's (and one function's from
    another's): "" for tokfidelity's own, else ``@NAME`` per function with unsafe characters replaced."""
    if reconstructor is not None and reconstructor is renderer and reconstructor.function is None:  # a trainer's, on both sides
        parts = [f"trainer={reconstructor.name}"]
    else:
        parts = [f"{kind}={own.name}" for kind, own in (("reconstruct", reconstructor), ("render", renderer)) if own is not None]
    if not parts:
        return ""
    text = "@" + "@".join(parts)
    return "".join(c if c.isalnum() or c in "-_.=@" else "_" for c in text)


# ------------------------------------------------------------------------------------------
# What a user's function is given, and what it must give back
# ------------------------------------------------------------------------------------------
class TokenizerFacade:
    """The transformers-style methods a user's reconstruction or rendering calls, over tokfidelity's
    loaded tokenizer (``.tokenizer``), so that the ids judged are the fingerprinted tokenizer's.

    ``encode(text, add_special_tokens=False)``: special-token text becomes its id, as transformers'
    encode does; no BOS or EOS is ever added (``add_special_tokens=True`` is refused, not ignored).
    ``decode(ids, skip_special_tokens=False)``. ``convert_tokens_to_ids``: a special token's text, or the
    text of an ordinary token that encodes as one id; anything else is None. ``convert_ids_to_tokens``:
    each id's text (an ordinary token's decoded text, not the byte-level form a tokenizer.json stores).
    ``all_special_tokens`` / ``all_special_ids``, ``vocab_size``, ``len()``, ``name_or_path``."""

    def __init__(self, tokenizer: Tokenizer, name_or_path: str | None = None):
        self.tokenizer = tokenizer
        self.name_or_path = name_or_path or tokenizer.name
        self.all_special_tokens = sorted(tokenizer.special_tokens, key=tokenizer.special_tokens.__getitem__)
        self.all_special_ids = [tokenizer.special_tokens[t] for t in self.all_special_tokens]
        self.vocab_size = tokenizer.n_vocab

    def __len__(self) -> int:
        return self.tokenizer.n_vocab

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        if add_special_tokens:
            raise OwnCodeError("this tokenizer adds no BOS/EOS: call encode(text, add_special_tokens=False) and add "
                               "the ids the model generated yourself", field="add_special_tokens")
        return self.tokenizer.encode(text)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        ids = [ids] if isinstance(ids, int) else list(ids)
        if skip_special_tokens:
            ids = [i for i in ids if i not in self.tokenizer.special_ids]
        return self.tokenizer.decode(ids)

    def _token_id(self, token: str) -> int | None:
        found = self.tokenizer.special_tokens.get(token)
        if found is not None:
            return found
        ids = self.tokenizer.encode_ordinary(token)
        return ids[0] if len(ids) == 1 else None

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | None | list[int | None]:
        return self._token_id(tokens) if isinstance(tokens, str) else [self._token_id(t) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        text = self.tokenizer.token_text
        return text(ids) if isinstance(ids, int) else [text(i) for i in ids]

    def __repr__(self) -> str:
        return f"<TokenizerFacade over {self.tokenizer!r}>"


def flat_message(response: Mapping[str, Any]) -> dict[str, Any]:
    """The message dict a user's reconstructor gets for a response: a chat-completion body's first
    choice's message with its ``finish_reason``, or a flat message as is; ``reasoning`` and
    ``reasoning_content`` both set (servers name the field one way or the other)."""
    if "choices" in response:
        choice = response["choices"][0]
        message = {**choice["message"], "finish_reason": choice.get("finish_reason")}
    else:
        message = dict(response)
    reasoning = message.get("reasoning")
    if reasoning is None:
        reasoning = message.get("reasoning_content")
    message["reasoning"] = message["reasoning_content"] = reasoning
    return message


def output_ids_of(value: Any, own: OwnFunction, tokenizer: Tokenizer) -> list[int]:
    """``value`` (what ``own`` returned) as a list of token ids of ``tokenizer``; an OwnCodeError naming
    the function when it is not one (numpy and torch integers are ids too)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise OwnCodeError(f"{own.name} returned {type(value).__name__}, expected a list of token ids", field="(returned)")
    if hasattr(value, "tolist"):  # a numpy array or torch tensor
        value = value.tolist()
    try:
        ids = [operator.index(i) for i in value]
    except TypeError:
        bad = next(i for i in value if not hasattr(i, "__index__"))
        raise OwnCodeError(f"{own.name} returned a list holding {bad!r} ({type(bad).__name__}), expected token ids",
                           field="(returned)") from None
    n = tokenizer.n_vocab
    outside = sorted({i for i in ids if not 0 <= i < n})
    if outside:
        raise OwnCodeError(f"{own.name} returned ids {outside[:5]} outside the vocabulary of {tokenizer.name} (0..{n - 1})",
                           field="(returned)")
    return ids


def bound_reconstructor(own: OwnFunction, tokenizer: Tokenizer, location: str | None = None) -> Callable[[Mapping], list[int]]:
    """``response -> output ids``: ``own`` called with the flattened response and a facade of ``tokenizer``."""
    facade = TokenizerFacade(tokenizer, location)
    function = own.function

    def reconstruct(response: Mapping[str, Any]) -> list[int]:
        return output_ids_of(function(flat_message(response), facade), own, tokenizer)

    reconstruct.own = own
    return reconstruct


def bound_renderer(own: OwnFunction, tokenizer: Tokenizer, location: str | None = None) -> Callable[..., list[int]]:
    """``(messages, tools, chat_template_kwargs) -> prompt ids``: ``own`` called with a facade of ``tokenizer``."""
    facade = TokenizerFacade(tokenizer, location)
    function = own.function

    def render(messages: Sequence[Mapping], tools: Sequence | None, kwargs: Mapping[str, Any] | None) -> list[int]:
        return output_ids_of(function(messages, tools, kwargs, facade), own, tokenizer)

    render.own = own
    return render


# ------------------------------------------------------------------------------------------
# What a gate record says of the code it judged
# ------------------------------------------------------------------------------------------
def record_fields(reconstructor: OwnFunction | None, renderer: OwnFunction | None) -> dict[str, Any]:
    """A gate record's names of the reconstruction and rendering judged (``TOKFIDELITY`` for its own)
    and the sha256 of the project's source files behind them (``own_files``)."""
    files: dict[str, str] = {}
    for own in (reconstructor, renderer):
        if own is not None:
            files.update(own.files)
    return {"reconstructor": reconstructor.name if reconstructor else TOKFIDELITY,
            "renderer": renderer.name if renderer else TOKFIDELITY, "own_files": files}


def judged_note(record: Mapping[str, Any]) -> str:
    """", judged: reconstruction NAME" for the project's own code a record judged ("" for tokfidelity's own)."""
    own = [f"{what} {record.get(kind)}" for kind, what in (("reconstructor", "reconstruction"), ("renderer", "rendering"))
           if record.get(kind) not in (None, TOKFIDELITY)]
    return f" (judged: {', '.join(own)})" if own else ""


def record_problems(record: Mapping[str, Any], reconstructor: str | None, renderer: str | None) -> tuple[list[str], list[str]]:
    """(problems, next steps) when a gate record judged other code than the caller builds with
    (``reconstructor`` / ``renderer``: the names a record gives them; None: tokfidelity's own), or when
    the project's source files it pinned differ now. A record without the fields judged tokfidelity's."""
    problems, steps = [], []
    for kind, wanted, option in (("reconstructor", reconstructor, "--reconstruct"), ("renderer", renderer, "--render")):
        judged = record.get(kind) or TOKFIDELITY
        wanted = wanted or TOKFIDELITY
        if judged != wanted:
            problems.append(f"the gate was opened for the {kind} {judged!r}, not {wanted!r}: its proof says nothing of data "
                            f"built by another")
            steps.append(f"build with {judged}'s code (`tokfidelity gate check --dataset {record.get('dataset')} {option} {judged}` checks its gate), or run the "
                         f"suite with the code you build with")
    files = record.get("own_files") or {}
    if isinstance(files, Mapping):
        changed = file_changes(files, "the project's source")
        problems += changed
        if changed:
            steps.append("run the suite again on the changed code")
    return problems, steps

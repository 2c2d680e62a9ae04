"""The engines' view parsers, registered under the names their servers give them.

As in the engines themselves (vLLM's ``ToolParserManager.register_module``, SGLang's reasoning-parser and
function-call-parser maps), a parser class registers itself with a decorator, under its engine, its kind
and the server's own name for it::

    @register("sglang", "tool", "qwen25")
    class Qwen25Tools: ...

A module of parsers registers when it is imported; a family names its parser modules
(``pipeline.core.families.Family.parsers``) and they are imported when one of its views is first bound,
so a process judging one family imports only that family's parsers. The decorator also marks the class
(``PARSER_NAMES``), so ``register_module`` registers a module's parsers again where the registry was
imported afresh while the module was kept (a test runner restoring ``sys.modules``).

One small interface (``ReasoningParser``, ``ToolParser``, ``WholeParser``): the class is built once per
bound profile and view, ``Class(profile, view, tokenizer)``, and called per sample with the request the
sample answers (``pipeline.core.engines.request.Request``):

* ``reasoning``: ``parser(text, request) -> (reasoning or None, rest)``;
* ``tool``: ``parser(text, request) -> (content, [(name, arguments, id or None)])``;
* ``whole``, where the engine composes the parsers itself (vLLM serves a harmony model through its
  ``HarmonyParser`` whatever the names), registered under the reasoning parser's name:
  ``parser(text, ids, request) -> (reasoning, content, calls)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .request import Request

__all__ = ["KINDS", "PARSER_NAMES", "register", "register_module", "registered", "parser_class", "is_whole", "names",
           "ReasoningParser", "ToolParser", "WholeParser"]

KINDS = ("reasoning", "tool", "whole")
PARSER_NAMES = "tokfidelity_parser_names"  # the attribute a registered class carries: its (engine, kind, name)s
_PARSERS: dict[tuple[str, str, str], type] = {}


class ReasoningParser(Protocol):
    def __init__(self, profile: Any, view: Any, tokenizer: Any) -> None: ...
    def __call__(self, text: str, request: Request) -> tuple[str | None, str]: ...


class ToolParser(Protocol):
    def __init__(self, profile: Any, view: Any, tokenizer: Any) -> None: ...
    def __call__(self, text: str, request: Request) -> tuple[str | None, list[tuple[str, str, str | None]]]: ...


class WholeParser(Protocol):
    def __init__(self, profile: Any, view: Any, tokenizer: Any) -> None: ...
    def __call__(self, text: str, ids: Sequence[int], request: Request) -> tuple[str | None, str | None, list]: ...


def register(engine: str, kind: str, *parser_names: str) -> Callable[[type], type]:
    """A class decorator: register the class as ``engine``'s ``kind`` parser under each of ``parser_names``.
    A name already taken by another class is an error (two modules restating one server parser)."""
    if kind not in KINDS or not parser_names:
        raise ValueError(f"register({engine!r}, {kind!r}, ...): kind is one of {KINDS}, and at least one name")

    def decorate(cls: type) -> type:
        for name in parser_names:
            known = _PARSERS.get((engine, kind, name))
            if known is not None and known.__qualname__ != cls.__qualname__:
                raise ValueError(f"{engine} {kind} parser {name!r} is registered twice: {known.__module__}.{known.__qualname__} "
                                 f"and {cls.__module__}.{cls.__qualname__}")
            _PARSERS[(engine, kind, name)] = cls
        setattr(cls, PARSER_NAMES, (*getattr(cls, PARSER_NAMES, ()), *((engine, kind, n) for n in parser_names)))
        return cls

    return decorate


def register_module(module) -> None:
    """Register (again) every parser class a module defines with ``@register``."""
    for obj in vars(module).values():
        if isinstance(obj, type) and obj.__module__ == module.__name__:
            for key in getattr(obj, PARSER_NAMES, ()):
                _PARSERS[key] = obj


def registered(engine: str, kind: str, name: str) -> bool:
    """Whether a parser is registered under that name (a reasoning name also counts as a whole parser's)."""
    return (engine, kind, name) in _PARSERS or (kind == "reasoning" and is_whole(engine, name))


def is_whole(engine: str, reasoning_name: str) -> bool:
    return (engine, "whole", reasoning_name) in _PARSERS


def parser_class(engine: str, kind: str, name: str) -> type:
    """The class registered as ``engine``'s ``kind`` parser ``name``; a LookupError naming the registered ones."""
    try:
        return _PARSERS[(engine, kind, name)]
    except KeyError:
        known = ", ".join(names(engine, kind)) or "none"
        raise LookupError(f"no {engine} {kind} parser {name!r} is registered (registered: {known}); "
                          "the family that declares the view names the module that registers it") from None


def names(engine: str | None = None, kind: str | None = None) -> list[str]:
    """The registered parser names, sorted, of one engine and kind (or all)."""
    return sorted({n for e, k, n in _PARSERS if (engine is None or e == engine) and (kind is None or k == kind)})

"""Import sglang 0.5.23's real Kimi parsers on a CPU-only machine.

``sglang/__init__.py`` is the front-end language package: it imports torch, triton (absent on
CPU; a stub confuses torch's own triton probing) and the whole runtime. The parsers need none
of it. We register ``sglang`` as a bare package pointing at the installed files, skipping only
that ``__init__``, then import the parser modules normally: every line of them, and of what
they import (the OpenAI protocol models, the detector base classes), is sglang's own code.

Installed by ``scripts/setup``: ``pip install --no-deps sglang==0.5.23`` plus the pure-Python
modules its parser imports need (msgspec, orjson, pybase64, partial-json-parser, ipython,
traitlets).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import types

SGLANG_VERSION = "0.5.23"


class SglangMissing(RuntimeError):
    pass


def import_sglang_parsers() -> tuple[types.ModuleType, types.ModuleType]:
    """(``sglang.srt.parser.reasoning_parser``, ``sglang.srt.function_call.kimik2_detector``)."""
    return import_sglang_modules("sglang.srt.parser.reasoning_parser", "sglang.srt.function_call.kimik2_detector")


def import_sglang_modules(*names: str) -> tuple[types.ModuleType, ...]:
    """The named sglang modules, imported with sglang's own code (only its package __init__ skipped)."""
    try:
        version = importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        raise SglangMissing(
            f"sglang is not installed; run scripts/setup (it does pip install --no-deps sglang=={SGLANG_VERSION})"
        ) from None
    if version != SGLANG_VERSION:
        raise SglangMissing(f"sglang {version} is installed; the differential test pins {SGLANG_VERSION} (run scripts/setup)")
    if "sglang" not in sys.modules:
        spec = importlib.util.find_spec("sglang")
        package = types.ModuleType("sglang", "sglang, without its front-end __init__ (see tests/sglang_support)")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        package.__file__ = spec.origin
        sys.modules["sglang"] = package
    return tuple(importlib.import_module(name) for name in names)


def import_sglang_gpt_oss() -> tuple[types.ModuleType, ...]:
    """(``sglang.srt.parser.reasoning_parser``, ``sglang.srt.function_call.gpt_oss_detector``,
    ``sglang.srt.entrypoints.openai.protocol``): sglang's own gpt-oss parsers and its request types."""
    return import_sglang_modules("sglang.srt.parser.reasoning_parser", "sglang.srt.function_call.gpt_oss_detector",
                                 "sglang.srt.entrypoints.openai.protocol")

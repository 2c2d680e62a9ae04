"""The two public ports of Kimi K2.5's tool-declaration encoder, imported for differential tests only.

* tinker-cookbook 0.6.1: ``tinker_cookbook/renderers/kimi_k2_5_tool_declaration_ts.py``, a verbatim copy of
  the encoder in Kimi K2.5's hub repository (``tool_declaration_ts.py``). It decides where ports differ.
  Loaded by file path, so the encoder tests need nothing else; the whole renderer (package ``__init__``,
  the ``tinker`` SDK, PIL) is imported only by tests/test_render_tinker.py.
* renderers 0.1.12: ``renderers/kimi_k25.py`` (its own encoder and a whole Kimi K2.5 renderer). Loaded with
  ``renderers/__init__.py`` skipped (it imports an HTTP client and every model family); the modules
  kimi_k25.py imports are the package's own, run as they are (``configs`` needs ``pydantic_config``, from
  ``prime-pydantic-config``).

All are installed ``--no-deps`` by ``scripts/setup`` (tinker and its few needs too).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

PINS = {"tinker-cookbook": "0.6.1", "renderers": "0.1.12", "prime-pydantic-config": "0.4.3"}


class PortMissing(RuntimeError):
    pass


def _check(dist: str) -> None:
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise PortMissing(f"{dist} is not installed; run scripts/setup (pip install --no-deps {dist}=={PINS[dist]})") from None
    if version != PINS[dist]:
        raise PortMissing(f"{dist} {version} is installed; the differential tests pin {PINS[dist]} (run scripts/setup)")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # a top-level name: finds the folder without running __init__
    return Path(spec.submodule_search_locations[0])


def tinker_ts_encoder() -> types.ModuleType:
    """tinker-cookbook's verbatim copy of the official encoder (``encode_tools_to_typescript_style``)."""
    _check("tinker-cookbook")
    name = "_tinker_kimi_k2_5_tool_declaration_ts"
    if name not in sys.modules:
        path = _package_dir("tinker_cookbook") / "renderers" / "kimi_k2_5_tool_declaration_ts.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]


def renderers_kimi() -> types.ModuleType:
    """``renderers.kimi_k25`` (``_encode_tools_typescript``, ``KimiK25Renderer``), its package ``__init__`` skipped."""
    _check("renderers")
    _check("prime-pydantic-config")
    if "renderers" not in sys.modules:
        package = types.ModuleType("renderers")
        package.__path__ = [str(_package_dir("renderers"))]
        package.__package__ = "renderers"
        sys.modules["renderers"] = package
    return importlib.import_module("renderers.kimi_k25")


class HFStyleTokenizer:
    """What renderers' KimiK25Renderer asks of a Hugging Face tokenizer, answered by tokfidelity's
    Kimi tokenizer (``encode`` allows every special, as Kimi's own tokenizer does)."""

    unk_token_id = None

    def __init__(self, tokenizer):
        self._tok = tokenizer

    def convert_tokens_to_ids(self, token: str):
        return self._tok.special_tokens.get(token)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self._tok.encode(text)

    def decode(self, ids, **_) -> str:
        return self._tok.decode(ids)

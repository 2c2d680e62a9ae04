"""Where the tests find the real tokenizer files: the first root of ``TOKFIDELITY_TOKENIZERS``, else
``../shared/tokenizers`` beside the checkout (``conftest.py`` sets the variable to that default)."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "tokenizers"


def tokenizers_root() -> Path:
    """The folder holding one folder per real tokenizer (kimi-k2.5, qwen3, ...)."""
    roots = [r for r in os.environ.get("TOKFIDELITY_TOKENIZERS", "").split(os.pathsep) if r]
    return Path(roots[0]).expanduser() if roots else DEFAULT_ROOT


SHARED = tokenizers_root()

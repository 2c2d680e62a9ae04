"""Root conftest: point tests at the real tokenizers in ../shared/tokenizers when present."""

import os
from pathlib import Path

pytest_plugins = ["pytester"]

_shared = Path(__file__).resolve().parent.parent / "shared" / "tokenizers"
if not os.environ.get("TOKFIDELITY_TOKENIZERS") and _shared.is_dir():
    os.environ["TOKFIDELITY_TOKENIZERS"] = str(_shared)
os.environ.setdefault("HF_HUB_OFFLINE", "1")


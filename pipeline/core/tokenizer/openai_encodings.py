"""OpenAI's ``*.tiktoken`` files by encoding name, for a machine without ``TOKFIDELITY_TOKENIZERS``:
``o200k_base`` (and ``o200k_harmony``, gpt-oss's encoding built on it) from tokfidelity's cache
(``$TOKFIDELITY_CACHE_DIR/openai-encodings``, default ``~/.cache/tokfidelity``), downloaded once from
OpenAI's public encodings store when online (``HF_HUB_OFFLINE`` unset, the switch every download here
obeys) and kept only when its sha256 is the one tiktoken expects."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..files import atomic_write, cache_root

__all__ = ["ENCODING_FILES", "cached_encoding_file"]

# encoding -> sha256 of its file (tiktoken_ext.openai_public pins the same hash)
ENCODING_FILES = {"o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"}
DEFAULT_URL = "https://openaipublic.blob.core.windows.net/encodings/"


def _cache_dir() -> Path:
    root = cache_root()
    return root / "openai-encodings"


def cached_encoding_file(base: str, tried: list[str]) -> Path | None:
    """The cached ``{base}.tiktoken``, downloaded first when online; None (and why, in ``tried``) if not."""
    expected = ENCODING_FILES.get(base)
    if expected is None:
        return None
    path = _cache_dir() / f"{base}.tiktoken"
    if path.is_file():
        return path
    tried.append(f"tokfidelity cache {path} (absent)")
    if os.environ.get("HF_HUB_OFFLINE", "0") in ("1", "true", "True"):
        tried.append(f"download of {base}.tiktoken (HF_HUB_OFFLINE is set)")
        return None
    url = (os.environ.get("TOKFIDELITY_ENCODINGS_URL") or DEFAULT_URL).rstrip("/") + f"/{base}.tiktoken"
    try:
        import httpx

        response = httpx.get(url, timeout=60, follow_redirects=True)
        response.raise_for_status()
    except Exception as e:  # noqa: BLE001 - any transport or HTTP error is reported the same way
        tried.append(f"download {url} ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''})")
        return None
    digest = hashlib.sha256(response.content).hexdigest()
    if digest != expected:
        tried.append(f"download {url} (sha256 {digest[:16]}..., expected {expected[:16]}...: not kept)")
        return None
    return atomic_write(path, response.content, mkdir=True)

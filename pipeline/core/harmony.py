"""openai-harmony, loaded offline from the tokenizer files tokfidelity already uses.

gpt-oss writes the harmony format, and ``openai-harmony`` (OpenAI's own implementation) is what
renders and parses it. Its encoding needs the ``o200k_base.tiktoken`` vocabulary; openai-harmony
0.0.8 downloads it unless the environment variable ``TIKTOKEN_ENCODINGS_BASE`` names a folder
holding that file (it then reads it from there, checks its sha256 against the expected one, and
fetches nothing). ``harmony_encoding(tokenizer)`` points that variable at the folder the
tokenizer itself was loaded from, for the duration of the load only, so a verdict never depends
on the network or on a download cache, and the vocabulary is the one the gate fingerprints.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

from .tokenizer import Tokenizer

__all__ = ["HarmonyUnavailable", "harmony_encoding", "vocabulary_folder"]

BASE_FILE = "o200k_base.tiktoken"
_ENV = "TIKTOKEN_ENCODINGS_BASE"
_env_lock = threading.Lock()


class HarmonyUnavailable(RuntimeError):
    """openai-harmony is not installed, or cannot load its vocabulary from the tokenizer's files."""


def vocabulary_folder(tokenizer: Tokenizer) -> Path:
    """The folder holding the tokenizer's ``o200k_base.tiktoken``."""
    for path in tokenizer.files:
        if path.name == BASE_FILE:
            return path.parent
    raise HarmonyUnavailable(
        f"tokenizer {tokenizer.name} ({tokenizer.source}) has no {BASE_FILE}: the harmony format needs the "
        "o200k_harmony encoding (--tokenizer DIR/o200k_harmony, DIR holding o200k_base.tiktoken)"
    )


def harmony_encoding(tokenizer: Tokenizer):
    """openai-harmony's ``HARMONY_GPT_OSS`` encoding, its vocabulary read from the tokenizer's folder."""
    return _load(str(vocabulary_folder(tokenizer)))


@functools.lru_cache(maxsize=4)
def _load(folder: str):
    try:
        from openai_harmony import HarmonyEncodingName, HarmonyError, load_harmony_encoding
    except ImportError:
        raise HarmonyUnavailable(
            "openai-harmony is not installed (pip install openai-harmony==0.0.8, or run scripts/setup)"
        ) from None
    with _env_lock:  # the variable is process-wide: set it for this load only
        before = os.environ.get(_ENV)
        os.environ[_ENV] = folder
        try:
            return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
        except HarmonyError as e:
            raise HarmonyUnavailable(f"openai-harmony cannot load {Path(folder) / BASE_FILE}: {e}") from None
        finally:
            if before is None:
                del os.environ[_ENV]
            else:
                os.environ[_ENV] = before

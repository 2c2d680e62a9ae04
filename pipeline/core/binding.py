"""Load a tokenizer and bind a profile to it: what every command, stage and check does first."""

from __future__ import annotations

import os

from .profiles import Profile, bind_profile
from .tokenizer import Tokenizer, load_tokenizer

__all__ = ["bind_dataset"]


def bind_dataset(profile: str, tokenizer: str | os.PathLike) -> tuple[Tokenizer, Profile]:
    """``(tokenizer, profile)``: the tokenizer loaded (once per process) and the profile's markers bound
    to its ids. Raises TokenizerNotFound, ProfileError, or ValueError for unreadable tokenizer files."""
    loaded = load_tokenizer(tokenizer)
    return loaded, bind_profile(profile, loaded)

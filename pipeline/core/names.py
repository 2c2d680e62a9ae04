"""The names a manifest or a command line may give: profiles and API views. A leaf module (it reads
the families' data, never a tokenizer), so checking a manifest does not load the profile or view code."""

from __future__ import annotations

from .families import SPECS

__all__ = ["PROFILE_NAMES", "VIEW_NAMES"]

PROFILE_NAMES: tuple[str, ...] = tuple(spec.name for spec in SPECS)
VIEW_NAMES: tuple[str, ...] = ("sglang", "sglang-legacy", "vllm-spaces")  # each profile lists those it has

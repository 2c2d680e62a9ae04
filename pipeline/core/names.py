"""The names a manifest or a command line may give: profiles and API views. A leaf module (it reads
the families' data, never a tokenizer), so checking a manifest does not load the profile or view code."""

from __future__ import annotations

from .families import SPECS

__all__ = ["PROFILE_NAMES", "VIEW_NAMES", "profile_views", "view_release"]

PROFILE_NAMES: tuple[str, ...] = tuple(spec.name for spec in SPECS)
# Every view some profile has, in the order the families declare them.
VIEW_NAMES: tuple[str, ...] = tuple(dict.fromkeys(name for spec in SPECS for name in spec.views))


def profile_views(profile: str) -> tuple[str, ...]:
    """The views a profile has (empty for an unknown profile)."""
    return next((tuple(spec.views) for spec in SPECS if spec.name == profile), ())


def view_release(profile: str | None, view: str) -> str | None:
    """The engine release a profile's view stands for (``"vllm 0.33.0"``), or None for an unknown one."""
    spec = next((spec for spec in SPECS if spec.name == profile), None)
    found = spec.views.get(view) if spec is not None else None
    return f"{found.engine} {found.version}" if found is not None else None

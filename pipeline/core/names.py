"""The names a manifest or a command line may give: profiles and API views, read from the family registry
(``pipeline.core.families.families()``). A leaf module (it reads the families' data, never a tokenizer), so
checking a manifest does not load the profile or view code. ``PROFILE_NAMES`` and ``VIEW_NAMES`` are
computed on first use, so the families of other packages (entry points) are loaded only when a name is
asked for."""

from __future__ import annotations

from .families import specs

__all__ = ["PROFILE_NAMES", "VIEW_NAMES", "profile_names", "view_names", "profile_views", "view_release", "names_help", "views_table"]


def profile_names() -> tuple[str, ...]:
    return tuple(spec.name for spec in specs())


def view_names() -> tuple[str, ...]:
    """Every view some profile has, in the order the families declare them."""
    return tuple(dict.fromkeys(name for spec in specs() for name in spec.views))


def __getattr__(name: str):
    if name == "PROFILE_NAMES":
        return profile_names()
    if name == "VIEW_NAMES":
        return view_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def profile_views(profile: str) -> tuple[str, ...]:
    """The views a profile has (empty for an unknown profile)."""
    return next((tuple(spec.views) for spec in specs() if spec.name == profile), ())


def view_release(profile: str | None, view: str) -> str | None:
    """The engine release a profile's view stands for (``"vllm 0.33.0"``), or None for an unknown one."""
    spec = next((spec for spec in specs() if spec.name == profile), None)
    found = spec.views.get(view) if spec is not None else None
    return f"{found.engine} {found.version}" if found is not None else None


def names_help(kind: str = "profile") -> str:
    """The registered names for a command's help text: ``"kimi-k2.5, kimi-k2, chatml, ..."``."""
    return ", ".join(profile_names() if kind == "profile" else view_names())


def _parsers_cell(view) -> str:
    if view is None:
        return "—"
    if not (view.reasoning_parser or view.tool_parser):
        return "no parsers"
    cell = " / ".join(f"`{name}`" if name else "—" for name in (view.reasoning_parser, view.tool_parser))
    return f"{cell} ({view.note})" if view.note else cell


def views_table() -> str:
    """The table of every registered profile's parsers in its ``sglang`` and ``vllm`` views, as docs/views.md
    shows it (markdown; the docs test checks the page holds exactly this)."""
    from .engines.view import SGLANG_VERSION, VLLM_OLDER, VLLM_VERSION

    older = ", ".join(f"`vllm-{'.'.join(v.split('.')[:2])}` ({v})" for v in VLLM_OLDER)
    lines = [f"| profile | `sglang` ({SGLANG_VERSION}) | `vllm` ({VLLM_VERSION}){', ' + older if older else ''} |", "|---|---|---|"]
    for spec in specs():
        lines.append(f"| `{spec.name}` | {_parsers_cell(spec.views.get('sglang'))} | {_parsers_cell(spec.views.get('vllm'))} |")
    return "\n".join(lines) + "\n"

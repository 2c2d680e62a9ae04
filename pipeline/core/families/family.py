"""A model family as one object, and the one registry of them.

A ``Family`` holds everything tokfidelity knows of one model family:

* its profiles (``ProfileSpec``): each with its marker texts, its output format (a ``ToolCallFormat``
  template, or its own layout, ``OwnLayout``, as gpt-oss has), its prompt renderer (``prompt_renderer``:
  the model's chat template, or openai-harmony), its marker cross-check (``bind_profile`` checks every
  marker is one special id; an ``OwnLayout.bind`` checks what its layout needs) and its views (the
  engines serving it, their parsers by the servers' own names);
* ``parsers``: the modules that register its engines' view parsers (``pipeline.core.engines.registry``),
  imported when one of its views is first bound;
* ``cases``: its case generator (``"module:attribute"``), the one writer of outputs in the family's layout that
  the golden scripts and the differential tests both use (``pipeline.cases``); imported on demand, it is
  not verdict code.

The families shipped with tokfidelity are the modules of ``BUILTIN``; other packages add theirs through
the entry-point group ``tokfidelity.families`` (each entry point names a ``Family`` object, or a module
holding one as ``FAMILY``). Every name list (profiles, views, parsers, test parametrizations, help texts)
is read from ``families()``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import TokfidelityError
from .spec import ProfileSpec

__all__ = ["Family", "ENTRY_POINT_GROUP", "BUILTIN", "families", "family_of", "specs", "FamilyError"]

ENTRY_POINT_GROUP = "tokfidelity.families"
# The families shipped here, by module under pipeline.core.families: the one list of them.
BUILTIN = ("kimi", "chatml", "qwen3", "deepseek_v3", "gpt_oss", "deepseek_v31", "deepseek_v32", "llama3", "qwen3_coder")


class FamilyError(TokfidelityError, ValueError):
    """A family that cannot be registered: a bad entry point, or a profile name two families claim."""


@dataclass(frozen=True)
class Family:
    name: str
    specs: tuple[ProfileSpec, ...]
    module: str  # the module defining the family (``__name__``): fingerprinted by every gate that judged it
    parsers: tuple[str, ...] = ()  # modules registering its view parsers, absolute names
    cases: str | None = None  # its case generator, "module:attribute" (a pipeline.cases.CaseGenerator)
    description: str = ""

    @property
    def profiles(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.specs)

    def load_parsers(self, registry: ModuleType | None = None) -> None:
        """Import the modules that register this family's view parsers, and register their parsers in
        ``registry`` (the caller's ``pipeline.core.engines.registry``: the one it will look them up in)."""
        if registry is None:
            from ..engines import registry
        for name in self.parsers:
            registry.register_module(importlib.import_module(name))

    def case_generator(self) -> Any:
        """The one writer of outputs in this family's layout (``write``, ``random_output``); a LookupError
        when the family declares none."""
        if self.cases is None:
            raise LookupError(f"family {self.name} declares no case generator")
        module, _, attr = self.cases.partition(":")
        found = importlib.import_module(module)
        return getattr(found, attr) if attr else found

    def source_modules(self) -> tuple[tuple[str, Path], ...]:
        """(module name, file) of the family's own code: its module and its parser modules (what a gate
        that judged the family pins)."""
        out = {}
        for name in (self.module, *self.parsers):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                out.setdefault(name, Path(spec.origin).resolve())
        return tuple(out.items())


def _as_family(obj: Any, where: str) -> Family:
    family = getattr(obj, "FAMILY", obj) if isinstance(obj, ModuleType) else obj
    if not isinstance(family, Family):
        raise FamilyError(f"{where}: not a tokfidelity Family (a pipeline.core.families.Family object, or a module "
                          f"holding one as FAMILY), but {type(family).__name__}")
    return family


def _entry_point_families() -> list[Family]:
    from importlib.metadata import entry_points

    out = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        where = f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}, from {getattr(ep.dist, 'name', '?')})"
        try:
            loaded = ep.load()
        except Exception as e:  # noqa: BLE001: any import failure of a plugin is reported as its own
            raise FamilyError(f"{where}: cannot be loaded: {type(e).__name__}: {e}") from e
        out.append(_as_family(loaded, where))
    return out


@functools.cache
def families() -> tuple[Family, ...]:
    """Every registered family: the built-in ones in ``BUILTIN``'s order, then other packages' by entry-point
    name. A profile name claimed by two families is an error naming both."""
    found = [_as_family(importlib.import_module(f"{__package__}.{m}"), f"{__package__}.{m}") for m in BUILTIN]
    found += [f for f in _entry_point_families() if f.module not in {b.module for b in found}]
    owner: dict[str, Family] = {}
    for family in found:
        for profile in family.profiles:
            if profile in owner:
                raise FamilyError(f"profile {profile!r} is declared by family {owner[profile].name} ({owner[profile].module}) "
                                  f"and by family {family.name} ({family.module})")
            owner[profile] = family
    return tuple(found)


def specs() -> tuple[ProfileSpec, ...]:
    """Every profile of every registered family, in the families' order."""
    return tuple(spec for family in families() for spec in family.specs)


def family_of(profile: str) -> Family | None:
    """The family declaring this profile, or None."""
    return next((f for f in families() if profile in f.profiles), None)

"""The model families tokfidelity knows, each one ``Family`` object (``family.py``): the built-in ones
named in ``family.BUILTIN``, and those other packages add through the entry-point group
``tokfidelity.families``. ``families()`` is the one registry every name list is read from."""

from __future__ import annotations

from .family import BUILTIN, ENTRY_POINT_GROUP, Family, FamilyError, families, family_of, specs
from .spec import OwnLayout, ProfileSpec, ToolCallFormat

__all__ = ["Family", "FamilyError", "ProfileSpec", "ToolCallFormat", "OwnLayout", "BUILTIN", "ENTRY_POINT_GROUP",
           "families", "family_of", "specs"]

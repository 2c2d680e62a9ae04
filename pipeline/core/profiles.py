"""Model turn formats ("profiles"): data, plus the little code that binds them to a tokenizer.

A profile names the marker texts of a model's assistant turn. Ids are never written here:
``bind_profile`` encodes each marker's text through the tokenizer and checks the result
against the tokenizer's special-token table, so a wrong id cannot be configured by hand.
Each family's specs live in its ``Family`` object (``pipeline.core.families``, the one registry);
adding a model is a family module there (marker texts, stop texts, tool-call template as data, and its
views: the engines serving it, by their parsers' names, ``pipeline.core.engines``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .errors import TokfidelityError
from .families import specs
from .families.spec import OUTPUT_ROLES, ProfileSpec, ToolCallFormat
from .tokenizer import Tokenizer

__all__ = ["ProfileSpec", "ToolCallFormat", "Profile", "ProfileError", "PROFILES", "OUTPUT_ROLES", "get_profile_spec", "bind_profile"]



def __getattr__(name: str):
    if name == "PROFILES":  # every registered profile by name, read from the family registry on use
        return {spec.name: spec for spec in specs()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ProfileError(TokfidelityError, ValueError):
    """A profile does not fit its tokenizer (a marker is not exactly one special id)."""


def get_profile_spec(name: str) -> ProfileSpec:
    found = next((spec for spec in specs() if spec.name == name), None)
    if found is None:
        raise ProfileError(f"unknown profile {name!r}; known profiles: {', '.join(sorted(s.name for s in specs()))}")
    return found


@dataclass(frozen=True)
class Profile:
    """A profile bound to one tokenizer: every marker role has its verified id."""

    spec: ProfileSpec
    ids: Mapping[str, int]  # role -> id, output and prompt markers alike
    texts: Mapping[str, str]  # role -> marker text

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def stop_id(self) -> int:
        """The stop token reconstruction appends: the first of ``stop_ids``."""
        return self.ids["stop"]

    @functools.cached_property
    def stop_ids(self) -> tuple[int, ...]:
        """Every id the engine stops on, the main one first (Qwen3: <|im_end|>, <|endoftext|>)."""
        return (self.ids["stop"], *(self.ids[f"stop.{n}"] for n in range(2, len(self.spec.stop_texts) + 1)))

    @functools.cached_property
    def texts_key(self) -> tuple[tuple[str, str], ...]:
        """The marker texts as a hashable key (role, text), sorted: for caches of what depends on them."""
        return tuple(sorted(self.texts.items()))

    @functools.cached_property
    def bound_views(self) -> dict:
        """This profile's views bound to its markers, by name (filled by ``pipeline.core.views``)."""
        return {}

    @property
    def marker_ids(self) -> frozenset[int]:
        return frozenset(self.ids.values())

    def tool_call_id(self, api_id: str | None, name: str, index: int) -> str:
        """The call id as the model wrote it: the API's id when it has the model's shape, else rebuilt."""
        spec = self.spec
        if api_id and spec.tool_call_id_pattern and re.fullmatch(spec.tool_call_id_pattern, api_id):
            return api_id
        if spec.tool_call_id_template is None:
            return api_id or ""
        return spec.tool_call_id_template.format(name=name, index=index)

    def with_ids(self, **overrides: int) -> "Profile":
        """A copy with some ids replaced, bypassing the checks: to model a misconfigured pipeline."""
        return Profile(self.spec, {**self.ids, **overrides}, self.texts)


def marker_id(tokenizer: Tokenizer, text: str) -> int:
    """The one id a marker text encodes to, checked against the special-token table."""
    ids = tokenizer.encode(text)
    if len(ids) != 1:
        raise ProfileError(
            f"marker {text!r} encodes to {len(ids)} ids {ids} with tokenizer {tokenizer.name} "
            f"({tokenizer.source}), not one special id: the tokenizer does not match this profile"
        )
    (token_id,) = ids
    table_id = tokenizer.special_tokens.get(text)
    if table_id != token_id:
        raise ProfileError(
            f"marker {text!r} encodes to {token_id} but the special-token table of {tokenizer.name} "
            f"says {table_id}: the tokenizer files disagree with each other"
        )
    return token_id


def bind_profile(spec: ProfileSpec | str, tokenizer: Tokenizer) -> Profile:
    """Resolve every marker of a profile to its id through the tokenizer, or raise ProfileError."""
    if isinstance(spec, str):
        spec = get_profile_spec(spec)
    texts = marker_texts(spec)
    ids = {role: marker_id(tokenizer, text) for role, text in texts.items()}
    profile = Profile(spec, ids, texts)
    if spec.own_layout is not None:
        try:
            spec.own_layout.bind(profile, tokenizer)
        except ValueError as e:
            raise ProfileError(f"profile {spec.name} with tokenizer {tokenizer.name}: {e}") from None
    return profile


def marker_texts(spec: ProfileSpec) -> dict[str, str]:
    """Every marker role of a spec and its text: prompt roles as ``prompt.ROLE``, further stop tokens
    as ``stop.2``, ``stop.3``, ..."""
    extra = {f"stop.{n}": text for n, text in enumerate(spec.extra_stops, 2)}
    return {**{f"prompt.{r}": t for r, t in spec.prompt_markers.items()}, **spec.markers, **extra}

"""Case generators: each family's one writer of output ids in the family's layout, as the model writes
them (text runs as ordinary tokens, structure as the profile's marker ids), independently of
reconstruction. The golden-set scripts and the differential and round-trip tests all write outputs
through these modules; a family names its own (``pipeline.core.families.Family.cases``).

Not verdict code: nothing in ``pipeline.core`` imports this package, and the gate does not pin it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CaseGenerator"]


@dataclass(frozen=True)
class CaseGenerator:
    """What a family's case generator offers: ``write(tokenizer, profile, turn, *, stop=True) -> ids``, the
    turn (``reasoning``, ``content``, ``calls``: (name or call id, arguments text) pairs) laid out as the
    model writes it; ``random_output(tokenizer, profile, rng) -> (ids, finish_reason, ...)``, a varied
    output for the differential tests."""

    write: Callable
    random_output: Callable

"""What ``diagnose`` finds: the hunks of one divergence, each with its class, and the report for people.

A ``Diagnosis`` holds every hunk (an aligned block where the golden and rebuilt ids differ) with its
class, whether the decoded bytes of the whole sequences are equal, and the window of tokens around
the first hunk on both sides. ``render()`` is the text report a failing test prints (reviewed
snapshots keep ``signature()``); its advice comes from the class records
(``divergence_classes.py``), most severe class first. Equal sequences give a Diagnosis with no hunks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .divergence_classes import ADVICE, CLASSES, by_severity
from .token_windows import WindowToken

__all__ = ["Hunk", "Diagnosis"]

_HUNK_LIST_LIMIT = 20  # render() lists at most this many hunks
_HUNK_IDS_SHOWN = 8  # ids per side shown for one hunk in render()


@dataclass(frozen=True, slots=True)
class Hunk:
    """One aligned block where the sequences differ: golden[golden_start:golden_end] became
    reconstructed[recon_start:recon_end]."""

    golden_start: int
    golden_end: int
    recon_start: int
    recon_end: int
    cls: str
    text_preserving: bool  # the class keeps the text (only the split differs)


@dataclass
class Diagnosis:
    """Every divergent hunk of one sample, classified, with the first hunk's windows; see the module."""

    golden_len: int
    recon_len: int
    hunks: list[Hunk]
    texts_identical: bool  # the decoded bytes of the whole sequences are equal
    tokenizer_name: str = ""
    golden_ids: Sequence[int] = field(default=(), repr=False, compare=False)
    recon_ids: Sequence[int] = field(default=(), repr=False, compare=False)
    token_text: Callable[[int], str] = field(default=str, repr=False, compare=False)
    # makes (golden_window, recon_window) on first use: a sample the policy accepts is never reported, and
    # never needs them (the windows cost about as much as classifying its hunks)
    windows: Callable[[], tuple[list[WindowToken], list[WindowToken]]] | None = field(default=None, repr=False, compare=False)
    _windows: tuple[list[WindowToken], list[WindowToken]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def golden_window(self) -> list[WindowToken]:
        """The golden tokens around the first hunk (empty when the sequences are equal)."""
        return self._made_windows()[0]

    @property
    def recon_window(self) -> list[WindowToken]:
        """The reconstructed tokens around the first hunk (empty when the sequences are equal)."""
        return self._made_windows()[1]

    def _made_windows(self) -> tuple[list[WindowToken], list[WindowToken]]:
        if self._windows is None:
            self._windows = self.windows() if self.windows is not None else ([], [])
        return self._windows

    @property
    def first_index(self) -> int | None:
        """The first index where the sequences differ (the same in both), None when equal."""
        return self.hunks[0].golden_start if self.hunks else None

    @property
    def classes(self) -> list[str]:
        """Distinct hunk classes, in order of first appearance."""
        return list(dict.fromkeys(h.cls for h in self.hunks))

    @property
    def headline(self) -> str | None:
        """The most severe hunk's class: what the sample is reported as."""
        return by_severity(h.cls for h in self.hunks)[0] if self.hunks else None

    @property
    def harmless(self) -> bool:
        """Every hunk keeps the text (only splits differ)."""
        return all(h.text_preserving for h in self.hunks)

    def class_counts(self) -> dict[str, int]:
        counts = Counter(h.cls for h in self.hunks)
        return {c: counts[c] for c in CLASSES if counts[c]}

    def signature(self) -> dict:
        """Compact, stable, JSON-able summary for reviewed snapshots."""
        if not self.hunks:
            return {"hunks": 0}
        return {
            "classes": [h.cls for h in self.hunks],
            "first_index": self.first_index,
            "texts_identical": self.texts_identical,
            "golden_window": [t.id for t in self.golden_window],
            "recon_window": [t.id for t in self.recon_window],
            # each window token's text, so a reviewer reads the snapshot without a tokenizer
            "golden_text": [t.text for t in self.golden_window],
            "recon_text": [t.text for t in self.recon_window],
        }

    def render(self) -> str:
        """The report for people."""
        if not self.hunks:
            return f"no divergence: both sequences are the same {self.golden_len} ids"
        counts = ", ".join(f"{c} x{n}" for c, n in self.class_counts().items())
        lines = [
            f"divergence: {self.headline}; {len(self.hunks)} hunk(s) [{counts}]; first at index {self.first_index} "
            f"(golden {self.golden_len} ids, reconstructed {self.recon_len} ids)",
            "decoded texts: "
            + (
                "identical (only the split differs)"
                if self.texts_identical and self.harmless
                else "identical bytes, but ids of different kinds (special vs ordinary)"
                if self.texts_identical
                else "DIFFER (the text itself changed)"
            ),
            "hunks:",
        ]
        golden, recon = self.golden_ids, self.recon_ids
        for n, h in enumerate(self.hunks[:_HUNK_LIST_LIMIT], 1):
            lines.append(
                f"  #{n} {h.cls}: golden[{h.golden_start}:{h.golden_end}] {self._ids_brief(golden[h.golden_start:h.golden_end])}"
                f" -> reconstructed[{h.recon_start}:{h.recon_end}] {self._ids_brief(recon[h.recon_start:h.recon_end])}"
            )
        if len(self.hunks) > _HUNK_LIST_LIMIT:
            lines.append(f"  ... and {len(self.hunks) - _HUNK_LIST_LIMIT} more hunk(s)")
        for title, window in (("golden", self.golden_window), ("reconstructed", self.recon_window)):
            if not window:
                continue
            lines.append(f"first hunk, {title} ids {window[0].index}..{window[-1].index} (> marks the hunk):")
            lines.append(f"  {'':1} {'index':>6} {'id':>7}  {'alone':<24} {'in context':<24} context check")
            for prev, t in zip([None, *window], window):
                if prev is not None and t.index != prev.index + 1:
                    lines.append(f"  > {'...':>6} ({t.index - prev.index - 1} more tokens of the hunk)")
                check = "ok" if t.context_ok else "DIFFERS: decode(prefix)+decode([id]) != decode(prefix+[id])"
                lines.append(
                    f"  {'>' if t.in_hunk else ' '} {t.index:>6} {t.id:>7}  {_show(t.text):<24} {_show(t.context_text):<24} {check}"
                )
        lines.append("what to do (most severe first):")
        for c in by_severity(self.classes):
            lines.append(f"  {c}: {ADVICE[c]}")
        return "\n".join(lines)

    def _ids_brief(self, ids: Sequence[int]) -> str:
        shown = " ".join(f"{i} {_show(self.token_text(i))}" for i in ids[:_HUNK_IDS_SHOWN])
        more = f" ... +{len(ids) - _HUNK_IDS_SHOWN} more" if len(ids) > _HUNK_IDS_SHOWN else ""
        return f"[{shown}{more}]"


def _show(text: str) -> str:
    """A token's text, quoted and escaped so whitespace and control bytes are visible."""
    r = repr(text)
    return r if len(r) <= 24 else r[:21] + "..."

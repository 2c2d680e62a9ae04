"""Per-sample details for the report: what a diagnosis becomes in results.json.

``SampleDetails`` is the ``explain`` callback of ``pipeline.core.fidelity.Judge``: the judge calls
it on every diagnosed (non-exact) sample, where the diagnosis and the tokenizer are at hand, and
the plain dict it returns travels with the verdict (across judging processes and xdist workers).

Every sample gets its classes and hunk spans (for counts, filters and the position chart). The
token windows around each hunk (the side-by-side view) are made for every sample whose text
changed, and for only the first ``detail_limit`` text-preserving ones in each process: at 40,000
samples of which nearly all hold a harmless re-split, windows for all would be hundreds of MB.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from pipeline.core.diagnosis import Diagnosis
from pipeline.core.token_windows import WindowToken, token_windows
from pipeline.core.golden import GoldenSample
from pipeline.core.profiles import Profile
from pipeline.core.tokenizer import Tokenizer

__all__ = ["SampleDetails", "DETAIL_LIMIT", "HUNK_LIMIT", "HUNKS_DETAILED", "HUNK_IDS_SHOWN"]

DETAIL_LIMIT = 300  # text-preserving samples with token windows, per dataset (and per process)
HUNK_LIMIT = 100  # hunk spans listed per sample (hunk_count says how many there were)
HUNKS_DETAILED = 20  # hunks per sample with ids and a token window
HUNK_IDS_SHOWN = 24  # ids per side listed for one hunk


class SampleDetails:
    """Judge's ``explain``: one sample's diagnosis as plain, JSON-able data."""

    def __init__(self, tokenizer: Tokenizer, profile: Profile, detail_limit: int = DETAIL_LIMIT):
        self.tokenizer = tokenizer
        self.special = tokenizer.special_ids | profile.marker_ids
        self.detail_limit = detail_limit
        self._detailed = 0
        self._lock = threading.Lock()

    def _take_detail_slot(self) -> bool:
        with self._lock:
            if self._detailed >= self.detail_limit:
                return False
            self._detailed += 1
            return True

    def __call__(self, sample: GoldenSample, diagnosis: Diagnosis, kind: str, *, force: bool = False) -> dict[str, Any]:
        hunks = diagnosis.hunks
        detailed = force or not diagnosis.harmless or self._take_detail_slot()
        out: dict[str, Any] = {
            "id": sample.id,
            "line": sample.line,
            "finish_reason": sample.finish_reason,
            "tokens": diagnosis.golden_len,
            "rebuilt_tokens": diagnosis.recon_len,
            "texts_identical": diagnosis.texts_identical,
            "classes": diagnosis.classes,
            "hunk_count": len(hunks),
            "hunks": [
                {"class": h.cls, "golden": [h.golden_start, h.golden_end], "rebuilt": [h.recon_start, h.recon_end],
                 "text_preserving": h.text_preserving}
                for h in hunks[:HUNK_LIMIT]
            ],
            "detail": detailed,
        }
        self._add_ids(out["hunks"][:HUNKS_DETAILED], diagnosis)
        if detailed:
            self._add_windows(out["hunks"][:HUNKS_DETAILED], diagnosis)
        return out

    def _add_ids(self, hunks: list[dict[str, Any]], diagnosis: Diagnosis) -> None:
        """Every sample: the ids of each hunk, and each id's text (what a reviewed snapshot shows)."""
        golden, rebuilt, text = diagnosis.golden_ids, diagnosis.recon_ids, self._text
        for h in hunks:
            (gs, ge), (rs, re) = h["golden"], h["rebuilt"]
            h["golden_ids"] = list(golden[gs : min(ge, gs + HUNK_IDS_SHOWN)])
            h["rebuilt_ids"] = list(rebuilt[rs : min(re, rs + HUNK_IDS_SHOWN)])
            h["golden_text"] = [text(i) for i in h["golden_ids"]]
            h["rebuilt_text"] = [text(i) for i in h["rebuilt_ids"]]

    def _text(self, token_id: int) -> str:
        return self.tokenizer.token_text(token_id) if self.tokenizer.is_valid_id(token_id) else ""

    def _add_windows(self, hunks: list[dict[str, Any]], diagnosis: Diagnosis) -> None:
        g_windows = token_windows(diagnosis.golden_ids, self.tokenizer, [tuple(h["golden"]) for h in hunks])
        r_windows = token_windows(diagnosis.recon_ids, self.tokenizer, [tuple(h["rebuilt"]) for h in hunks])
        for h, gw, rw in zip(hunks, g_windows, r_windows):
            h["window"] = {"golden": self._tokens(gw), "rebuilt": self._tokens(rw)}

    def _tokens(self, window: Sequence[WindowToken]) -> list[dict[str, Any]]:
        out = []
        for t in window:
            token = {"i": t.index, "id": t.id, "text": t.text, "ctx": t.context_text, "ok": t.context_ok, "hunk": t.in_hunk}
            if t.id in self.special:
                token["special"] = True
            raw = self.tokenizer.token_bytes(t.id) if self.tokenizer.is_valid_id(t.id) else b""
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:  # shown as bytes: U+FFFD in the text would hide which ones
                token["bytes"] = raw.hex()
            out.append(token)
        return out

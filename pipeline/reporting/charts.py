"""Inline SVG charts for the report: hunks by class (stacked by verdict), and where in the output
divergences fall (relative position, stacked by class). Plain strings, no library, no script."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from pipeline.core.divergence_classes import CLASSES

__all__ = ["CLASS_COLOURS", "VERDICT_COLOURS", "class_chart", "position_chart", "class_hunks", "position_bins"]

_PALETTE = ("#d62728", "#9467bd", "#7f9fbf", "#e377c2", "#17becf", "#ff7f0e", "#bcbd22", "#8c564b", "#2ca02c", "#555555",
            "#1f77b4", "#a05a2c", "#6b8e23", "#c71585")
CLASS_COLOURS = {c: _PALETTE[i % len(_PALETTE)] for i, c in enumerate(CLASSES)}
VERDICT_COLOURS = {"new": "#d62728", "known": "#e6a700", "policy": "#7f9fbf", "bad-input": "#555555"}
POSITION_BINS = 20


def class_hunks(samples: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """class -> verdict -> hunks (from the hunks each sample lists)."""
    out: dict[str, dict[str, int]] = {}
    for s in samples:
        for h in s.get("hunks", ()):
            by_verdict = out.setdefault(h["class"], {})
            by_verdict[s["verdict"]] = by_verdict.get(s["verdict"], 0) + 1
    return out


def position_bins(samples: Iterable[Mapping[str, Any]], bins: int = POSITION_BINS) -> list[dict[str, int]]:
    """Per bin of relative position in the golden output (start of each hunk): class -> hunks."""
    out: list[dict[str, int]] = [{} for _ in range(bins)]
    for s in samples:
        n = s.get("tokens") or 0
        if n <= 0:
            continue
        for h in s.get("hunks", ()):
            b = min(bins - 1, h["golden"][0] * bins // n)
            out[b][h["class"]] = out[b].get(h["class"], 0) + 1
    return out


def _rect(x: float, y: float, w: float, h: float, colour: str, title: str) -> str:
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" fill="{colour}">'
            f"<title>{escape(title)}</title></rect>")


def class_chart(data: Mapping[str, Mapping[str, int]], verdicts: Sequence[str]) -> str:
    """Horizontal bars, one per class, segments per verdict."""
    classes = [c for c in CLASSES if c in data] + sorted(c for c in data if c not in CLASSES)
    if not classes:
        return '<p class="empty">no divergent hunks</p>'
    # A log scale: at 40,000 samples re-splits outnumber every other class by a thousand to one.
    top = math.log10(1 + max(sum(data[c].values()) for c in classes))
    label_w, bar_w, row_h = 150, 420, 22
    height = row_h * len(classes) + 30
    parts = [f'<svg class="chart" id="chart-classes" role="img" aria-label="hunks by class" width="{label_w + bar_w + 70}" '
             f'height="{height}" viewBox="0 0 {label_w + bar_w + 70} {height}">']
    for row, cls in enumerate(classes):
        y = row * row_h + 4
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(cls)}</text>')
        x = float(label_w)
        total = sum(data[cls].values())
        length = bar_w * math.log10(1 + total) / top  # the bar's length is log-scaled; its segments share it by count
        for v in verdicts:
            n = data[cls].get(v, 0)
            if n:
                w = length * n / total
                parts.append(_rect(x, y, w, row_h - 6, VERDICT_COLOURS.get(v, "#999"), f"{cls}: {n} hunk(s) in {v} samples"))
                x += w
        parts.append(f'<text x="{x + 4:.1f}" y="{y + 14}">{sum(data[cls].values()):,}</text>')
    y = len(classes) * row_h + 18
    x = float(label_w)
    for v in verdicts:
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{VERDICT_COLOURS.get(v, "#999")}"/>'
                     f'<text x="{x + 14}" y="{y}">{escape(v)}</text>')
        x += 90
    parts.append("</svg>")
    return "".join(parts)


def position_chart(bins: Sequence[Mapping[str, int]]) -> str:
    """Vertical bars: hunks per 1/len(bins) of the output, stacked by class."""
    top = max((sum(b.values()) for b in bins), default=0)
    if not top:
        return '<p class="empty">no divergent hunks</p>'
    left, plot_w, plot_h = 50, 560, 160
    bar = plot_w / len(bins)
    present = [c for c in CLASSES if any(c in b for b in bins)] + sorted({c for b in bins for c in b} - set(CLASSES))
    legend_rows = (len(present) + 3) // 4
    width, height = left + plot_w + 30, plot_h + 48 + 16 * legend_rows
    parts = [f'<svg class="chart" id="chart-positions" role="img" aria-label="hunks by position in the output" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
             f'<text x="{left - 6}" y="12" text-anchor="end">{top:,}</text>',
             f'<text x="{left - 6}" y="{plot_h + 4}" text-anchor="end">0</text>',
             f'<line x1="{left}" y1="{plot_h + 4}" x2="{left + plot_w}" y2="{plot_h + 4}" stroke="#888"/>']
    for i, b in enumerate(bins):
        y = plot_h + 4.0
        for cls in [c for c in CLASSES if c in b] + sorted(c for c in b if c not in CLASSES):
            h = plot_h * b[cls] / top
            y -= h
            lo, hi = 100 * i // len(bins), 100 * (i + 1) // len(bins)
            parts.append(_rect(left + i * bar + 1, y, bar - 2, h, CLASS_COLOURS.get(cls, "#999"),
                               f"{cls}: {b[cls]} hunk(s) at {lo}-{hi}% of the output"))
    for pct in (0, 25, 50, 75, 100):
        parts.append(f'<text x="{left + plot_w * pct / 100:.0f}" y="{plot_h + 20}" text-anchor="middle">{pct}%</text>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{plot_h + 36}" text-anchor="middle">'
                 "position of the hunk in the golden output</text>")
    for k, cls in enumerate(present):
        x, y = left + (k % 4) * 140, plot_h + 56 + 16 * (k // 4)
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{CLASS_COLOURS.get(cls, "#999")}"/>'
                     f'<text x="{x + 14}" y="{y}">{escape(cls)}</text>')
    parts.append("</svg>")
    return "".join(parts)

"""The dataset x view table of exact rates, from one or more results.json files.

``scripts/main`` judges every shipped dataset under its manifest's view and again under ``vllm``, each
run writing its own results.json; this prints one table of both: each cell is the share of the
dataset's samples whose ids the view's text rebuilds exactly (``exact / samples``).

    python -m pipeline.reporting.views_table .tokfidelity/report/results.json .tokfidelity/report-vllm/results.json
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .results import read_results
from .schema import ResultsError

__all__ = ["exact_rates", "views_table", "main"]


def exact_rates(docs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, tuple[int, int]]]:
    """dataset -> view -> (exact, samples), over checked results documents (a later file's cell wins)."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for doc in docs:
        for d in doc["datasets"]:
            by_view = d.get("by_view") or {d.get("view") or "?": {"counts": d["counts"]}}  # files before by_view
            cells = out.setdefault(d["name"], {})
            for view, entry in by_view.items():
                cells[view] = (entry["counts"]["exact"], entry["counts"]["samples"])
    return out


def views_table(rates: Mapping[str, Mapping[str, tuple[int, int]]], views: Sequence[str] = ()) -> str:
    """A Markdown table: a row per dataset, a column per view (``views`` first, in that order)."""
    columns = list(dict.fromkeys([*views, *(v for cells in rates.values() for v in cells)]))
    lines = ["| dataset | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, cells in rates.items():
        row = []
        for view in columns:
            exact, samples = cells.get(view, (0, 0))
            row.append(f"{exact / samples:.1%} ({exact}/{samples})" if samples else "–")
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        print("usage: python -m pipeline.reporting.views_table RESULTS.json [RESULTS.json ...]", file=sys.stderr)
        return 2
    try:
        docs = [read_results(p) for p in paths]
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(views_table(exact_rates(docs), ("sglang", "vllm")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""tokfidelity report: redraw report.html (and a merged results.json) from one or more results.json."""

from __future__ import annotations

import sys

from ..cli import EXIT_OK, EXIT_FAILED

HELP = "Draw report.html from results.json files (several, e.g. CI shards, are merged)."


def add_arguments(p):
    p.add_argument("results", nargs="+", metavar="RESULTS.json", help="results.json written by pytest --tokfidelity-report")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for report.html and the (merged) results.json")


def run(args) -> int:
    from ..reporting.results import merge_results, read_results, write_outputs
    from ..reporting.schema import ResultsError

    try:
        docs = [(path, read_results(path)) for path in args.results]
        doc = docs[0][1] if len(docs) == 1 else merge_results(docs)
        written = write_outputs(doc, args.out)
    except ResultsError as e:
        print(f"tokfidelity report: {e}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as e:
        print(f"tokfidelity report: cannot write to {args.out}: {e.strerror or e}", file=sys.stderr)
        return EXIT_FAILED
    samples = sum(d["samples_run"] for d in doc["datasets"])
    print(f"{len(doc['datasets'])} dataset(s), {samples:,} samples run, {len(doc['samples']):,} not exact"
          + (" (PARTIAL: " + "; ".join(doc["partial_reasons"] or ["not every sample run"]) + ")" if doc["partial"] else ""))
    for path in written:
        print(path)
    return EXIT_OK

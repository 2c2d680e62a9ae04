"""tokfidelity gate: is a dataset's verification gate open? (check), what does its record say? (show),
and open it from the shard records of a CI matrix (merge)."""

from __future__ import annotations

import json
import sys

from ..cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE

HELP = "Check or show the gate record that a green fidelity suite writes for a dataset."


def add_arguments(p):
    sub = p.add_subparsers(dest="gate_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="exit 0 when the gate is open, 1 when closed (says why)")
    show = sub.add_parser("show", help="print the stored record of a dataset as JSON")
    merge = sub.add_parser(
        "merge", help="open the gate from the N shard records of `pytest --tokfidelity-shard=I/N` runs gathered in the state dir "
        "(exit 0 open; 1 closed, naming the missing, failed, duplicated or mismatched shard)",
    )
    for q in (check, show, merge):
        q.add_argument("--dataset", required=True, help="dataset folder NAME (or the NAME in NAME_*)")
        q.add_argument("--golden-dir", default=None, help="golden datasets folder (default: ./golden, else the project's)")
        q.add_argument("--state-dir", default=None, help="gate records folder (default: $TOKFIDELITY_STATE_DIR or .tokfidelity)")
    check.add_argument("--tokenizer", default=None, help="tokenizer path or name (default: the manifest's)")
    check.add_argument("--reconstruct", default=None, metavar="NAME",
                       help="the project's own reconstruction you build with, named as the record names it (MODULE:FUNCTION, "
                       "or conftest.py::pytest_tokfidelity_reconstruct); default: tokfidelity's own")
    check.add_argument("--render", default=None, metavar="NAME",
                       help="the project's own prompt rendering you build with, named as the record names it; default: the model's template")


def run(args) -> int:
    from ..core.gate import check_gate, default_golden_dir, read_record, resolve_dataset_dir
    from ..core.shards import merge_shards

    if args.gate_command == "merge":
        try:
            merged = merge_shards(args.dataset, golden_dir=args.golden_dir, state_dir=args.state_dir)
        except OSError as e:  # a read-only or full state dir: the gate keeps the record it had
            from ..core.files import os_error_message

            print(f"tokfidelity gate merge: the gate of {args.dataset} is unchanged: its record cannot be written: "
                  f"{os_error_message(e)}", file=sys.stderr)
            return EXIT_FAILED
        if not merged.open:
            return _closed(merged, "merge")
        print(merged.message)
        record = read_record(args.state_dir, merged.dataset) or {}  # the code its shards judged (a project's own, or tokfidelity's)
        status = check_gate(args.dataset, golden_dir=args.golden_dir, state_dir=args.state_dir,
                            reconstructor=record.get("reconstructor"), renderer=record.get("renderer"))
        if not status.open:
            return _closed(status, "merge")
        print(status.message)
        return EXIT_OK

    if args.gate_command == "show":
        try:
            name = resolve_dataset_dir(args.golden_dir or default_golden_dir(), args.dataset).name
        except ValueError:
            name = args.dataset
        record = read_record(args.state_dir, name)
        if record is None:
            print(f"tokfidelity gate show: no record for {name}", file=sys.stderr)
            return EXIT_FAILED
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return EXIT_OK

    status = check_gate(args.dataset, golden_dir=args.golden_dir, tokenizer=args.tokenizer, state_dir=args.state_dir,
                        reconstructor=args.reconstruct, renderer=args.render)
    if status.open:
        print(status.message)
        return EXIT_OK
    return _closed(status, "check")


def _closed(status, action: str) -> int:
    """Say why the gate is closed and the one thing to do next; an unknown dataset is a usage error."""
    if status.unknown:
        print(f"tokfidelity gate {action}: --dataset: {status.message}\nnext: {status.next_step}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{status.message}\nnext: {status.next_step}", file=sys.stderr)
    return EXIT_FAILED

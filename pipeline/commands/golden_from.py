"""tokfidelity golden-from: the records of a generate run that carry the engine's ids, as a golden dataset."""

from __future__ import annotations

import sys
from pathlib import Path

from ..cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE

HELP = "Write the engine-id records of a `tokfidelity generate` folder (return_token_ids) as a golden dataset."


def add_arguments(p):
    p.add_argument("--generations", required=True, help="a `tokfidelity generate` --out folder (run.json + generations.jsonl)")
    p.add_argument("--dataset", required=True, help="dataset folder name to write, e.g. vllm-bulk")
    p.add_argument("--out", default="golden", help="golden dir to write into (default: golden/)")


def run(args) -> int:
    from ..stages.engine_golden import golden_from_generations

    source = Path(args.generations)
    if not (source / "run.json").is_file():
        print(f"tokfidelity golden-from: {source} is not a `tokfidelity generate` output folder (no run.json)", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = golden_from_generations(source, Path(args.out) / args.dataset, args.dataset)
    except (ValueError, KeyError) as e:
        print(f"tokfidelity golden-from: {source}: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{result.dataset_dir}: {result.written} samples with the engine's ids; {result.left_out} records left out "
          "(no returned ids, or a check that leaves their ids unproven)")
    if not result.written:
        print("tokfidelity golden-from: no record carries engine ids: run generate with --return-token-ids against a "
              "server that returns them (vLLM, SGLang)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK

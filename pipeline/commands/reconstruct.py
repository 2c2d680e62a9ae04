"""tokfidelity reconstruct: API responses (JSONL on stdin) -> output ids (JSONL on stdout)."""

from __future__ import annotations

import sys

from .jsonl_filter import filter_lines
from ..core.names import names_help
from ..cli import EXIT_OK, EXIT_FAILED, EXIT_USAGE

HELP = "Rebuild output token ids from OpenAI-compatible responses, one JSON object a line on stdin."


def add_arguments(p):
    p.add_argument("--profile", required=True, help=f"model turn format: one of {names_help()}")
    p.add_argument("--tokenizer", required=True, help="tokenizer path, folder name or hub id")


def run(args) -> int:
    from ..core.profiles import ProfileError
    from ..core.reconstruct import ReconstructionError, reconstruct_output_ids
    from ..core.responses import ResponseError
    from ..core.binding import bind_dataset
    from ..core.tokenizer import TokenizerNotFound

    try:
        tokenizer, profile = bind_dataset(args.profile, args.tokenizer)
    except (TokenizerNotFound, ProfileError, ValueError) as e:
        print(f"tokfidelity reconstruct: {e}", file=sys.stderr)
        return EXIT_USAGE

    def convert(response) -> dict:
        return {"output_ids": reconstruct_output_ids(response, profile, tokenizer)}

    failures = filter_lines(sys.stdin.buffer, "<stdin>", convert, (ResponseError, ReconstructionError), sys.stdout)
    return EXIT_FAILED if failures else EXIT_OK

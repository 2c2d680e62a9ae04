"""Diagnosis speed on long outputs (moved here from a unit test: wall time is a benchmark, not a check).

    .venv/bin/python bench/bench_diagnose.py [--tokens 10000] [--repeats 3] [--max-seconds 1.0]

Three cases on the real Kimi K2.5 tokenizer, each timed ``--repeats`` times (median shown):

* scattered: ``--tokens`` ids of this project's source with every 97th ASCII token split in two
  (more than 50 hunks), against the canonical ids;
* ends: the same ids with both ends changed around the long shared middle (two hunks);
* unrelated: two unrelated texts of ``--tokens`` ids each.

With ``--max-seconds`` the exit code is 1 when the scattered case's median is slower than that.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core.diagnose import diagnose  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402

_SHARED = ROOT.parent / "shared" / "tokenizers"
if not os.environ.get("TOKFIDELITY_TOKENIZERS") and _SHARED.is_dir():
    os.environ["TOKFIDELITY_TOKENIZERS"] = str(_SHARED)


def scattered_resplits(tok, text: str, every: int) -> tuple[list[int], list[int]]:
    """Canonical ids, and the same text with every n-th multi-byte ASCII token split in two."""
    canonical = tok.encode_ordinary(text)
    resplit: list[int] = []
    for n, t in enumerate(canonical):
        piece = tok.token_bytes(t)
        if n % every == 0 and len(piece) > 1 and piece.isascii():
            resplit += tok.encode_ordinary(piece[:1].decode()) + tok.encode_ordinary(piece[1:].decode())
        else:
            resplit.append(t)
    return resplit, canonical


def timed(repeats: int, call) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=None)
    args = parser.parse_args()
    tok = load_tokenizer("kimi-k2.5")
    source = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "pipeline" / "core").rglob("*.py")))
    golden, recon = scattered_resplits(tok, source * 2, every=97)
    golden, recon = golden[: args.tokens], recon[: args.tokens]
    unrelated = tok.encode_ordinary((ROOT / "README.md").read_text(encoding="utf-8") * 4)[: args.tokens]
    cases = {
        "scattered": lambda: diagnose(golden, recon, tok),
        "ends": lambda: diagnose([1] + recon + [2], [3] + recon + [4], tok),
        "unrelated": lambda: diagnose(recon, unrelated, tok),
    }
    print(f"diagnose on {len(golden)} tokens, median of {args.repeats}:")
    medians = {}
    for name, call in cases.items():
        medians[name] = timed(args.repeats, call)
        print(f"  {name:10s} {medians[name] * 1000:8.1f} ms")
    if args.max_seconds is not None and medians["scattered"] > args.max_seconds:
        print(f"scattered took {medians['scattered']:.2f} s > --max-seconds {args.max_seconds}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where a judge's CPU goes, per sample, measured in one process: the figures behind docs/scale.md's floor.

A judge of the suite (``DatasetRun.judge_positions``) reads each sample's line, judges the output sides of a
chunk of 32, then their prompt sides. This script does the same over the first ``--samples`` samples of
bench_plugin.py's synthetic Kimi K2.5 dataset, timing each part with ``time.process_time`` (CPU, so a loaded
machine inflates the figures less than wall time; they still drift with the load, so compare parts measured
in the same round), and prints each part per sample and in raw encode's units: raw encode = tiktoken's
``encode_ordinary`` of the output texts plus ``encode`` of the prompt texts, the baseline of the goal,
timed in the same chunks.

Parts: the line read by ``SampleIndex.read`` as the suite reads it, and by the general reader alone (orjson,
the duplicate-key dump, the per-item id check: what reading cost before sample_lines.py); the output side
as the suite runs it (``Judge.output_side_chunk``: the chunk's views, then its reconstructions) and sample by
sample (``Judge.output_side``, as it ran before), and inside it the API view (decode of the golden ids through tiktoken's core, the
parsers) and the reconstruction (encode and compare); the prompt side (``Judge.prompt_side``, a fresh judge
each round so its conversation memo starts empty).

    .venv/bin/python bench/bench_judge.py [--samples 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_plugin as bp  # noqa: E402

from pipeline.core.fidelity import Judge, sample_request  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.reconstruct import reconstruct_unless  # noqa: E402
from pipeline.core.views import view_turn_and_bytes  # noqa: E402
from pytest_tokfidelity import index as index_module  # noqa: E402

PARTS = ("raw encode, outputs", "raw encode, prompts", "read (the suite's reader)", "read (general reader alone)",
         "output side (the suite's: views, then reconstructions)", "output side, sample by sample", "  of which the API view (decode, parse)", "  of which the reconstruction (encode, compare)",
         "prompt side")


def measure(folder: Path, texts, tok, n: int, rounds: int) -> dict[str, list[float]]:
    """CPU seconds of each part over n samples, one entry per round."""
    profile = bind_profile("kimi-k2.5", tok)
    index = index_module.SampleIndex(folder / "samples.jsonl")
    fd = os.open(index.path, os.O_RDONLY)
    fast_reader = index_module.read_compact
    spent: dict[str, list[float]] = {part: [] for part in PARTS}
    clock = time.process_time
    try:
        for _ in range(rounds):
            judge = Judge(profile, tok, "sglang", {"non-canonical-split": 0.001})
            acc = dict.fromkeys(PARTS, 0.0)
            for start in range(0, n, 32):
                positions = range(start, min(n, start + 32))
                block = list(bp.Texts(texts.prose, texts.code, texts.spans[start : start + 32], "kimi-k2.5"))
                c = clock()
                for text in block:
                    tok.encode_ordinary(text)
                acc[PARTS[0]] += clock() - c
                c = clock()
                for text in texts.prompts[start : start + 32]:
                    tok.encode(text)
                acc[PARTS[1]] += clock() - c
                c = clock()
                samples = [index.read(p, fd) for p in positions]
                acc[PARTS[2]] += clock() - c
                index_module.read_compact = lambda data: None
                c = clock()
                general = [index.read(p, fd) for p in positions]
                acc[PARTS[3]] += clock() - c
                index_module.read_compact = fast_reader
                assert general == samples, "the two readers disagree"
                for order in ((4, 5) if start // 32 % 2 else (5, 4)):  # which runs first alternates by chunk
                    c = clock()
                    got = judge.output_side_chunk(samples) if order == 4 else [judge.output_side(s) for s in samples]
                    acc[PARTS[order]] += clock() - c
                    if order == 4:
                        verdicts = got
                    else:
                        by_sample = got
                assert by_sample == verdicts, "the two orders disagree"
                c = clock()
                turns = [view_turn_and_bytes(s.output_ids, s.finish_reason, profile, tok, "sglang", sample_request(s))[0]
                         for s in samples]
                acc[PARTS[6]] += clock() - c
                c = clock()
                for s, turn in zip(samples, turns):
                    reconstruct_unless(s.output_ids, turn, profile, tok)
                acc[PARTS[7]] += clock() - c
                c = clock()
                for s, v in zip(samples, verdicts):
                    judge.prompt_side(s, v)
                acc[PARTS[8]] += clock() - c
            for part, seconds in acc.items():
                spent[part].append(seconds)
    finally:
        index_module.read_compact = fast_reader
        os.close(fd)
    return spent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    manifest = {**bp.family_manifest("kimi-k2.5"), "source": "bench/bench_judge.py"}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at start")
    with tempfile.TemporaryDirectory(prefix="tokfidelity-bench-judge-") as tmp:
        folder = Path(tmp) / "BENCH"
        tok, n_tokens, texts = bp.make_dataset(folder, manifest, args.samples, 3500, 0.05)
        spent = measure(folder, texts, tok, args.samples, args.rounds)
    per = {part: statistics.median(v) / args.samples for part, v in spent.items()}
    raw = per[PARTS[0]] + per[PARTS[1]]
    print(f"{args.samples:,} samples ({n_tokens / args.samples:,.0f} output tokens each), {args.rounds} rounds, "
          f"CPU per sample (median of the rounds) and in raw encode's units (raw encode {1000 * raw:.3f} ms):")
    for part, seconds in per.items():
        rounds = ", ".join(f"{1000 * s / args.samples:.3f}" for s in spent[part])
        print(f"  {part:56s} {1000 * seconds:7.3f} ms  {seconds / raw:5.3f}  (rounds: {rounds})")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: what the input-robustness checks cost per sample.

* the per-render time limit (``pipeline.core.watchdog.time_limit``) around the chat template:
  ``render_text`` on the B1_glaive conversations, with and without it;
* the duplicate-key check of golden sample lines (``pipeline.core.jsonl.duplicate_key``) on the
  shipped samples.jsonl lines, beside the orjson parse it follows, and on the same lines written
  with spaces (keys counted in both the line and its compact form).

    .venv/bin/python bench/bench_input_limits.py [--rounds 5]

Prints CPU microseconds per conversation / line (best of the rounds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
ROOT = Path(__file__).resolve().parent.parent


def best(fn, n: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):  # CPU time of the process (the watchdog thread's included): steadier on a shared machine
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times) / n * 1e6


def bench_render(rounds: int) -> None:
    from pipeline.core import render, watchdog
    from pipeline.core.golden import load_manifest, read_samples
    from pipeline.core.binding import bind_dataset

    dataset = ROOT / "golden" / "B1_glaive"
    manifest = load_manifest(dataset)
    tokenizer, profile = bind_dataset(manifest.profile, manifest.tokenizer)
    samples = [s for s in read_samples(dataset) if not isinstance(s, Exception)]

    def run():
        for s in samples:
            render.render_text(s.messages, s.tools, profile, tokenizer, chat_template_kwargs=s.chat_template_kwargs)

    run()  # template compiled, caches warm
    limited = best(run, len(samples), rounds)
    real = render.time_limit
    render.time_limit = _no_limit
    try:
        plain = best(run, len(samples), rounds)
    finally:
        render.time_limit = real
    one = best(lambda: [_enter_exit(watchdog.time_limit) for _ in range(100_000)], 100_000, rounds)
    print(f"render_text: {plain:.1f} us per conversation without the time limit, {limited:.1f} us with it "
          f"({len(samples)} conversations of B1_glaive); time_limit alone: {one:.2f} us")


class _no_limit:
    def __init__(self, seconds):
        pass

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _enter_exit(cls) -> None:
    with cls(10.0):
        pass


def bench_duplicate_keys(rounds: int) -> None:
    import orjson

    from pipeline.core.jsonl import duplicate_key

    lines = [line for path in sorted((ROOT / "golden").glob("*/samples.jsonl"))
             for line in path.read_bytes().splitlines(keepends=True) if line.strip()]
    values = [orjson.loads(line) for line in lines]
    parse = best(lambda: [orjson.loads(line) for line in lines], len(lines), rounds)
    check = best(lambda: [duplicate_key(line, value) for line, value in zip(lines, values)], len(lines), rounds)
    spaced = [orjson.dumps(v).replace(b'":', b'": ') + b"\n" for v in values]  # not compact: the slow path
    slow = best(lambda: [duplicate_key(line, value) for line, value in zip(spaced, values)], len(lines), rounds)
    kb = sum(map(len, lines)) / len(lines) / 1024
    print(f"duplicate_key: {check:.1f} us per compact golden line (orjson.loads of it: {parse:.1f} us; {len(lines)} lines "
          f"of {kb:.1f} KiB on average); {slow:.1f} us per line not written compact (keys counted)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    bench_duplicate_keys(args.rounds)
    bench_render(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

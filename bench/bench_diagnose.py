"""Diagnosis speed on long outputs (moved here from a unit test: wall time is a benchmark, not a check).

    .venv/bin/python bench/bench_diagnose.py [--tokens 10000] [--repeats 3] [--max-seconds 1.0]

Three cases on the real Kimi K2.5 tokenizer, each timed ``--repeats`` times (median shown):

* scattered: ``--tokens`` ids of this project's source with every 97th ASCII token split in two
  (more than 50 hunks), against the canonical ids;
* ends: the same ids with both ends changed around the long shared middle (two hunks);
* unrelated: two unrelated texts of ``--tokens`` ids each.

With ``--max-seconds`` the exit code is 1 when the scattered case's median is slower than that.

``--long 19800,66000,198000,1000000`` times instead one long agentic Kimi K2.5 sample per size (ids):
reasoning and content of this project's text (the README, repeated: few tokens occur only once),
re-split by the model every 100th token, and a tool call per 200 ids whose JSON arguments the API
re-serialised with a space (about one hunk per 80 ids: 12,400 hunks and 5,000 calls at 1M ids).
Each is judged whole (``Judge``: the response rebuilt, compared, diagnosed) and diagnosed alone;
the diagnosis must be the same every repeat. For scale: a diagnosis in which each hunk scans every
region takes 0.5 s, 4.7 s and 38 s for 19.8k, 66k and 198k ids (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core.diagnose import diagnose  # noqa: E402
from pipeline.core.fidelity import Judge  # noqa: E402
from pipeline.core.golden import GoldenSample  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.reconstruct import reconstruct_output_ids  # noqa: E402
from pipeline.core.responses import ApiTurn, ToolCall  # noqa: E402
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


def long_sample(tok, profile, n_ids: int, text: str) -> tuple[GoldenSample, list[int]]:
    """A Kimi K2.5 sample of about ``n_ids`` output ids (see the module's docstring), and the ids
    its response rebuilds."""
    calls = max(1, n_ids // 200)
    compact = [f'{{"path":"src/module_{i}/file_{i * 7}.py"}}' for i in range(calls)]
    spaced = [json.dumps(json.loads(a)) for a in compact]  # what the API sent: re-serialised, with spaces
    budget = n_ids - sum(len(tok.encode_ordinary(a)) + 12 for a in compact)  # ids left for the text
    words = tok.encode_ordinary(text * (budget // len(tok.encode_ordinary(text)) + 1))[:max(2, budget)]
    reasoning, content = tok.decode(words[: len(words) * 3 // 4]), tok.decode(words[len(words) * 3 // 4 :])

    def turn(arguments: list[str]) -> ApiTurn:
        tool_calls = tuple(ToolCall("read_file", a, f"functions.read_file:{i}") for i, a in enumerate(arguments))
        return ApiTurn(reasoning, content, tool_calls, "tool_calls")

    canonical = reconstruct_output_ids(turn(compact), profile, tok)
    golden = []
    for n, t in enumerate(canonical):  # the model's own splits: every 100th long ASCII text token in two
        piece = tok.token_bytes(t) if t not in tok.special_ids else b""
        if n % 100 == 0 and len(piece) > 1 and piece.isascii():
            golden += tok.encode_ordinary(piece[:1].decode()) + tok.encode_ordinary(piece[1:].decode())
        else:
            golden.append(t)
    response = {"reasoning": reasoning, "content": content, "finish_reason": "tool_calls", "tool_calls": [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in turn(spaced).tool_calls]}
    sample = GoldenSample("long", golden, "tool_calls", 1, response=response)
    return sample, reconstruct_output_ids(turn(spaced), profile, tok)


def long_samples(tok, sizes: list[int], repeats: int) -> None:
    profile = bind_profile("kimi-k2.5", tok)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    judge = Judge(profile, tok, "sglang")
    print(f"one long sample per size, median of {repeats} (judged whole, and diagnosed alone):")
    for n in sizes:
        sample, rebuilt = long_sample(tok, profile, n, text)
        seen = []

        def diagnosed():
            d = diagnose(sample.output_ids, rebuilt, tok, profile=profile, finish_reason="tool_calls")
            seen.append([(h.golden_start, h.golden_end, h.recon_start, h.recon_end, h.cls) for h in d.hunks])
            return d

        d = diagnosed()
        verdict = judge(sample)
        assert verdict.hunks == len(d.hunks), (verdict.hunks, len(d.hunks))
        judged, alone = timed(repeats, lambda: judge(sample)), timed(repeats, diagnosed)
        assert all(s == seen[0] for s in seen), "a diagnosis changed between repeats"
        counts = ", ".join(f"{c} {k}" for c, k in d.class_counts().items())
        print(f"  {len(sample.output_ids):>9,} ids {len(d.hunks):>6,} hunks ({counts}): judged {judged:7.2f} s, diagnosed {alone:7.2f} s", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--long", default=None, metavar="IDS,...", help="time one long agentic sample per size instead")
    args = parser.parse_args()
    tok = load_tokenizer("kimi-k2.5")
    if args.long:
        long_samples(tok, [int(n) for n in args.long.split(",")], args.repeats)
        return 0
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

"""Reconstruction throughput against raw tiktoken encoding of the same texts (one thread, one run).

    .venv/bin/python bench/bench_reconstruct.py [--tokenizer kimi-k2.5] [--samples 200] [--repeats 5]

Builds realistic Kimi K2.5 responses (about 3,500 output tokens each: long English reasoning,
a code answer in a fence, a third of them with 1-3 tool calls with JSON arguments) from the
Python documentation and standard-library sources on this machine, then times, on one thread:

* raw: tiktoken's ``Encoding.encode_ordinary`` over every text field of every response (the
  floor: what encoding the text alone costs);
* reconstruct: ``reconstruct_output_ids(response_dict, profile, tokenizer)`` for every response
  (parsing the response, encoding, inserting marker ids);
* api_view: ``api_view(golden_ids, ...)`` for every response (what the plugin does per sample).

Each is timed ``--repeats`` times, interleaved, and the best time kept (the machine is noisy).
The goal: reconstruct >= 0.9x raw.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.reconstruct import reconstruct_output_ids  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402
from pipeline.core.views import api_view  # noqa: E402

_SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "tokenizers"
if not os.environ.get("TOKFIDELITY_TOKENIZERS") and _SHARED.is_dir():
    os.environ["TOKFIDELITY_TOKENIZERS"] = str(_SHARED)

REASONING_TOKENS = 2_100
CODE_TOKENS = 1_300


def _prose_sources() -> list[str]:
    import pydoc_data.topics

    return ["\n".join(pydoc_data.topics.topics.values())]


def _code_sources() -> list[str]:
    import argparse as a, difflib, json.decoder, logging, textwrap, tokenize  # noqa: E401

    return ["".join(inspect.getsource(m) for m in (a, difflib, json.decoder, logging, textwrap, tokenize))]


def _take(tokenizer, sources: list[str], tokens: int, rng: random.Random) -> str:
    """A slice of about ``tokens`` tokens from a random source, starting at a line."""
    text = rng.choice(sources)
    lines = text.splitlines(keepends=True)
    start = rng.randrange(max(1, len(lines) - 2_000))
    out, count = [], 0
    for line in lines[start:] + lines[:start]:
        out.append(line)
        count += len(tokenizer.encode_ordinary(line))
        if count >= tokens:
            break
    return "".join(out)


def build_responses(tokenizer, n: int, seed: int = 2026) -> list[dict]:
    rng = random.Random(seed)
    prose, code = _prose_sources(), _code_sources()
    responses = []
    for i in range(n):
        reasoning = _take(tokenizer, prose, REASONING_TOKENS, rng)
        content = "Here is the implementation:\n\n```python\n" + _take(tokenizer, code, CODE_TOKENS, rng) + "```\n"
        calls = []
        if i % 3 == 0:
            for j in range(rng.randint(1, 3)):
                args = {"path": f"/src/module_{j}.py", "patch": _take(tokenizer, code, 60, rng), "dry_run": j % 2 == 0}
                calls.append(
                    {
                        "id": f"functions.apply_patch:{j}",
                        "type": "function",
                        "function": {"name": "apply_patch", "arguments": json.dumps(args, ensure_ascii=False)},
                    }
                )
        responses.append(
            {
                "reasoning": reasoning,
                "content": content,
                "tool_calls": calls or None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        )
    return responses


def _texts(response: dict) -> list[str]:
    texts = [response["reasoning"], response["content"]]
    for call in response["tool_calls"] or ():
        texts += [call["id"], call["function"]["arguments"]]
    return texts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokenizer", default="kimi-k2.5")
    p.add_argument("--profile", default="kimi-k2.5")
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)

    tokenizer = load_tokenizer(args.tokenizer)
    profile = bind_profile(args.profile, tokenizer)
    raw_encode = tokenizer._enc.encode_ordinary  # tiktoken's own public encode_ordinary, same Encoding
    responses = build_responses(tokenizer, args.samples)
    texts = [t for r in responses for t in _texts(r)]
    golden = [reconstruct_output_ids(r, profile, tokenizer) for r in responses]
    finishes = [r["finish_reason"] for r in responses]
    tokens = sum(map(len, golden))
    text_tokens = sum(len(raw_encode(t)) for t in texts)
    assert all(
        reconstruct_output_ids(api_view(g, f, profile, tokenizer), profile, tokenizer) == g for g, f in zip(golden, finishes)
    ), "round trip through the sglang view is not exact on the benchmark data"

    def raw():
        for t in texts:
            raw_encode(t)

    def reconstruct():
        for r in responses:
            reconstruct_output_ids(r, profile, tokenizer)

    def view():
        for g, f in zip(golden, finishes):
            api_view(g, f, profile, tokenizer)

    best = {"raw": float("inf"), "reconstruct": float("inf"), "api_view": float("inf")}
    for _ in range(args.repeats):
        for name, fn in (("raw", raw), ("reconstruct", reconstruct), ("api_view", view)):
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)

    print(f"tokenizer {tokenizer.name} ({tokenizer.source}), profile {profile.name}")
    print(
        f"{len(responses)} responses, {tokens} output tokens ({tokens / len(responses):.0f} per response, "
        f"{sum(1 for r in responses if r['tool_calls'])} with tool calls); {text_tokens} tokens of text"
    )
    print(f"best of {args.repeats}, one thread:")
    raw_tps = text_tokens / best["raw"]
    # Like for like: the same text tokens over each time (output tokens add only the marker ids).
    rec_tps = text_tokens / best["reconstruct"]
    view_tps = text_tokens / best["api_view"]
    print(f"  raw tiktoken encode_ordinary  {raw_tps / 1e6:6.2f} M tokens/s  ({best['raw'] * 1e3:7.1f} ms)")
    print(f"  reconstruct_output_ids        {rec_tps / 1e6:6.2f} M tokens/s  ({best['reconstruct'] * 1e3:7.1f} ms)")
    print(f"  api_view (sglang)             {view_tps / 1e6:6.2f} M tokens/s  ({best['api_view'] * 1e3:7.1f} ms)")
    ratio = best["raw"] / best["reconstruct"]
    print(f"reconstruct / raw = {ratio:.3f}x (goal >= 0.9x): {'ok' if ratio >= 0.9 else 'BELOW GOAL'}")
    return 0 if ratio >= 0.9 else 1


if __name__ == "__main__":
    sys.exit(main())

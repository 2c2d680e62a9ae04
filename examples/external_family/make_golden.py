#!/usr/bin/env python3
"""Write golden/T1_tinychat byte for byte: each turn laid out by the family's case generator
(``tinychat_family.cases``) with the real ``qwen3`` tokenizer (found under ``$TOKFIDELITY_TOKENIZERS``).

    TOKFIDELITY_TOKENIZERS=../shared/tokenizers python make_golden.py [--out golden]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402
from tinychat_family import SPEC  # noqa: E402
from tinychat_family.cases import write  # noqa: E402


def _tool(name: str, **properties: str) -> dict:
    props = {k: {"type": t} for k, t in properties.items()}
    return {"type": "function", "function": {"name": name, "description": f"{name} tool",
                                             "parameters": {"type": "object", "properties": props}}}


TOOLS = [_tool("get_weather", city="string", days="integer"), _tool("查询", q="string", filters="object")]
TURNS = [  # (id, user message, content, calls, cut)
    ("t-1", "Hi!", "Hello! How can I help?", [], False),
    ("t-2", "Say something in Chinese.", "你好，世界 👋", [], False),
    ("t-3", "Weather in Paris?", "", [("get_weather", {"city": "Paris", "days": 3})], False),
    ("t-4", "Weather in Paris and Zürich?", "Checking both.", [("get_weather", {"city": "Paris"}),
                                                             ("get_weather", {"city": "Zürich", "days": 2})], False),
    ("t-5", "Search, filtered.", "", [("查询", {"q": "línea 1\nlínea 2", "filters": {"year": [2024, 2025], "ok": True}})], False),
    ("t-6", "Write a long poem.", "Roses are red,\nviolets are blue,\ntokens are ids", [], True),
    ("t-7", "Three days in Oslo, typed.", "Sure:\n- Oslo\n- 3 days", [("get_weather", {"city": "Oslo", "days": 3.5}),
                                                                      ("查询", {"q": None, "filters": {}})], False),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "golden")
    args = parser.parse_args(argv)
    tokenizer = load_tokenizer("qwen3")
    profile = bind_profile(SPEC, tokenizer)
    samples = []
    for sample_id, user, content, calls, cut in TURNS:
        turn = {"content": content, "calls": [(n, json.dumps(a, ensure_ascii=False)) for n, a in calls]}
        ids = write(tokenizer, profile, turn, stop=not cut)
        sample = {"id": sample_id, "messages": [{"role": "user", "content": user}]}
        if calls:
            sample["tools"] = TOOLS
        samples.append({**sample, "output_ids": ids[:-2] if cut else ids, "finish_reason": "length" if cut else "stop"})
    manifest = {"name": "T1_tinychat", "profile": "tinychat", "tokenizer": "qwen3", "api_view": "sglang",
                "source": "CONSTRUCTED, not captured: make_golden.py lays each turn out with tinychat_family.cases"}
    write_dataset(args.out / "T1_tinychat", manifest, samples)
    print(f"wrote {args.out / 'T1_tinychat'}: {len(samples)} samples")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

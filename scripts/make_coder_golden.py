#!/usr/bin/env python3
"""Rebuild golden/C1_glaive (qwen3-coder: Qwen3-Coder 30B-A3B / 480B-A35B) byte for byte.

CONSTRUCTED, not captured, like Q1/D1 (scripts/make_family_golden.py): turns composed with a fixed seed
from the hand-written pieces of scripts/kimi_golden/ (B1's tool-calling scenarios with their typed tools,
B3's coding tasks, answers after a tool result) and laid out as Qwen3-Coder writes its output
(the family's case generator, pipeline/cases/llama_coder_outputs.py: <tool_call> blocks of <function=NAME> with one
<parameter=KEY> per argument, values as the chat template writes them), with Qwen3's tokenizer (the
qwen3-coder folder: its own template and config, Qwen3's vocabulary). Prompt ids come from the model's
chat_template.jinja (the newer template: transformers prefers that file over tokenizer_config.json's
older one, which the engines then render), rendered as transformers renders it. Quirk samples ('quirk')
show what a view loses.

    .venv/bin/python scripts/make_coder_golden.py [--out golden]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from kimi_golden import b1_glaive, b3_magicoder  # noqa: E402
from make_kimi_golden import known_divergence_rate  # noqa: E402
from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.profiles import bind_profile  # noqa: E402
from pipeline.cases.llama_coder_outputs import QWEN3_CODER, coder_call, coder_params  # noqa: E402
from pipeline.core.prompt_renderers import render_prompt  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402

DATASET, TOKENIZER = "C1_glaive", "qwen3-coder"


def turns(rng: random.Random) -> list[dict]:
    out = []
    for n in range(30):  # one or several calls: typed, nested, non-ASCII arguments; content before some
        user, planned, _ = b1_glaive.SCENARIOS[n % len(b1_glaive.SCENARIOS)](rng)
        names = sorted({name for name, _ in planned})
        tools = [b1_glaive.TOOLS[t] for t in dict.fromkeys(names + rng.sample(sorted(b1_glaive.TOOLS), rng.randint(0, 2)))]
        calls = []
        for name, args in planned:
            if n % 5 == 4:  # a multi-line value
                args = {**args, "note": "line one\nline two"}
            calls.append({"function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}})
        content = rng.choice(b1_glaive.CONTENTS).strip() if rng.random() < 0.4 else None
        out.append({"messages": [{"role": "user", "content": user}], "tools": tools,
                    "response": {"content": content and content + "\n\n", "tool_calls": calls}})
    for n in range(10):
        lang, task, name = b3_magicoder.TASKS[(7 * n) % len(b3_magicoder.TASKS)]
        content = (rng.choice(b3_magicoder.INTROS) + b3_magicoder.CODE[name] + rng.choice(b3_magicoder.OUTROS)).strip()
        out.append({"messages": [{"role": "user", "content": task}], "tools": None, "response": {"content": content}})
    for _ in range(8):  # multi-turn: the answer after a tool result
        city = rng.choice(b1_glaive.CITIES)
        result = {"temp_c": rng.randint(-8, 31), "sky": rng.choice(["clear", "rain", "snow"])}
        messages = [{"role": "user", "content": f"Weather in {city}?"},
                    {"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "type": "function", "function": {
                        "name": "get_weather", "arguments": {"city": city}}}]},
                    {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(result)}]
        out.append({"messages": messages, "tools": [b1_glaive.TOOLS["get_weather"]],
                    "response": {"content": f"It's {result['temp_c']} °C in {city}, {result['sky']}."}})
    return out


def _ids(tokenizer, *pieces) -> list[int]:
    out = []
    for piece in pieces:
        out += tokenizer.encode_ordinary(piece) if isinstance(piece, str) else [piece]
    return out


def quirk(n: int, response: dict, tokenizer, profile, typed: int):
    """(output ids, finish reason, quirk text) for the quirk sample ``n``, or None for a plain one
    (``typed``: the first sample calling get_weather, whose schema types ``days`` as an integer)."""
    m = profile.ids
    calls = response.get("tool_calls") or []
    if calls and n in (typed, 9):
        name, args = calls[0]["function"]["name"], json.loads(calls[0]["function"]["arguments"])
        if n == typed:  # an integer written with a leading zero: both engines int() it
            body = coder_call(name, coder_params(json.dumps({**args, "days": "05"})))
            return (_ids(tokenizer, m["tool_call_begin"], body, m["tool_call_end"], m["stop"]), "stop",
                    "tool-args-json: an integer parameter written 05; both engines convert it by the schema to 5")
        body = coder_call(name, coder_params(json.dumps(args, ensure_ascii=False)))
        return (_ids(tokenizer, "Calling it now.", m["tool_call_begin"], body, m["tool_call_end"], m["stop"]), "stop",
                "whitespace: content right before <tool_call> with no newline; the view's content has none to rebuild")
    if n == 35:
        ids = _ids(tokenizer, response["content"].rstrip() + " 🦜")[:-1]
        return ids, {"type": "length", "length": len(ids)}, "truncated-utf8: cut at max_new_tokens inside a 4-byte emoji"
    return None


def build() -> list[dict]:
    tokenizer = load_tokenizer(TOKENIZER)
    profile = bind_profile("qwen3-coder", tokenizer)
    rng = random.Random(20261204)
    samples = []
    made = turns(rng)
    typed = next(n for n, t in enumerate(made) if (t["response"].get("tool_calls") or [{}])[0].get("function", {}).get("name") == "get_weather")
    for n, t in enumerate(made):
        response = {"reasoning": None, "finish_reason": "stop", "tool_calls": None, **t["response"]}
        calls = [(c["function"]["name"], c["function"]["arguments"]) for c in response["tool_calls"] or ()]
        turn = {"content": response["content"], "calls": calls, "builtin": bool(t.get("kwargs"))}
        ids = QWEN3_CODER.write(tokenizer, profile, turn)  # the family's case generator: the model's layout
        finish = {"type": "stop", "matched": ids[-1]}
        if n % 7 == 3 and not response.get("tool_calls"):  # a length cut inside the text
            ids = ids[: max(1, len(ids) * 2 // 3)]
            finish = {"type": "length", "length": len(ids)}
        special = quirk(n, response, tokenizer, profile, typed)
        if special is not None:
            ids, finish = special[0], special[1]
            if finish == "stop":
                finish = {"type": "stop", "matched": ids[-1]}
        record = {"id": f"c1-{n:04d}", "messages": t["messages"]}
        if t["tools"]:
            record["tools"] = t["tools"]
        record["prompt_ids"] = render_prompt(t["messages"], t["tools"], profile, tokenizer)
        record.update(output_ids=ids, finish_reason=finish)
        if special is not None:
            record["quirk"] = special[2]
        samples.append(record)
    return samples


MANIFEST = {
    "name": DATASET,
    "profile": "qwen3-coder",
    "tokenizer": TOKENIZER,
    "api_views": ["sglang", "vllm"],
    "source": "CONSTRUCTED, not captured: turns composed with a fixed seed from the hand-written pieces of scripts/kimi_golden/ "
    "and laid out as Qwen3-Coder writes its output (content, <tool_call> blocks of <function=NAME> with <parameter=KEY> "
    "values as the chat template writes them, <|im_end|>), with Qwen3's tokenizer (the qwen3-coder folder lends its "
    "vocabulary from qwen3); prompt_ids from qwen3-coder/chat_template.jinja, the newer of the two official templates "
    "(transformers prefers chat_template.jinja over tokenizer_config.json's older one, so the engines render it). "
    "Rebuild: scripts/make_coder_golden.py.",
    "description": "Qwen3-Coder tool calls (one or several; typed, nested, non-ASCII and multi-line arguments), coding "
    "answers, answers after a tool result, length cuts.",
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "golden"))
    args = p.parse_args(argv)
    samples = build()
    manifest = {**MANIFEST, "max_known_divergence_rate": known_divergence_rate(samples), "samples": len(samples)}
    path = write_dataset(Path(args.out) / DATASET, manifest, samples)
    print(f"{path}: {len(samples)} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())

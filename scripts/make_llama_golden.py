#!/usr/bin/env python3
"""Rebuild golden/L1_glaive (llama3: Llama 3.1 / 3.3 Instruct) byte for byte.

CONSTRUCTED, not captured, like Q1/D1 (scripts/make_family_golden.py): turns composed with a fixed seed
from the hand-written pieces of scripts/kimi_golden/ (B1's tool-calling scenarios with their typed
tools, B3's coding tasks, answers after a tool result) and laid out as Llama 3.1 writes its output
(the family's case generator, pipeline/cases/llama_coder_outputs.py: a JSON call {"name": ..., "parameters": ...} as the whole
output, builtin calls <|python_tag|>NAME.call(...)<|eom_id|>), with the real tokenizer. Prompt ids come
from the model's own chat template (llama-3.1/chat_template.jinja, the 3.1/3.3 template) rendered as
transformers renders it. Every sample is one both engines' views (sglang, vllm) give back exactly.

    .venv/bin/python scripts/make_llama_golden.py [--out golden]
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
from pipeline.cases.llama_coder_outputs import LLAMA3  # noqa: E402
from pipeline.core.prompt_renderers import render_prompt  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402

DATASET, TOKENIZER = "L1_glaive", "llama-3.1"


def turns(rng: random.Random) -> list[dict]:
    out = []
    for n in range(24):  # one JSON call (the template allows one per turn), typed, nested, non-ASCII arguments
        user, planned, _ = b1_glaive.SCENARIOS[n % len(b1_glaive.SCENARIOS)](rng)
        name, args = planned[0]
        tools = [b1_glaive.TOOLS[t] for t in dict.fromkeys([name] + rng.sample(sorted(b1_glaive.TOOLS), rng.randint(0, 2)))]
        if n % 6 == 5:  # arguments as a multi-line value
            args = {**args, "note": "line one\nline two"}
        out.append({"messages": [{"role": "user", "content": user}], "tools": tools,
                    "response": {"content": None, "tool_calls": [{"function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]}})
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
    for query in ("Oslo weather tomorrow", "Wetter in München"):  # a builtin tool (chat_template_kwargs builtin_tools)
        out.append({"messages": [{"role": "user", "content": f"Search the web: {query}"}], "tools": None,
                    "kwargs": {"builtin_tools": ["brave_search", "wolfram_alpha"]},
                    "response": {"content": f'brave_search.call(query="{query}")'}})
    return out


def _ids(tokenizer, profile, *pieces) -> list[int]:
    out = []
    for piece in pieces:
        out += tokenizer.encode_ordinary(piece) if isinstance(piece, str) else [piece]
    return out


def quirk(n: int, response: dict, tokenizer, profile):
    """(output ids, finish reason, quirk text) for the quirk sample ``n``, or None for a plain one."""
    m = profile.ids
    calls = response.get("tool_calls") or []
    if calls:
        name, args = calls[0]["function"]["name"], json.loads(calls[0]["function"]["arguments"])
        body = json.dumps({"name": name, "parameters": args}, ensure_ascii=False)
        if n == 7:
            compact = json.dumps({"name": name, "parameters": args}, ensure_ascii=False, separators=(",", ":"))
            return (_ids(tokenizer, profile, compact, m["stop"]), "stop",
                    "tool-args-json: compact JSON; both parsers re-serialise the arguments with json.dumps")
        if n == 13:
            return (_ids(tokenizer, profile, m["tool_call_begin"], body, m["stop"]), "stop",
                    "special-token-id: the model opened the call with <|python_tag|>; both parsers drop it")
    if n == 27:
        ids = _ids(tokenizer, profile, response["content"].rstrip() + " 🦜")[:-1]
        return ids, {"type": "length", "length": len(ids)}, "truncated-utf8: cut at max_new_tokens inside a 4-byte emoji"
    return None


def build() -> list[dict]:
    tokenizer = load_tokenizer(TOKENIZER)
    profile = bind_profile("llama3", tokenizer)
    rng = random.Random(20261203)
    samples = []
    for n, t in enumerate(turns(rng)):
        response = {"reasoning": None, "finish_reason": "stop", "tool_calls": None, **t["response"]}
        calls = [(c["function"]["name"], c["function"]["arguments"]) for c in response["tool_calls"] or ()]
        turn = {"content": response["content"], "calls": calls, "builtin": bool(t.get("kwargs"))}
        ids = LLAMA3.write(tokenizer, profile, turn)  # the family's case generator: the model's layout
        finish = {"type": "stop", "matched": ids[-1]}
        if n % 7 == 3 and not response.get("tool_calls"):  # a length cut inside the text
            ids = ids[: max(1, len(ids) * 2 // 3)]
            finish = {"type": "length", "length": len(ids)}
        special = quirk(n, response, tokenizer, profile)
        if special is not None:
            ids, finish, text = special
            if finish == "stop":
                finish = {"type": "stop", "matched": ids[-1]}
        record = {"id": f"l1-{n:04d}", "messages": t["messages"]}
        if t["tools"]:
            record["tools"] = t["tools"]
        if t.get("kwargs"):
            record["chat_template_kwargs"] = t["kwargs"]
        record["prompt_ids"] = render_prompt(t["messages"], t["tools"], profile, tokenizer, chat_template_kwargs=t.get("kwargs"))
        record.update(output_ids=ids, finish_reason=finish)
        if special is not None:
            record["quirk"] = special[2]
        samples.append(record)
    return samples


MANIFEST = {
    "name": DATASET,
    "profile": "llama3",
    "tokenizer": TOKENIZER,
    "api_views": ["sglang", "vllm"],
    "source": "CONSTRUCTED, not captured: turns composed with a fixed seed from the hand-written pieces of scripts/kimi_golden/ "
    "and laid out as Llama 3.1 writes its output (one JSON call {\"name\": ..., \"parameters\": ...} as the whole output, "
    "builtin tools <|python_tag|>NAME.call(...)<|eom_id|>, answers <|eot_id|>), with the real Llama 3.1 tokenizer; prompt_ids "
    "from the 3.1/3.3 chat template (llama-3.1/chat_template.jinja, the template vLLM's and SGLang's Llama 3.1 examples name; "
    "tokenizer_config.json's embedded template is 3.2's and differs). Rebuild: scripts/make_llama_golden.py.",
    "description": "Llama 3.1 tool calls (typed, nested, non-ASCII and multi-line arguments), coding answers, answers after a "
    "tool result, builtin-tool calls, length cuts.",
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

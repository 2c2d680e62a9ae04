#!/usr/bin/env python3
"""Rebuild golden/Q1_glaive (qwen3) and golden/D1_glaive (deepseek-v3) byte for byte.

Like B1/B3 (scripts/make_kimi_golden.py, whose machinery this script shares: quirk targeting,
stable hashing, recorded responses, the known-divergence rate), these datasets are CONSTRUCTED,
not captured: the turns are composed with a fixed seed from the hand-written pieces of
scripts/kimi_golden/ (B1's tool-calling scenarios, B3's coding tasks) and laid out as each model
writes its output, per the chat template in the tokenizer's tokenizer_config.json, with the real
tokenizer (markers as the profile's ids, text as ordinary tokens). Prompt ids come from that chat
template rendered the way transformers renders it and encoded with every special allowed.

Most quirk samples need no recorded response: the `sglang` view of their ids (SGLang 0.5.23's
qwen3 / qwen25 / deepseekv3 parsers, restated and checked by tests/test_sglang_differential_families.py)
is what loses the information. Each sample's "quirk" says what it shows.

    .venv/bin/python scripts/make_family_golden.py [--out golden]
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
from kimi_golden.kimi_turn import _tojson, chat_response, non_canonical_split  # noqa: E402
from make_kimi_golden import _pick_quirk_targets, hash_text, known_divergence_rate  # noqa: E402
from pipeline.core.families import family_of  # noqa: E402
from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.profiles import bind_profile, get_profile_spec  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer, resolve_tokenizer_dir  # noqa: E402

FAMILIES = {  # dataset -> (profile, tokenizer as the manifest names it, model name in recorded responses)
    "Q1_glaive": ("qwen3", "qwen3", "qwen/qwen3-235b-a22b"),
    "D1_glaive": ("deepseek-v3", "deepseek-ai/DeepSeek-V3", "deepseek/deepseek-chat-v3"),
}


def load_template(tokenizer_dir: Path):
    """The chat template from tokenizer_config.json, compiled as transformers compiles it."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    return env.from_string(config["chat_template"]), config


class Writer:
    """One family's output layout, written out as the model writes it (its case generator, not reconstruction)."""

    def __init__(self, name: str, tokenizer, profile, template, config):
        self.name, self.tok, self.profile, self.m = name, tokenizer, profile, profile.ids
        self.template, self.config = template, config
        self.cases = family_of(name).case_generator()

    def enc(self, text: str) -> list[int]:
        return self.tok.encode_ordinary(text)

    def prompt_ids(self, messages, tools, thinking: bool) -> list[int]:
        bos = self.config.get("bos_token")
        bos = bos.get("content") if isinstance(bos, dict) else bos
        kwargs = {} if thinking else {"enable_thinking": False}
        text = self.template.render(messages=messages, tools=tools, add_generation_prompt=True, bos_token=bos or "", **kwargs)
        return self.tok.encode(text)

    def output_ids(self, t: dict, stop: bool = True) -> list[int]:
        """The turn laid out by the family's own case generator (the writer the differential tests use)."""
        return self.cases.write(self.tok, self.profile, t, stop=stop)


# ------------------------------------------------------------------------------------------
# Turns, from B1's and B3's hand-written pieces
# ------------------------------------------------------------------------------------------
def tool_turns(rng, count, thinking_share):
    out = []
    for n in range(count):
        user, planned, why = b1_glaive.SCENARIOS[n % len(b1_glaive.SCENARIOS)](rng)
        names = sorted({name for name, _ in planned})
        tools = [b1_glaive.TOOLS[t] for t in dict.fromkeys(names + rng.sample(sorted(b1_glaive.TOOLS), rng.randint(0, 2)))]
        messages = [{"role": "user", "content": user}]
        if rng.random() < 0.3:
            messages.insert(0, {"role": "system", "content": rng.choice(["You are a travel assistant. Use the tools.",
                                                                         "Antworte auf Deutsch. Nutze die Werkzeuge."])})
        reasoning = None
        if rng.random() < thinking_share:
            reasoning = rng.choice(b1_glaive.REASONING_OPENERS) + why + rng.choice(b1_glaive.REASONING_CLOSERS)
        calls = [(name, json.dumps(args, ensure_ascii=False)) for name, args in planned]  # the templates' tojson style
        content = rng.choice(b1_glaive.CONTENTS).strip()
        out.append({"messages": messages, "tools": tools, "turn": {"reasoning": reasoning, "content": content, "calls": calls}})
    return out


def coding_turns(rng, count, thinking_share):
    out = []
    for n in range(count):
        lang, task, name = b3_magicoder.TASKS[(7 * n) % len(b3_magicoder.TASKS)]
        paragraphs = rng.sample(b3_magicoder.REASONING_PARAGRAPHS, k=rng.choice([2, 3, 5]))
        reasoning = "\n\n".join(p.format(name=name, lang=lang) for p in paragraphs) if rng.random() < thinking_share else None
        content = (rng.choice(b3_magicoder.INTROS) + b3_magicoder.CODE[name] + rng.choice(b3_magicoder.OUTROS)).strip()
        out.append({"messages": [{"role": "user", "content": task}], "tools": None,
                    "turn": {"reasoning": reasoning, "content": content, "calls": []}})
    return out


def answer_turns(rng, count, thinking_share):
    out = []
    for _ in range(count):
        city = rng.choice(b1_glaive.CITIES)
        result = {"temp_c": rng.randint(-8, 31), "sky": rng.choice(["clear", "rain", "snow", "fog"])}
        messages = [
            {"role": "user", "content": f"Weather in {city}?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"city": city}, ensure_ascii=False)}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(result)},
        ]
        content = rng.choice([f"It's {result['temp_c']}°C in {city}, {result['sky']}. 🌤️",
                              f"In {city}: {result['temp_c']} °C, {result['sky']}.\n\n- Bring a jacket tonight.\n- Wind: light."])
        reasoning = "The tool answered; summarise it with the numbers as given." if rng.random() < thinking_share else None
        out.append({"messages": messages, "tools": [b1_glaive.TOOLS["get_weather"]],
                    "turn": {"reasoning": reasoning, "content": content, "calls": []}})
    return out


# ------------------------------------------------------------------------------------------
# Finishing a sample; quirks. A quirk takes (writer, sample) and returns (output ids, finish
# reason, recorded response or None, quirk text); it may change the sample's turn first.
# ------------------------------------------------------------------------------------------
def stop_reason(w: Writer, ids):
    return {"type": "stop", "matched": ids[-1]}


def length_reason(ids):
    return {"type": "length", "length": len(ids)}


def cut(ids, n):
    return ids[: len(ids) - n]


def q_cut_in_reasoning(w, s):
    ids = w.output_ids(s["turn"], stop=False)
    end = ids.index(w.m["think_end"])
    ids = ids[: max(2, end * 2 // 3)]
    return ids, length_reason(ids), None, "none: cut at max_new_tokens inside the reasoning (no </think>): rebuilt exactly"


def q_cut_in_content(w, s):
    ids = cut(w.output_ids(s["turn"], stop=False), 7)
    return ids, length_reason(ids), None, "none: cut at max_new_tokens inside the content: rebuilt exactly"


def q_api_call_ids(w, s):
    """A provider's own call ids (call_...): the model's output has no ids, so nothing is lost."""
    ids = w.output_ids(s["turn"])
    t = s["turn"]
    calls = [{"id": f"call_{hash_text(s['id'] + str(i)) % 16**24:024x}", "type": "function",
              "function": {"name": name, "arguments": json.dumps(json.loads(args), ensure_ascii=False)}}
             for i, (name, args) in enumerate(t["calls"])]
    content = t["content"].strip()
    resp = chat_response(None if t["reasoning"] is None else "\n" + t["reasoning"].strip("\n") + "\n", content, calls,
                         "tool_calls", len(ids), reasoning_key="reasoning", model=s["model"])
    return ids, stop_reason(w, ids), resp, ("none: recorded response with the provider's invented call_... ids and "
                                            "'reasoning' (not 'reasoning_content'): the format carries no call id, rebuilt exactly")


def q_quoted_think_end(w, s):
    t = s["turn"]
    t["reasoning"] = ("The parser splits the output at the end-of-thinking tag, written </think> in text; here I only "
                      "quote it.\n\n" + (t["reasoning"] or ""))
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, ("marker-text: the reasoning quotes `</think>` as ordinary tokens; SGLang's "
                                            "qwen3 parser splits there and the real </think> becomes content text")


def q_compact_args(w, s):
    t = s["turn"]
    t["calls"] = [(name, json.dumps(json.loads(args), ensure_ascii=False, separators=(",", ":"))) for name, args in t["calls"]]
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, ("tool-args-json: the model wrote compact arguments; SGLang's tool-call "
                                            "parser re-serialises them with json.dumps (', ' and ': ' spacing)")


def q_escaped_args(w, s):
    t = s["turn"]
    t["calls"] = [(name, json.dumps(json.loads(args), ensure_ascii=True)) for name, args in t["calls"]]
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, ("tool-args-json: the model escaped non-ASCII as \\u in its arguments; "
                                            "json.loads + json.dumps(ensure_ascii=False) gives the characters back")


def q_content_whitespace(w, s):
    t = s["turn"]
    t["content"] = (t["content"] or "Let me check.") + "  "
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, ("whitespace: content ends with spaces before the tool call; the tool-call "
                                            "parser returns the content .strip()ped")


def q_text_after_calls(w, s):
    t = s["turn"]
    if w.name == "qwen3":
        t["after_calls"] = "\nI'll wait for the results."
        where = "after the last </tool_call>"
    else:
        t["between"] = "\nAnd the next one:\n"
        where = "between two calls"
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, f"dropped-text: the model wrote text {where}; the tool-call parser drops it"


def q_cut_inside_call(w, s):
    ids = cut(w.output_ids(s["turn"], stop=False), 9)
    return ids, length_reason(ids), None, ("dropped-text: cut at max_new_tokens inside the last tool call; the parser "
                                           "drops the unfinished call")


def q_non_canonical(w, s):
    t = s["turn"]
    found = non_canonical_split(w.tok, w.enc(t["content"]), start=len(w.enc(t["content"])) // 3)
    assert found, s["id"]
    t["content_ids"] = found[0]
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, "non-canonical-split: the model emitted a word split differently from the canonical encoding (same bytes)"


def q_truncated_utf8(w, s):
    t = s["turn"]
    t["content"] = t["content"].rstrip() + "\n\nHappy coding 🦜🧬"
    ids = w.output_ids(t, stop=False)
    data = b"".join(w.tok.token_bytes(i) for i in ids)
    n = len(ids) - 1
    while n > 0:  # drop tokens from the end until the bytes end inside a character
        data = data[: len(data) - len(w.tok.token_bytes(ids[n]))]
        n -= 1
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            break
    ids = ids[: n + 1]
    return ids, length_reason(ids), None, "truncated-utf8: cut at max_new_tokens inside a 4-byte emoji"


def q_invalid_utf8(w, s):
    t = s["turn"]
    lead = next(i for i in w.enc("🦜") if len(w.tok.token_bytes(i)) < 4)
    cut_at = t["content"].find("\n\n") if "\n\n" in t["content"] else len(t["content"]) // 2
    t["content_ids"] = w.enc(t["content"][:cut_at] + " ") + [lead] + w.enc(t["content"][cut_at:])
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, "invalid-utf8: a lone partial emoji inside the text, decoded as U+FFFD"


def q_other_stop(w, s):
    t = s["turn"]
    t["stop_id"] = w.m["stop.2"]
    ids = w.output_ids(t)
    return ids, stop_reason(w, ids), None, ("stop-token: the engine stopped on <|endoftext|>, Qwen3's other eos id; the "
                                            "response does not say which stop token matched")


def q_stop_at_length_limit(w, s):
    ids = w.output_ids(s["turn"])
    return ids, length_reason(ids), None, ("stop-token: the stop token was the last allowed token and an older SGLang "
                                           "(length cap tested first) reported finish_reason length")


def q_section_end_as_call_end(w, s):
    s["turn"]["section_end"] = w.m["tool_call_end"]
    ids = w.output_ids(s["turn"])
    return ids, stop_reason(w, ids), None, ("special-token-id: the model emitted <｜tool▁call▁end｜> where "
                                            "<｜tool▁calls▁end｜> belongs; SGLang's detector never looks at it")


def q_sep_as_text(w, s):
    s["turn"]["sep_ids"] = w.enc(w.profile.texts["tool_sep"])
    ids = w.output_ids(s["turn"])
    return ids, stop_reason(w, ids), None, ("marker-text: the model wrote <｜tool▁sep｜> as ordinary tokens; the text "
                                            "parser cannot tell, and the rebuilt call has the special id")


def plain(w, s):
    ids = w.output_ids(s["turn"])
    return ids, stop_reason(w, ids), None, None


has_calls = lambda s: bool(s["turn"]["calls"])  # noqa: E731
thinks = lambda s: s["turn"]["reasoning"] is not None  # noqa: E731
NEEDS = {
    q_cut_in_reasoning: thinks, q_api_call_ids: has_calls, q_quoted_think_end: thinks, q_compact_args: has_calls,
    q_escaped_args: lambda s: has_calls(s) and any(ord(c) > 127 for _, a in s["turn"]["calls"] for c in a),
    q_content_whitespace: has_calls, q_cut_inside_call: lambda s: len(s["turn"]["calls"]) >= 2,
    q_text_after_calls: lambda s: len(s["turn"]["calls"]) >= (1 if s["family"] == "qwen3" else 2),
    q_non_canonical: lambda s: len(s["turn"]["content"]) > 40 and not s["turn"]["calls"],
    q_truncated_utf8: lambda s: not s["turn"]["calls"], q_invalid_utf8: lambda s: len(s["turn"]["content"]) > 20,
    q_cut_in_content: lambda s: len(s["turn"]["content"]) > 40 and not s["turn"]["calls"],
    q_section_end_as_call_end: has_calls, q_sep_as_text: has_calls,
}
COMMON = {5: q_api_call_ids, 11: q_compact_args, 17: q_escaped_args, 23: q_content_whitespace, 29: q_text_after_calls,
          35: q_cut_inside_call, 49: q_non_canonical, 52: q_truncated_utf8, 55: q_invalid_utf8, 58: q_cut_in_content,
          61: q_cut_in_content, 41: q_compact_args}
QUIRKS = {
    "qwen3": {**COMMON, 2: q_cut_in_reasoning, 8: q_quoted_think_end, 14: q_other_stop, 20: q_cut_in_reasoning},
    "deepseek-v3": {**COMMON, 2: q_section_end_as_call_end, 8: q_sep_as_text, 14: q_stop_at_length_limit},
}


def build(dataset: str):
    profile_name, tokenizer_spec, model = FAMILIES[dataset]
    tokenizer = load_tokenizer(tokenizer_spec)
    folder, _ = resolve_tokenizer_dir(tokenizer_spec)
    template, config = load_template(folder)
    w = Writer(profile_name, tokenizer, bind_profile(profile_name, tokenizer), template, config)
    rng = random.Random(20261130 + len(dataset))
    opens_think = w.profile.spec.opens_think  # the output opens its own think block, the prompt says whether
    thinking = 0.8 if opens_think else 0.0
    samples = tool_turns(rng, 48, thinking) + coding_turns(rng, 14, thinking) + answer_turns(rng, 8, thinking)
    prefix = dataset[:2].lower()
    for n, s in enumerate(samples):
        s.update(id=f"{prefix}-{n:04d}", family=profile_name, model=model)
    targets = _pick_quirk_targets(samples, QUIRKS[profile_name], NEEDS)
    out = []
    for n, s in enumerate(samples):
        thinks_now = s["turn"]["reasoning"] is not None
        ids, finish, response, quirk = targets.get(n, plain)(w, s)
        record = {"id": s["id"], "messages": s["messages"]}
        if s["tools"]:
            record["tools"] = s["tools"]
        if opens_think and not thinks_now:
            record["chat_template_kwargs"] = {"enable_thinking": False}
        record["prompt_ids"] = w.prompt_ids(s["messages"], s["tools"], thinks_now or not opens_think)
        record.update(output_ids=ids, finish_reason=finish)
        if response is not None:
            record["response"] = response
        if quirk is not None:
            record["quirk"] = quirk
        out.append(record)
    return out


SOURCE = (
    "CONSTRUCTED, not captured: turns composed with a fixed seed from the hand-written pieces of scripts/kimi_golden/ "
    "(B1's tool-calling scenarios, B3's coding tasks, final answers after a tool result) and laid out as {model} writes "
    "its output, per the chat template in the tokenizer's tokenizer_config.json, with the real {model} tokenizer "
    "({tokenizer}): {layout}; arguments as the template's tojson writes them; prompt_ids from that chat template. "
    "Quirk samples ('quirk' says which) show what the sglang view (SGLang 0.5.23 {parsers}) loses; one carries a "
    "recorded response. Rebuild: scripts/make_family_golden.py."
)
LAYOUTS = {
    "qwen3": ("Qwen3", "<think>\\n...\\n</think>\\n\\n (none with enable_thinking=false, 20% of samples), content, "
              "<tool_call> JSON blocks, <|im_end|>"),
    "deepseek-v3": ("DeepSeek-V3", "content, <｜tool▁calls▁begin｜> calls with json code-block arguments "
                    "<｜tool▁calls▁end｜>, <｜end▁of▁sentence｜>"),
}


def manifest(dataset, samples):
    profile_name, tokenizer_spec, _ = FAMILIES[dataset]
    model, layout = LAYOUTS[profile_name]
    parsers = get_profile_spec(profile_name).views["sglang"].flags  # the server flags the family's view declares
    return {
        "name": dataset,
        "profile": profile_name,
        "tokenizer": tokenizer_spec,
        "api_view": "sglang",
        "source": SOURCE.format(model=model, tokenizer=tokenizer_spec, layout=layout, parsers=parsers),
        "description": f"{model} tool-calling, coding and answer turns: one or several calls, nested and non-ASCII "
        "arguments, long reasoning, code blocks, length cuts, one quirk sample per divergence class the format allows.",
        "max_known_divergence_rate": known_divergence_rate(samples),
        "samples": len(samples),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "golden"), help="golden dir to write into (default: the project's golden/)")
    args = p.parse_args(argv)
    for dataset in FAMILIES:
        samples = build(dataset)
        path = write_dataset(Path(args.out) / dataset, manifest(dataset, samples), samples)
        quirks = sum(1 for s in samples if "quirk" in s and not s["quirk"].startswith("none"))
        print(f"{path}: {len(samples)} samples, {sum(len(s['output_ids']) for s in samples)} output tokens, {quirks} with a known quirk")
    return 0


if __name__ == "__main__":
    sys.exit(main())

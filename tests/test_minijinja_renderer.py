"""MiniJinja renders every shipped chat template byte-identically to transformers' renderer.

The reference is transformers' own ``TemplateRenderer`` path (itself proven equal to the public
``render_jinja_template`` by tests/test_template_adapter.py). Compared here, text for text (or failure
for failure) with the same tools and variables:

* every conversation of every shipped template-rendered dataset, with and without the generation prompt;
* per shipped template, GENERATED seeded conversations: tools (JSON and TypeScript declarations,
  malformed sets), multi-turn, tool calls with string and object arguments, tool results, reasoning
  under each of its names, Unicode, marker text typed by a user, empty and null fields, text parts,
  and the template switches (thinking, enable_thinking, preserve_thinking).

MiniJinja's own engine (``MiniJinjaTemplate``) is compared, not ``ChatRenderer``, which would hide a
MiniJinja failure behind its fallback. Then the fallback itself: a template MiniJinja refuses, an input
it would print otherwise, a render it fails: each rendered by transformers, said once, the same text.
"""

from __future__ import annotations

import copy
import os
import json
import random
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from kimi_ports.generated import generated_conversations
from tokenizer_roots import SHARED

from pipeline.core import chat_renderer, render
from pipeline.core.chat_renderer import ChatRenderer, TemplateFallback
from pipeline.core.minijinja_renderer import (
    MiniJinjaTemplate, TemplateRaised, Unsupported, jinja2_sequence_tests, plain_inputs, unsupported,
)
from pipeline.core.golden import load_manifest
from pipeline.core.profiles import bind_profile, get_profile_spec
from pipeline.core.prompt_renderers import prompt_renderer
from pipeline.core.prompt_renderers import use_manifest_template
from pipeline.core.render import RenderError, chat_template, prepare, template_inputs
from pipeline.core.template_adapter import Prepared, TemplateRenderer
from pipeline.core.tokenizer import load_tokenizer
from pipeline.core.tokenizer.resolve import tokenizer_location

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
ROOT = GOLDEN.parent
GENERATED = 2000


def template_datasets() -> dict[str, dict]:
    out = {}
    for manifest in sorted(GOLDEN.glob("*/manifest.json")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if prompt_renderer(get_profile_spec(data["profile"])).uses_template:  # not openai-harmony's or an encoder's
            out[manifest.parent.name] = data
    return out


def shipped_templates() -> dict[str, tuple[str, str]]:
    """(profile, tokenizer spec) per distinct shipped template, named by profile."""
    out = {}
    for data in template_datasets().values():
        out.setdefault(data["profile"], (data["profile"], data["tokenizer"], data["name"]))
    return out


_bound: dict = {}


def bound(profile_name: str, spec: str, dataset: str | None = None):
    """The tokenizer and profile, with the chat template the dataset's manifest names (where it names one)."""
    if (profile_name, spec) not in _bound:
        tok = load_tokenizer(tokenizer_location(spec))
        profile = bind_profile(profile_name, tok)
        if dataset is not None:
            use_manifest_template(load_manifest(GOLDEN / dataset), profile, tok)
        _bound[profile_name, spec] = (tok, profile)
    return _bound[profile_name, spec]


def outcome(fn):
    try:
        return fn()
    except TemplateRaised as e:
        return f"raised: {e}"
    except Exception as e:  # noqa: BLE001 - a failure on both sides is the same behaviour
        return f"failed: {type(e).__name__}"


def compare(tok, profile, messages, tools, kwargs, add_generation_prompt) -> tuple[str, str, str]:
    """(MiniJinja's outcome, transformers' outcome, how it was compared): 'text', 'both-failed' or 'not-plain'."""
    tools, variables = template_inputs(tools, profile, kwargs)
    prepared = prepare(tools, variables, tok)
    template = chat_template(tok, tools)[0]
    conversation = [{k: v for k, v in m.items() if v is not None} for m in messages]
    theirs = outcome(lambda: TemplateRenderer(template)(copy.deepcopy(conversation), prepared, add_generation_prompt))
    if not (plain_inputs(prepared.tools) and plain_inputs(prepared.variables) and plain_inputs(conversation)):
        return theirs, theirs, "not-plain"
    try:
        minijinja = MiniJinjaTemplate(template)
    except Unsupported:  # ChatRenderer renders this template with transformers (the fallback test below)
        return theirs, theirs, "fallback"
    ours = outcome(lambda: minijinja(conversation, prepared.tools, prepared.variables, add_generation_prompt))
    # Both refuse (a template's own raise_exception reaches transformers as its TemplateError): ChatRenderer
    # then raises transformers' own error.
    if ours.startswith(("failed: ", "raised: ")) and theirs.startswith(("failed: ", "raised: ")):
        return ours, ours, "both-failed"  # ChatRenderer then raises transformers' own error
    return ours, theirs, "text"


@pytest.mark.parametrize("dataset", sorted(template_datasets()))
def test_every_shipped_conversation_renders_identically(dataset):
    manifest = template_datasets()[dataset]
    tok, profile = bound(manifest["profile"], manifest["tokenizer"], dataset)
    compared = 0
    for line in (GOLDEN / dataset / "samples.jsonl").read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        if not sample.get("messages"):
            continue
        for add_generation_prompt in (True, False):
            ours, theirs, how = compare(tok, profile, sample["messages"], sample.get("tools"), sample.get("chat_template_kwargs"),
                                        add_generation_prompt)
            assert how in ("text", "fallback"), (dataset, sample["id"], how, theirs)
            assert ours == theirs, (dataset, sample["id"], add_generation_prompt)
            compared += 1
    assert compared >= 2 * 40


SWITCHES = [None, {"thinking": False}, {"preserve_thinking": True}, {"enable_thinking": False}, {"enable_thinking": True},
            {"thinking": True, "preserve_thinking": True}]


def varied(seed: int, count: int) -> list[tuple[list, list | None, dict | None]]:
    """generated_conversations, each with one template switch, and a share with empty fields and odd text added."""
    rng = random.Random(seed)
    out = []
    for messages, tools in generated_conversations(seed=seed, count=count):
        roll = rng.random()
        if roll < 0.1:
            messages = [{**m, "content": ""} if m["role"] != "system" else m for m in messages]
        elif roll < 0.2:
            messages = messages + [{"role": "assistant", "content": "", "reasoning_content": ""}, {"role": "user", "content": "é\u0301 \u200b ‮ 😀\r\n"}]
        elif roll < 0.25:
            tools = []
        elif roll < 0.3:
            messages = [{**m, "name": ""} for m in messages]
        out.append((messages, tools, rng.choice(SWITCHES)))
    return out


@pytest.mark.parametrize("template_of", sorted(shipped_templates()))
def test_generated_conversations_render_identically(template_of):
    tok, profile = bound(*shipped_templates()[template_of])
    counts = {"text": 0, "both-failed": 0, "not-plain": 0, "fallback": 0}
    for i, (messages, tools, kwargs) in enumerate(varied(seed=11, count=GENERATED)):
        ours, theirs, how = compare(tok, profile, messages, tools, kwargs, add_generation_prompt=i % 5 != 0)
        assert ours == theirs, (template_of, i, how)
        counts[how] += 1
    assert sum(counts.values()) == GENERATED
    # Most by MiniJinja. The rest: conversations the template itself refuses (SmolLM2's and Qwen3-Coder's concatenate
    # a text-parts list or a missing content: both engines fail; DeepSeek-V3.1's tools block writes every tool's
    # description and parameters, so it refuses the generated tools that lack one), and inputs with floats written
    # 1e-07 (transformers renders them).
    share = 0.5 if template_of in ("deepseek-v3.1", "qwen3-coder") else 0.6
    assert counts["text"] + counts["fallback"] >= GENERATED * share and counts["not-plain"] <= GENERATED * 0.1, counts


# -- the fallback ---------------------------------------------------------------------------------
def test_a_template_minijinja_refuses_is_rendered_by_transformers_and_said_once(monkeypatch):
    monkeypatch.setattr(chat_renderer, "_said", {})
    template = "{% for m in messages %}{{ m.content|title }}{% if m.content is sequence %}!{% endif %}{% endfor %}"
    assert unsupported(template) == "title"
    with pytest.raises(Unsupported):
        MiniJinjaTemplate(template)
    prepared = Prepared(None, {})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        renderer = ChatRenderer(template)
        texts = [renderer([{"role": "user", "content": "ǅx hello"}], prepared, True) for _ in range(3)]
        ChatRenderer(template)
    assert renderer.engine == "transformers"
    assert texts == ["Ǆx Hello!"] * 3  # jinja2: its title filter upper-cases the first letter, a string is a sequence
    assert [str(w.message) for w in caught if w.category is TemplateFallback] == [
        "tokfidelity: the chat template beginning '{% for m in messages %}{{ m.content|title }}{% if m.content is sequence %}!{% en' "
        "is rendered by transformers' renderer, not MiniJinja: it uses title, which MiniJinja renders differently from jinja2"]


def test_text_in_a_template_is_not_taken_for_code():
    assert unsupported("Answer in the format {name}: its title, as a sequence. 100% sure.{{ messages[0].content }}") is None
    assert unsupported("{{ '%s' % x }}") == "format" and unsupported("{{ x|format(1) }}") == "format"
    assert unsupported("{{ x.__class__ }}") == "underscore attribute"


# Every kind of value a template tests: undefined (no key), none, strings, lists, mappings, numbers, bools.
TESTED_VALUES = [{"role": "user"}] + [{"role": "user", "x": x} for x in (None, "s", "", [1], [], {"a": 1}, {}, 1, 0, 1.5, True, False)]


@pytest.mark.parametrize("tools", [None, [], [{"type": "function", "function": {"name": "f"}}]], ids=["none", "empty", "one"])
def test_sequence_and_iterable_tests_answer_as_jinja2s(tools):
    """MiniJinja's own ``sequence`` test is false for a string and a mapping, its ``iterable`` true for none: their
    plain forms are rewritten so that every kind of value gets jinja2's answer (``jinja2_sequence_tests``)."""
    template = ("{% for m in messages %}[{{ m.x is sequence }}|{{ m.x is not sequence }}|{{ not m.x is sequence }}|"
                "{{ m['x'] is sequence and m.x is not string }}|{{ m.y is sequence }}|{{ m.x is iterable }}|"
                "{{ m.x is not iterable }}|{{ m.y is iterable }}|{{ m.x is mapping or (m.x is sequence and m.x is not string) }}]"
                "{% endfor %}{% if tools is iterable and tools | length > 0 %}tools{% endif %}")
    prepared = Prepared(tools, {})
    ours = MiniJinjaTemplate(template)(TESTED_VALUES, tools, {}, True)
    assert ours == TemplateRenderer(template)(copy.deepcopy(TESTED_VALUES), prepared, True)
    assert ours.startswith("[True|False|False|True|True|True|False|True|True][False|True|True|False|True|False|True|True|False]")


def test_a_sequence_test_minijinja_cannot_be_given_jinja2s_answer_for_is_refused():
    # the end of a longer operand (a filter's, a parenthesis', an operator's): left as written, and refused
    for template in ("{{ messages|first is sequence }}", "{{ (messages) is iterable }}", "{{ 'a' ~ x is not sequence }}",
                     "{{ f(x).y is sequence }}", "{{ - x is sequence }}",
                     "{% raw %}{{ x is sequence }}{% endraw %}{{ x }}"):
        assert jinja2_sequence_tests(template) == template
        assert unsupported(template) in ("is sequence", "is iterable"), template
    # inside a string literal it is text: left as written (so the template is refused, never its text changed)
    assert jinja2_sequence_tests("{{ 'x is sequence' }}") == "{{ 'x is sequence' }}"
    assert jinja2_sequence_tests('{{ "a\\" x" ~ (y is sequence) }} y is sequence') == (
        '{{ "a\\" x" ~ ((y is undefined or y is jinja2_sequence)) }} y is sequence')  # its text is not code


def test_an_input_minijinja_would_print_otherwise_is_rendered_by_transformers(monkeypatch):
    monkeypatch.setattr(chat_renderer, "_said", {})
    renderer = ChatRenderer("{% for m in messages %}{{ m.content }}|{{ m.n }};{% endfor %}")
    cases = [1e-07, 1e16, 2 ** 70, float("nan")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        texts = [renderer([{"role": "user", "content": "a", "n": n}], Prepared(None, {}), True) for n in cases]
    assert texts == ["a|1e-07;", "a|1e+16;", f"a|{2 ** 70};", "a|nan;"]  # Python's spelling, as jinja2 prints
    assert sum(w.category is TemplateFallback for w in caught) == 1
    assert renderer.engine == "minijinja"  # those renders only
    assert renderer([{"role": "user", "content": "b", "n": 0.5}], Prepared(None, {}), True) == "b|0.5;"
    assert not plain_inputs({"a": (1,)}) and not plain_inputs({1: "x"}) and plain_inputs({"a": [None, True, 1.5, "x"]})


def test_a_render_minijinja_fails_is_rendered_by_transformers_from_then_on(monkeypatch):
    monkeypatch.setattr(chat_renderer, "_said", {})
    template = "{{ messages[0].content }}{{ messages[0].content.removesuffix('!') }}"  # a str method pycompat lacks
    renderer = ChatRenderer(template)
    assert renderer.engine == "minijinja"
    with pytest.warns(TemplateFallback, match="MiniJinja failed a conversation transformers renders"):
        text = renderer([{"role": "user", "content": "hi!"}], Prepared(None, {}), True)
    assert text == "hi!hi" and renderer.engine == "transformers"


def test_a_render_both_engines_fail_fails_with_transformers_error_and_keeps_minijinja(monkeypatch):
    monkeypatch.setattr(chat_renderer, "_said", {})
    renderer = ChatRenderer("{{ messages[0].content }}{{ 1 / 0 if messages[0].content == 'x' else '' }}")
    with pytest.raises(ZeroDivisionError):
        renderer([{"role": "user", "content": "x"}], Prepared(None, {}), True)
    assert renderer.engine == "minijinja" and chat_renderer.fallbacks() == []
    assert renderer([{"role": "user", "content": "y"}], Prepared(None, {}), True) == "y"


def test_raise_exception_is_the_templates_error_on_either_engine(tmp_path, monkeypatch):
    shutil_copy = SHARED / "qwen3"
    template = "{% if messages[0].role != 'system' %}{{ raise_exception('a system turn first, got ' ~ messages[0].role) }}{% endif %}ok"
    tok_dir = tmp_path / "tok"
    tok_dir.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (tok_dir / name).write_bytes((shutil_copy / name).read_bytes())
    (tok_dir / "chat_template.jinja").write_text(template, encoding="utf-8")
    render._template_files.cache_clear()
    tok = load_tokenizer(str(tok_dir))
    profile = bind_profile("qwen3", tok)
    said = []
    for engine in ("minijinja", "transformers"):
        monkeypatch.setenv(chat_renderer.ENGINE_ENV, engine)
        render._renderer.cache_clear()
        with pytest.raises(RenderError) as e:
            render.render_text([{"role": "user", "content": "hi"}], None, profile, tok)
        said.append(str(e.value))
        assert render.renderer_for(tok).engine == engine
    render._template_files.cache_clear()
    render._renderer.cache_clear()
    assert said[0] == said[1] and "cannot render this conversation: TemplateError: a system turn first, got user" in said[0]


def test_a_template_that_never_ends_stops_on_fuel_and_the_time_limit(monkeypatch):
    monkeypatch.setattr(render, "RENDER_SECONDS", 1.0)
    renderer = ChatRenderer("{% set s = 'x' * 30000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}")
    assert renderer.engine == "minijinja"
    from pipeline.core.watchdog import TimeLimitExceeded, time_limit

    with pytest.raises(TimeLimitExceeded), time_limit(1.0):  # MiniJinja ran out of fuel; jinja2 was stopped by the limit
        renderer([{"role": "user", "content": "x"}], Prepared(None, {}), True)


@pytest.mark.parametrize("dataset", ["B1_glaive", "C1_glaive"])  # Kimi K2.5; Qwen3-Coder (its `is sequence` rewritten)
def test_verifying_imports_no_transformers(dataset):
    """A prompt verdict on a template MiniJinja renders never imports transformers (nor jinja2)."""
    code = ("import sys, json; from pipeline.core.golden import load_manifest, read_samples; "
            "from pipeline.core.binding import bind_dataset; from pipeline.core.prompt_check import PromptJudge, PROMPT_EXACT; "
            f"m = load_manifest('golden/{dataset}'); tok, profile = bind_dataset(m.profile, m.tokenizer); judge = PromptJudge(profile, tok); "
            f"verdicts = [judge(s) for s in read_samples('golden/{dataset}')]; assert verdicts and set(verdicts) == {{PROMPT_EXACT}}, verdicts[:3]; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('transformers', 'jinja2'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == []


@pytest.mark.parametrize("engine", ["", "transformers"])
def test_the_suite_imports_transformers_only_where_a_template_falls_back(tmp_path, engine):
    """A user's project verifying B1 (Kimi K2.5, prompt verdicts on): no process of the run (the controlling one,
    the forked judges: ``-X importtime`` is inherited) imports transformers or jinja2, unless transformers'
    renderer is asked for (``TOKFIDELITY_TEMPLATE_ENGINE=transformers``), which proves the check can fail."""
    import shutil

    shutil.copytree(GOLDEN / "B1_glaive", tmp_path / "golden" / "B1_glaive")
    env = {**os.environ, chat_renderer.ENGINE_ENV: engine, "TOKFIDELITY_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "pytest", "--tokfidelity-dataset=B1_glaive", "-q",
                          "-p", "no:cacheprovider", "-p", "no:randomly"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and "148 passed" in out.stdout and "prompts: 144 exact" in out.stdout, out.stdout[-3000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "minijinja" in imported or engine
    assert ({"transformers", "jinja2"} & imported) == ({"transformers", "jinja2"} if engine else set())


def test_each_kind_of_fallback_is_said_once(monkeypatch):
    monkeypatch.setattr(chat_renderer, "_said", {})
    renderer = ChatRenderer("{{ messages[0].n }}{{ messages[0].content.removesuffix('!') if messages[0].content else '' }}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n, content in [(1e-07, ""), (1e-08, ""), (1, "a!"), (2, "b!")]:
            renderer([{"role": "user", "content": content, "n": n}], Prepared(None, {}), True)
    said = [str(w.message) for w in caught if w.category is TemplateFallback]
    assert len(said) == 2 and "an input holds" in said[0] and "MiniJinja failed" in said[1]
    assert [why[:20] for _, why in chat_renderer.fallbacks()] == ["an input holds a val", "MiniJinja failed a c"]

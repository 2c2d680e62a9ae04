"""tinker-cookbook's own Kimi K2.5 renderer gives tokfidelity's prompt ids, id for id.

tinker-cookbook 0.6.1 (``tinker_cookbook/renderers/kimi_k25.py``, ``KimiK25Renderer``) is driven the way
its own OpenAI-compatible path drives it (``third_party/litellm/provider.py``): messages through
``openai_messages_to_tinker``, tools through ``openai_tools_to_tinker`` and
``create_conversation_prefix_with_tools`` (a leading system message becomes its ``system_prompt``), then
``build_generation_prompt(...).to_ints()``. Its tokenizer is tokfidelity's Kimi tokenizer behind the
adapter renderers' test uses (Kimi's transformers tokenizer class exists only as model-repository code,
which never runs here). Tools are deep-sorted first: that is the official pre-processing (Kimi's
tokenizer sorts before rendering) and the cookbook leaves it to the caller.

The one template-default difference, documented by the cookbook (``KimiK2Renderer._ensure_system_message``):
a conversation without a system message gets ``You are Kimi, an AI assistant created by Moonshot AI.`` as
a system turn, first, or right after the tool declaration. K2.5's own chat_template.jinja adds none (K2's
did). The test checks that turn is exactly there and removes exactly it; everything else is compared id for
id. Where the cookbook departs from the model's template (whose behaviour tests/test_render.py holds
tokfidelity to), the departure is named and counted, and the rest still checked: conversations it refuses
must raise; what it ignores (``reasoning``, ``name`` on non-tool messages) is taken out and the ids
compared again; several text parts in one message give the same text, in other ids.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import io
import warnings

import pytest
from kimi_ports import HFStyleTokenizer
from kimi_ports.generated import generated_conversations
from test_render import golden_conversations, official_ts

from pipeline.core.kimi_tools_ts import deep_sort
from pipeline.core.prompt_renderers import render_prompt

PINS = {"tinker-cookbook": "0.6.1", "tinker": "0.38.0"}
GENERATED = 700


@pytest.fixture(scope="module")
def cookbook():
    for dist, version in PINS.items():
        try:
            found = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found = None
        assert found == version, f"{dist} {found} installed; this test pins {version} (run scripts/setup)"
    from tinker_cookbook.renderers.kimi_k25 import KimiK25Renderer
    from tinker_cookbook.third_party import openai_compat

    return KimiK25Renderer, openai_compat


@pytest.fixture(scope="module")
def renderer(cookbook, kimi):
    return cookbook[0](HFStyleTokenizer(kimi))


def cookbook_prompt(cookbook, renderer, messages, tools) -> list[int]:
    """tinker-cookbook's OpenAI path (litellm/provider.py: _sample_chat_completion and
    _prepare_messages_with_tools, restated here because that module needs litellm)."""
    compat = cookbook[1]
    converted = compat.openai_messages_to_tinker(copy.deepcopy(messages))
    if tools:
        specs = compat.openai_tools_to_tinker(deep_sort(tools))
        system_prompt, rest = "", converted
        if converted and converted[0]["role"] == "system":
            content = converted[0].get("content") or ""
            system_prompt, rest = (content if isinstance(content, str) else ""), converted[1:]
        converted = renderer.create_conversation_prefix_with_tools(specs, system_prompt) + rest
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):  # its encoder prints warnings
        warnings.simplefilter("ignore")  # a tool message without 'name' (the template then uses 'tool' too)
        return renderer.build_generation_prompt(converted).to_ints()


def without_default_system(ids, messages, tools, renderer, kimi) -> list[int]:
    """The ids less the cookbook's default system turn, which must be exactly where it documents it."""
    if messages and messages[0].get("role") == "system":
        return ids
    turn = kimi.encode(f"<|im_system|>system<|im_middle|>{renderer.DEFAULT_SYSTEM_PROMPT}<|im_end|>")
    at = 0
    if tools:  # right after the tool declaration (whose text may itself hold <|im_end|>)
        at = len(kimi.encode("<|im_system|>tool_declare<|im_middle|>" + official_ts(deep_sort(tools)) + "<|im_end|>"))
    assert ids[at:at + len(turn)] == turn, "the default system turn is not where tinker-cookbook documents it"
    return ids[:at] + ids[at + len(turn):]


def refused(messages, tools) -> str | None:
    """Why tinker-cookbook 0.6.1 refuses a conversation that Kimi K2.5's tokenizer renders."""
    for m in messages:
        for call in m.get("tool_calls") or []:
            if not isinstance(call["function"].get("arguments"), str):
                return "tool-call arguments as an object (its ToolCall takes only a string; the template writes tojson)"
    if tools and official_ts(deep_sort(tools)) is None:
        return "tool schema the official encoder rejects (no JSON fallback; Kimi's tokenizer falls back to JSON)"
    return None


def as_the_cookbook_reads(messages) -> tuple[list, list[str]]:
    """The conversation with what tinker-cookbook 0.6.1 ignores taken out, and the documented departures met.
    In each the template's behaviour is the official one (tests/test_render.py holds tokfidelity to it)."""
    out, why = [], set()
    for m in messages:
        m = dict(m)
        if m.get("role") == "assistant" and "reasoning" in m and "reasoning_content" not in m:
            del m["reasoning"]
            why.add("reasoning under 'reasoning' (openai_messages_to_tinker reads only 'reasoning_content')")
        if m.get("role") != "tool" and m.get("name"):
            del m["name"]
            why.add("'name' on a non-tool message (the template writes it as the role name; the cookbook the role)")
        if m.get("role") != "assistant" and isinstance(m.get("content"), list) and len(m["content"]) > 1:
            why.add(MULTIPART)
        out.append(m)
    return out, sorted(why)


MULTIPART = "several text parts (encoded one by one: same text, other ids; the engine encodes the rendered text whole)"


def test_tinker_cookbook_renderer_gives_the_same_ids(cookbook, renderer, kimi, profile):
    golden = golden_conversations()
    cases = [(name, m, t) for name, m, t in golden]
    cases += [(f"generated {i}", m, t) for i, (m, t) in enumerate(generated_conversations(seed=7, count=GENERATED))]
    same = {"golden": 0, "generated": 0}
    departed: dict[str, int] = {}
    for name, messages, tools in cases:
        why = refused(messages, tools)
        if why:
            departed[why] = departed.get(why, 0) + 1
            with pytest.raises(Exception):  # noqa: B017,PT011 - pydantic's or the official encoder's own error
                cookbook_prompt(cookbook, renderer, messages, tools)
            continue
        theirs = without_default_system(cookbook_prompt(cookbook, renderer, messages, tools), messages, tools, renderer, kimi)
        read, whys = as_the_cookbook_reads(messages)
        for why in whys:
            departed[why] = departed.get(why, 0) + 1
        if not whys:
            assert render_prompt(messages, tools, profile, kimi) == theirs, name
            same["generated" if name.startswith("generated") else "golden"] += 1
        elif MULTIPART in whys:
            assert kimi.decode(render_prompt(read, tools, profile, kimi)) == kimi.decode(theirs), name
        else:  # what it ignores taken out, the rest is the same, id for id
            assert render_prompt(read, tools, profile, kimi) == theirs, name
    assert same["golden"] == len(golden) == 256  # every B1 and B3 conversation, no exception
    assert same["generated"] >= 150, (same, departed)
    assert sum(1 for _, _, t in cases if t) >= 150  # tool declarations, TypeScript and the JSON fallback, met
    print(same, departed)

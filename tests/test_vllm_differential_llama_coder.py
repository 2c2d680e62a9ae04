"""The ``vllm`` views of llama3 and qwen3-coder (``vllm`` for 0.33.0, ``vllm-0.32`` for 0.32.0) agree with
vLLM's own code on the same ids: each release's responses recorded as data
(``tests/engine_responses/llama3/``, ``tests/engine_responses/qwen3-coder/``, written by
``vllm_support.cases_llama3.record``: vLLM's ``Llama3JsonToolParser`` / ``Qwen3EngineToolParser``,
``IncrementalDetokenizer`` and ``chat_completion_full_generator`` run through ``vllm_support/driver.py``;
0.33.0 from its wheel's Python files over .venv-vllm), and the installed release run live where
.venv-vllm exists.

Cases (``vllm_support/cases_llama3.py``, ``cases_qwen3_coder.py``): named cases, 400 random outputs and
400 random schema-bearing requests (typed tools, ``tool_choice`` auto / none / required / named, no tools).
Each view's response must equal vLLM's field by field; random call ids are compared by shape.
"""

from __future__ import annotations

import pytest

from pipeline.core.engines.view import VLLM_OLDER, VLLM_VERSION
from pipeline.core.views import api_view
from test_vllm_differential import comparable
from vllm_support import INSTALLED, view_for
from vllm_support import cases_llama3, cases_qwen3_coder
from vllm_support.recorded import case_digest, group_key, read_release


FAMILIES = {"llama3": cases_llama3, "qwen3-coder": cases_qwen3_coder}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request):
    module = FAMILIES[request.param]
    return module.RECORDED, module.groups()


def _disagreements(group, responses, view) -> list[str]:
    bad = []
    for name, (ids, finish) in group.cases.items():
        got = api_view(ids, finish, group.profile, group.tokenizer, view, group.request(name))
        if comparable(got) != comparable(responses[name]):
            bad.append(f"{view} {name} ({finish}) request {group.requests.get(name, 'default')!r}\n"
                       f"   view {comparable(got)!r}\n   vLLM {comparable(responses[name])!r}")
    return bad


@pytest.mark.parametrize("version", [VLLM_VERSION, *VLLM_OLDER])
def test_views_agree_with_the_recorded_release(version, family):
    recorded, built = family
    doc = read_release(recorded / f"vllm-{version}.json.gz")
    assert (doc["engine"], doc["version"]) == ("vllm", version)
    report = []
    for group in built:
        cases = doc["groups"][group_key(group)]
        assert set(cases) == set(group.cases), f"{version} {group_key(group)}: cases changed since recording"
        for name in group.cases:
            assert cases[name]["digest"] == case_digest(group.driver_case(name)), f"{version} {name}: case changed"
        assert sum(n.startswith("random-") for n in cases) >= 400 and sum(n.startswith("schema-") for n in cases) >= 400
        bad = _disagreements(group, {n: c["response"] for n, c in cases.items()}, view_for(group.profile, version))
        if bad:
            report.append(f"{group_key(group)}: {len(bad)}/{len(cases)} disagree:\n" + "\n".join(bad[:6]))
    assert not report, "\n\n".join(report)


def test_the_llama3_behaviours_are_what_vllm_does():
    """What the llama3_json parser does, seen in both releases' own output."""
    RECORDED = cases_llama3.RECORDED
    for version in (VLLM_VERSION, *VLLM_OLDER):
        r = {n: c["response"] for n, c in read_release(RECORDED / f"vllm-{version}.json.gz")["groups"]["llama3 {}"].items()}
        assert r["json-call"]["content"] is None and r["json-call"]["tool_calls"][0]["function"]["arguments"] == '{"q": "München"}'
        assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2]}'
        assert r["content-tag-call-content-dropped"]["content"] is None  # the text before the call is lost
        assert r["builtin-call-tag-skipped"]["content"] == 'brave_search.call(query="x")'
        assert r["brace-text-not-json"]["content"] == "Use {braces} here." and r["brace-text-not-json"]["tool_calls"] is None
        assert r["missing-name"]["tool_calls"] is None
    old = read_release(RECORDED / f"vllm-{VLLM_OLDER[0]}.json.gz")["groups"]["llama3 {}"]["cut-after-call"]["response"]
    new = read_release(RECORDED / f"vllm-{VLLM_VERSION}.json.gz")["groups"]["llama3 {}"]["cut-after-call"]["response"]
    assert (old["finish_reason"], new["finish_reason"]) == ("tool_calls", "length")


def test_the_qwen3_coder_behaviours_are_what_vllm_does():
    """What the qwen3_coder parser does, seen in both releases' own output: values converted by the schema."""
    for version in (VLLM_VERSION, *VLLM_OLDER):
        doc = read_release(cases_qwen3_coder.RECORDED / f"vllm-{version}.json.gz")["groups"]
        r = {n: c["response"] for n, c in doc["qwen3-coder {}"].items()}
        args = lambda name: r[name]["tool_calls"][0]["function"]["arguments"]  # noqa: E731
        assert args("one-call") == '{"q": "Oslo"}' and r["content-stripped"]["content"] == "Let me check."
        assert args("number-integral") == '{"n": 5}' and args("number-exponent") == '{"n": 1000}'
        assert args("integer-as-float") == '{"i": 5.0}' and args("boolean-capitalised") == '{"b": true}'
        assert args("nullable-null") == '{"o": null}' and args("array") == '{"a": [1, 2.0]}' and args("string-stays") == '{"s": "5"}'
        assert len(r["text-between-dropped"]["tool_calls"]) == 2 and r["text-between-dropped"]["content"] is None
        assert r["literal-think-end"]["content"] == "Write </think> here."
        assert r["tool-choice-none"]["tool_calls"] is None and r["no-tools"]["tool_calls"] is None
    above = {v: read_release(cases_qwen3_coder.RECORDED / f"vllm-{v}.json.gz")["groups"]["qwen3-coder {}"]["number-above-2-53"]
             for v in (VLLM_VERSION, *VLLM_OLDER)}
    assert above[VLLM_VERSION]["response"]["tool_calls"][0]["function"]["arguments"] == '{"n": 9007199254740993}'  # int() first
    assert above[VLLM_OLDER[0]]["response"]["tool_calls"][0]["function"]["arguments"] == '{"n": 9007199254740992}'


@pytest.mark.slow
def test_views_agree_with_the_installed_release(family):
    _, built = family
    from vllm_support import unavailable, vllm_responses

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    answers = vllm_responses([(g.setup, [g.driver_case(n) for n in g.cases]) for g in built])
    report = []
    for group, responses in zip(built, answers):
        responses = dict(zip(group.cases, responses))
        errors = [f"{n}: {r['error']}" for n, r in responses.items() if "error" in r]
        assert not errors, errors[:5]
        report += _disagreements(group, responses, view_for(group.profile, INSTALLED))
    assert not report, f"{len(report)} disagree:\n" + "\n".join(report[:6])

"""Every view agrees with every recorded engine release, without the release installed.

``tests/engine_responses/<engine>-<version>.json.gz`` holds what a release's own code returned for each
vLLM differential case (``tests/record-engine-responses``; ``vllm_support/recorded.py``). The cases are
rebuilt from their seeds, each checked against the recorded digest of its input, and each view standing
for that release (``View.engine`` and ``View.version``: ``vllm`` for 0.33.0, ``vllm-0.32`` for 0.32.0)
must give the recorded response field by field (random call ids compared by shape). Every release a
``vllm`` view stands for must have a recording, and the releases must differ where their code does.
"""

from __future__ import annotations

import json

import pytest

from pipeline.core.engines.view import VLLM_OLDER, VLLM_VERSION
from pipeline.core.engines.view import release as release_numbers
from pipeline.core.views import api_choice, api_view
from test_vllm_differential import comparable
from vllm_support.recorded import case_digest, group_key, recorded_releases


@pytest.fixture(scope="module")
def groups():
    from vllm_support.cases import all_groups

    return all_groups()


@pytest.fixture(scope="module")
def recorded():
    return recorded_releases()


def test_every_vllm_release_a_view_stands_for_is_recorded(recorded):
    for version in (VLLM_VERSION, *VLLM_OLDER):
        assert ("vllm", version) in recorded, f"no recorded responses of vllm {version}: run tests/record-engine-responses"


@pytest.mark.parametrize("release", [f"vllm-{v}" for v in (VLLM_VERSION, *VLLM_OLDER)])
def test_views_agree_with_the_recorded_release(release, groups, recorded):
    engine, version = release.split("-", 1)
    doc = recorded[(engine, version)]
    report = []
    for group in groups:
        cases = doc["groups"].get(group_key(group))
        assert cases is not None, f"{release}: no recording of {group_key(group)}: run tests/record-engine-responses"
        assert set(cases) == set(group.cases), f"{release} {group_key(group)}: cases changed since recording"
        names = [n for n, v in group.profile.spec.views.items() if v.engine == engine and v.version == version]
        assert names, f"{group.family} has no view for {release}"
        bad = []
        for name, (ids, finish) in group.cases.items():
            entry = cases[name]
            assert entry["digest"] == case_digest(group.driver_case(name)), f"{release} {name}: case changed since recording"
            for view in names:
                got = api_view(ids, finish, group.profile, group.tokenizer, view, group.request(name))
                if comparable(got) != comparable(entry["response"]):
                    bad.append(f"{view} {name}: view {comparable(got)!r}\n   recorded {comparable(entry['response'])!r}")
        if bad:
            report.append(f"{group_key(group)}: {len(bad)} disagree:\n" + "\n".join(bad[:5]))
    assert not report, "\n\n".join(report)


def test_the_releases_differ_where_their_code_does(recorded):
    """vLLM 0.32 -> 0.33, seen in the two recordings: a call cut by max_tokens ends "length" (was
    "tool_calls"); a DeepSeek-V3 call whose arguments span lines is extracted (was lost); Qwen3 starts in
    content when the prompt already closed the reasoning (was reasoning)."""
    old, new = recorded[("vllm", "0.32.0")]["groups"], recorded[("vllm", VLLM_VERSION)]["groups"]
    cut_old = old['kimi-k2.5 {}']["length-cut-after-complete-call"]["response"]
    cut_new = new['kimi-k2.5 {}']["length-cut-after-complete-call"]["response"]
    assert (cut_old["finish_reason"], cut_new["finish_reason"]) == ("tool_calls", "length")
    assert cut_old["tool_calls"] == cut_new["tool_calls"]
    lost_old = old['deepseek-v3 {}']["multi-line-args-lost"]["response"]
    lost_new = new['deepseek-v3 {}']["multi-line-args-lost"]["response"]
    assert lost_old["tool_calls"] is None and lost_new["tool_calls"][0]["function"]["name"] == "get_weather"
    closed = 'qwen3 {"enable_thinking": true} prompt closed reasoning'
    start_old, start_new = old[closed]["starts-in-content"]["response"], new[closed]["starts-in-content"]["response"]
    assert (start_old["reasoning"], start_old["content"]) == ("Answer.", None)  # 0.32: all reasoning
    assert (start_new["reasoning"], start_new["content"]) == (None, "Answer.")  # 0.33: the prompt closed it
    changed = sum(old[g][n]["response"] != new[g][n]["response"] for g in old for n in old[g])
    assert changed >= 50, changed


@pytest.mark.parametrize("release", [f"vllm-{v}" for v in (VLLM_VERSION, *VLLM_OLDER)])
def test_choices_carry_the_null_fields_of_their_release(release, groups, recorded):
    """Every recorded choice sends the same fields as null (the request asks for no logprobs and no ids), and the
    view's assembled choice (``api_choice``) sends those: 0.33 adds ``"weight_versions": null``, 0.32 has none."""
    engine, version = release.split("-", 1)
    doc = recorded[(engine, version)]
    seen = {tuple(entry["response"]["choice_nulls"]) for cases in doc["groups"].values() for entry in cases.values()}
    assert len(seen) == 1, seen
    (nulls,) = seen
    assert ("weight_versions" in nulls) == (release_numbers(version) >= (0, 33)), nulls
    for group in groups:
        for view in [n for n, v in group.profile.spec.views.items() if v.engine == engine and v.version == version]:
            for name in list(group.cases)[:5]:
                ids, finish = group.cases[name]
                choice = api_choice(ids, finish, group.profile, group.tokenizer, view, group.request(name))
                assert tuple(sorted(k for k, v in choice.items() if v is None)) == nulls, (view, name, choice)
                assert choice["message"]["content"] == api_view(ids, finish, group.profile, group.tokenizer, view,
                                                                group.request(name))["content"]


def test_records_name_the_release_a_view_stands_for():
    """results.json's per-view entries and gate records say which engine release each view stands for."""
    from pipeline.core.names import view_release
    from pipeline.reporting.results import dataset_entry

    assert view_release("kimi-k2.5", "vllm") == f"vllm {VLLM_VERSION}"
    assert view_release("kimi-k2.5", "vllm-0.32") == "vllm 0.32.0"
    assert view_release("qwen3", "sglang") == "sglang 0.5.23"
    assert view_release("qwen3", "sglang-legacy") is None and view_release("nope", "vllm") is None
    counts = {"samples": 2, "exact": 2}
    entry = dataset_entry(name="d", counts=counts, samples_total=2, profile="qwen3", tokenizer="qwen3",
                          tokenizer_fingerprint=None, view="vllm", golden_files={}, accept={}, max_known_divergence_rate=0.0,
                          gate_note="", problems=(), partial_reasons=(), wall_s=0.0,
                          by_view={"vllm": counts, "vllm-0.32": counts, "sglang": counts})
    assert {v: e.get("engine") for v, e in entry["by_view"].items()} == {
        "vllm": f"vllm {VLLM_VERSION}", "vllm-0.32": "vllm 0.32.0", "sglang": "sglang 0.5.23"}


def _responses(recorded, version: str, key: str) -> dict:
    return {name: entry["response"] for name, entry in recorded[("vllm", version)]["groups"][key].items()}


def test_the_deepseek_named_cases_reach_their_behaviours(recorded):
    """What vLLM's own code returned for the named DeepSeek-V3.1 / V3.2 cases: the behaviours the views restate; and
    0.32 -> 0.33, a V3.1 call whose arguments span lines is extracted (0.32 lost it)."""
    v31 = _responses(recorded, VLLM_VERSION, 'deepseek-v3.1 {"thinking": false}')
    v32 = _responses(recorded, VLLM_VERSION, 'deepseek-v3.2 {"thinking": true}')
    args = lambda group, name, i=0: json.loads(group[name]["tool_calls"][i]["function"]["arguments"])  # noqa: E731
    assert v31["args-verbatim"]["tool_calls"][0]["function"]["arguments"] == '{"q":1,"n":[1,2],"f":1e3}'
    assert v31["content-unstripped"]["content"] == "  I will check.\n"
    assert v31["args-not-json-verbatim"]["tool_calls"][0]["function"]["arguments"] == "not json"
    assert v32["content-keeps-blank-line"]["content"] == "Let me check.\n\n"
    assert args(v32, "string-values-unstripped") == {"s": "  padded \n", "m": "two\nlines"}
    assert args(v32, "typed-params") == {"n": 5.0, "b": True, "l": [1, 2], "o": {"k": None}, "big": 2**64}
    assert args(v32, "no-string-attribute") == {"x": 5}
    assert args(v32, "json-body") == {}  # a JSON body is no DSML parameter
    assert args(v32, "wrapped-arguments") == {"arguments": {"q": 1}}  # no schema declared: left wrapped
    assert v32["bare-invoke"]["content"] == "c\n\n" and v32["bare-invoke"]["tool_calls"]
    assert len(v32["length-cut-in-call"]["tool_calls"]) == 2  # the unclosed invoke still is a call
    key = 'deepseek-v3.1 {"thinking": true}'
    lost = _responses(recorded, VLLM_OLDER[0], key)["multi-line-args"]
    found = _responses(recorded, VLLM_VERSION, key)["multi-line-args"]
    assert lost["tool_calls"] == [] or lost["tool_calls"] is None
    assert found["tool_calls"][0]["function"]["name"] == "get"


def test_the_llama3_behaviours_are_what_vllm_does(recorded):
    """What the llama3_json parser does, seen in both releases' own output."""
    for version in (VLLM_VERSION, *VLLM_OLDER):
        r = _responses(recorded, version, "llama3 {}")
        assert r["json-call"]["content"] is None and r["json-call"]["tool_calls"][0]["function"]["arguments"] == '{"q": "München"}'
        assert r["compact-args-reserialised"]["tool_calls"][0]["function"]["arguments"] == '{"q": 1, "n": [1, 2]}'
        assert r["content-tag-call-content-dropped"]["content"] is None  # the text before the call is lost
        assert r["builtin-call-tag-skipped"]["content"] == 'brave_search.call(query="x")'
        assert r["brace-text-not-json"]["content"] == "Use {braces} here." and r["brace-text-not-json"]["tool_calls"] is None
        assert r["missing-name"]["tool_calls"] is None
    old = _responses(recorded, VLLM_OLDER[0], "llama3 {}")["cut-after-call"]
    new = _responses(recorded, VLLM_VERSION, "llama3 {}")["cut-after-call"]
    assert (old["finish_reason"], new["finish_reason"]) == ("tool_calls", "length")


def test_the_qwen3_coder_behaviours_are_what_vllm_does(recorded):
    """What the qwen3_coder parser does, seen in both releases' own output: values converted by the schema."""
    for version in (VLLM_VERSION, *VLLM_OLDER):
        r = _responses(recorded, version, "qwen3-coder {}")
        args = lambda name: r[name]["tool_calls"][0]["function"]["arguments"]  # noqa: E731
        assert args("one-call") == '{"q": "Oslo"}' and r["content-stripped"]["content"] == "Let me check."
        assert args("number-integral") == '{"n": 5}' and args("number-exponent") == '{"n": 1000}'
        assert args("integer-as-float") == '{"i": 5.0}' and args("boolean-capitalised") == '{"b": true}'
        assert args("nullable-null") == '{"o": null}' and args("array") == '{"a": [1, 2.0]}' and args("string-stays") == '{"s": "5"}'
        assert len(r["text-between-dropped"]["tool_calls"]) == 2 and r["text-between-dropped"]["content"] is None
        assert r["literal-think-end"]["content"] == "Write </think> here."
        assert r["tool-choice-none"]["tool_calls"] is None and r["no-tools"]["tool_calls"] is None
    above = {v: _responses(recorded, v, "qwen3-coder {}")["number-above-2-53"] for v in (VLLM_VERSION, *VLLM_OLDER)}
    assert above[VLLM_VERSION]["tool_calls"][0]["function"]["arguments"] == '{"n": 9007199254740993}'  # int() first
    assert above[VLLM_OLDER[0]]["tool_calls"][0]["function"]["arguments"] == '{"n": 9007199254740992}'

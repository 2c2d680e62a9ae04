"""Every view agrees with every recorded engine release, without the release installed.

``tests/engine_responses/<engine>-<version>.json.gz`` holds what a release's own code returned for each
vLLM differential case (``tests/record-engine-responses``; ``vllm_support/recorded.py``). The cases are
rebuilt from their seeds, each checked against the recorded digest of its input, and each view standing
for that release (``View.engine`` and ``View.version``: ``vllm`` for 0.33.0, ``vllm-0.32`` for 0.32.0)
must give the recorded response field by field (random call ids compared by shape). Every release a
``vllm`` view stands for must have a recording, and the releases must differ where their code does.
"""

from __future__ import annotations

import pytest

from pipeline.core.engines.view import VLLM_OLDER, VLLM_VERSION
from pipeline.core.engines.view import release as release_numbers
from pipeline.core.views import api_choice, api_view
from test_vllm_differential import comparable
from vllm_support.recorded import case_digest, group_key, read_release, releases


@pytest.fixture(scope="module")
def groups():
    from vllm_support.cases import all_groups

    return all_groups()


@pytest.fixture(scope="module")
def recorded():
    return {(doc["engine"], doc["version"]): doc for doc in map(read_release, releases())}


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

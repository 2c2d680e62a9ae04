"""The vLLM views of DeepSeek-V3.1 and DeepSeek-V3.2 agree with vLLM's own code: the installed release (0.32.0: ``vllm-0.32``)
run offline on the same ids as in tests/test_vllm_differential.py (``vllm_support/driver.py``: the request
through ``ParserManager`` and ``adjust_request``, the incremental detokenizer, ``chat_completion_full_generator``),
and every release recorded under ``tests/engine_responses/deepseek/`` (0.32.0, and 0.33.0 from its wheel's
Python files), without that release installed. Cases: ``vllm_support/deepseek_cases.py`` (each family, thinking on and off:
named cases, 400 random outputs, 400 schema-bearing requests each).

Skips, saying why, only where .venv-vllm could not be built (scripts/test builds it).
"""

from __future__ import annotations

import json

import pytest

from pipeline.core.engines.view import VLLM_OLDER, VLLM_VERSION
from pipeline.core.views import api_view
from test_vllm_differential import comparable, disagreements
from vllm_support.recorded import RECORDED, case_digest, group_key, read_release

pytestmark = pytest.mark.slow
FOLDER = RECORDED / "deepseek"


@pytest.fixture(scope="module")
def groups():
    from vllm_support.deepseek_cases import deepseek_groups

    return deepseek_groups()


def test_every_case_agrees_with_the_installed_vllm(groups):
    from vllm_support import unavailable, vllm_responses

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    responses = vllm_responses([(g.setup, [g.driver_case(name) for name in g.cases]) for g in groups])
    report = []
    for group, answers in zip(groups, responses):
        bad = disagreements(group, dict(zip(group.cases, answers)))
        if bad:
            report.append(f"{group_key(group)}: {len(bad)}/{len(group.cases)} disagree:\n" + "\n".join(bad[:8]))
    assert not report, "\n\n".join(report)


@pytest.mark.parametrize("version", [VLLM_VERSION, *VLLM_OLDER])
def test_views_agree_with_the_recorded_release(version, groups):
    path = FOLDER / f"vllm-{version}.json.gz"
    assert path.is_file(), f"no recording of vllm {version}: run scripts/record-engine-responses --cases deepseek"
    doc = read_release(path)
    report = []
    for group in groups:
        cases = doc["groups"].get(group_key(group))
        assert cases is not None and set(cases) == set(group.cases), f"{group_key(group)}: cases changed since recording"
        names = [n for n, v in group.profile.spec.views.items() if v.engine == "vllm" and v.version == version]
        assert names, f"{group.family} has no view for vllm {version}"
        bad = []
        for name, (ids, finish) in group.cases.items():
            entry = cases[name]
            assert entry["digest"] == case_digest(group.driver_case(name)), f"{name}: case changed since recording"
            got = api_view(ids, finish, group.profile, group.tokenizer, names[0], group.request(name))
            if comparable(got) != comparable(entry["response"]):
                bad.append(f"{name}: view {comparable(got)!r}\n   recorded {comparable(entry['response'])!r}")
        if bad:
            report.append(f"{group_key(group)}: {len(bad)} disagree:\n" + "\n".join(bad[:5]))
    assert not report, "\n\n".join(report)


def test_the_releases_differ_where_their_code_does():
    """vLLM 0.32 -> 0.33 for DeepSeek-V3.1: a call whose arguments span lines is extracted (0.32 lost it)."""
    old = read_release(FOLDER / "vllm-0.32.0.json.gz")["groups"]
    new = read_release(FOLDER / f"vllm-{VLLM_VERSION}.json.gz")["groups"]
    key = 'deepseek-v3.1 {"thinking": true}'
    lost, found = old[key]["multi-line-args"]["response"], new[key]["multi-line-args"]["response"]
    assert lost["tool_calls"] == [] or lost["tool_calls"] is None
    assert found["tool_calls"][0]["function"]["name"] == "get"


def test_the_named_cases_reach_their_behaviours():
    """What vLLM's own code returned for the named DeepSeek cases (recorded): the behaviours the views restate."""
    new = read_release(FOLDER / f"vllm-{VLLM_VERSION}.json.gz")["groups"]
    v31, v32 = new['deepseek-v3.1 {"thinking": false}'], new['deepseek-v3.2 {"thinking": true}']
    answer = lambda group, name: group[name]["response"]  # noqa: E731
    args = lambda group, name, i=0: json.loads(answer(group, name)["tool_calls"][i]["function"]["arguments"])  # noqa: E731
    assert answer(v31, "args-verbatim")["tool_calls"][0]["function"]["arguments"] == '{"q":1,"n":[1,2],"f":1e3}'
    assert answer(v31, "content-unstripped")["content"] == "  I will check.\n"
    assert answer(v31, "args-not-json-verbatim")["tool_calls"][0]["function"]["arguments"] == "not json"
    assert answer(v32, "content-keeps-blank-line")["content"] == "Let me check.\n\n"
    assert args(v32, "string-values-unstripped") == {"s": "  padded \n", "m": "two\nlines"}
    assert args(v32, "typed-params") == {"n": 5.0, "b": True, "l": [1, 2], "o": {"k": None}, "big": 2**64}
    assert args(v32, "no-string-attribute") == {"x": 5}
    assert args(v32, "json-body") == {}  # a JSON body is no DSML parameter
    assert args(v32, "wrapped-arguments") == {"arguments": {"q": 1}}  # no schema declared: left wrapped
    assert answer(v32, "bare-invoke")["content"] == "c\n\n" and answer(v32, "bare-invoke")["tool_calls"]
    assert len(answer(v32, "length-cut-in-call")["tool_calls"]) == 2  # the unclosed invoke still is a call

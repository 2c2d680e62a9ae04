"""The failure that started the project, end to end.

A pipeline configured Kimi's <|im_end|> as 163533 (an ordinary token, `chas`) instead of 163586.
Golden Kimi K2.5 outputs end in 163586; an engine returns their text with the stop token trimmed;
reconstructing that text with the misconfigured profile mismatches every sample by exactly one
token, the diagnosis names both ids with class special-token-id, and the audit of the profile fails.
"""

import pytest

from pipeline.core.audit import audit
from pipeline.core.diagnose import diagnose
from pipeline.core.golden import read_samples, write_dataset
from pipeline.core.layout import split_output
from pipeline.core.reconstruct import reconstruct_output_ids

WRONG_STOP = 163533
RIGHT_STOP = 163586

# (reasoning, content, tool calls as (name, arguments)): varied text, all canonically tokenized.
TURNS = [
    ("The user wants an average.", " I wish to average.", []),
    ("Plain answer.", "The answer is 42.", []),
    ("Write code.", "```python\ndef f(x):\n\treturn x  *  2\n```", []),
    ("用户问天气。", "东京今天晴，最高气温 23°C。", []),
    ("Family emoji.", "Here: 👩\u200d👩\u200d👧 and 👍🏽!", []),
    ("Contractions.", "I'M sure it's fine, THEY'RE here and we'll go.", []),
    ("Look it up.", "", [("get_weather", '{"city": "Tokyo", "unit":"c"}')]),
    (
        "Two lookups.",
        "Checking both.",
        [("search", '{"q":  "kimi k2.5",\n "n": 3}'), ("fetch", '{"url": "https://example.com/a?b=1"}')],
    ),
    ("Digits.", "3.14159 2653589 793238 and 1,000,000", []),
    ("", "No reasoning at all, just content.\n\n- a\n- b", []),
]


def golden_output(kimi, profile, reasoning, content, calls) -> list[int]:
    """What the model emitted, as SGLang's output_ids: the matched stop token included."""
    ids, enc = profile.ids, kimi.encode_ordinary
    out = enc(reasoning) + [ids["think_end"]] + enc(content)
    if calls:
        out.append(ids["tool_calls_begin"])
        for index, (name, arguments) in enumerate(calls):
            out += [ids["tool_call_begin"], *enc(f"functions.{name}:{index}"), ids["tool_call_argument_begin"]]
            out += [*enc(arguments), ids["tool_call_end"]]
        out.append(ids["tool_calls_end"])
    out.append(kimi.encode("<|im_end|>")[0])
    return out


def engine_response(output_ids, kimi, profile) -> dict:
    """The API response an engine makes of those ids: text decoded, stop trimmed, calls parsed."""
    layout = split_output(output_ids, profile)
    decode = kimi.decode
    calls = []
    for index, call in enumerate(layout.tool_calls):
        call_id = decode(output_ids[call.id.start : call.id.end])
        name = call_id.split(".", 1)[1].rsplit(":", 1)[0]
        arguments = decode(output_ids[call.arguments.start : call.arguments.end])
        calls.append({"id": f"functions.{name}:{index}", "type": "function", "function": {"name": name, "arguments": arguments}})
    return {
        "reasoning": decode(output_ids[layout.reasoning.start : layout.reasoning.end]),
        "content": decode(output_ids[layout.content.start : layout.content.end]),
        "tool_calls": calls or None,
        "finish_reason": "tool_calls" if calls else "stop",
    }


@pytest.fixture(scope="module")
def goldens(kimi, profile):
    outputs = [golden_output(kimi, profile, *t) for t in TURNS]
    assert all(ids[-1] == RIGHT_STOP for ids in outputs)
    return outputs


def test_the_right_profile_reconstructs_every_sample_exactly(kimi, profile, goldens):
    for ids in goldens:
        assert reconstruct_output_ids(engine_response(ids, kimi, profile), profile, kimi) == ids


def test_misconfigured_stop_mismatches_every_sample_by_one_token(kimi, profile, goldens):
    wrong = profile.with_ids(stop=WRONG_STOP)
    assert kimi.token_text(WRONG_STOP) == "chas" and kimi.token_text(RIGHT_STOP) == "<|im_end|>"
    for ids in goldens:
        recon = reconstruct_output_ids(engine_response(ids, kimi, profile), wrong, kimi)
        assert len(recon) == len(ids)
        differing = [i for i, (a, b) in enumerate(zip(ids, recon)) if a != b]
        assert differing == [len(ids) - 1]
        assert (ids[-1], recon[-1]) == (RIGHT_STOP, WRONG_STOP)

        d = diagnose(ids, recon, kimi, profile=wrong, finish_reason="stop")
        assert d.classes == ["special-token-id"]
        assert len(d.hunks) == 1 and d.first_index == len(ids) - 1
        assert not d.texts_identical
        (golden_tok,) = [t for t in d.golden_window if t.in_hunk]
        (recon_tok,) = [t for t in d.recon_window if t.in_hunk]
        assert (golden_tok.id, golden_tok.text) == (RIGHT_STOP, "<|im_end|>")
        assert (recon_tok.id, recon_tok.text) == (WRONG_STOP, "chas")
        report = d.render()
        assert "163586 '<|im_end|>'" in report and "163533 'chas'" in report
        assert "special-token-id" in report and "tokfidelity audit" in report
        assert d.signature()["classes"] == ["special-token-id"]
        assert d.signature()["golden_window"][-1] == RIGHT_STOP
        assert d.signature()["recon_window"][-1] == WRONG_STOP


def test_audit_of_the_misconfigured_profile_fails(kimi, profile, goldens, tmp_path):
    manifest = {"name": "kimi_original", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}
    samples = [
        {"id": f"s{n}", "output_ids": ids, "finish_reason": "tool_calls" if profile.ids["tool_calls_begin"] in ids else "stop"}
        for n, ids in enumerate(goldens)
    ]
    folder = write_dataset(tmp_path / "kimi_original", manifest, samples)

    right = audit(profile, kimi, read_samples(folder))
    assert right.ok, right.failures
    assert f"{len(goldens)}/{len(goldens)} stop samples end with 163586 '<|im_end|>'" in right.render()

    report = audit(profile.with_ids(stop=WRONG_STOP), kimi, read_samples(folder))
    assert not report.ok
    text = "\n".join(report.failures)
    assert "configured as 163533 'chas' but its text encodes to 163586 '<|im_end|>'" in text
    assert f"0/{len(goldens)} stop samples end with 163533 'chas'" in text
    assert f"163586 '<|im_end|>' x{len(goldens)}" in text
    assert "163533 'chas'" in report.render()

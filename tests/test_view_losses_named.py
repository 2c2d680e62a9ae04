"""Every text loss of an engine's view has a name: each differential case (tests/vllm_support/cases.py:
the named behaviours, 400 random outputs and 400 schema-bearing requests per family, each answered for
its request) whose view's response does not rebuild the
engine's ids is diagnosed, and no hunk of any of them is ``other``. The views equal the engines' own
responses (tests/test_vllm_differential.py, tests/test_sglang_differential*.py), so these are the
engines' losses."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.core.diagnose import diagnose
from pipeline.core.divergence_classes import OTHER
from pipeline.core.reconstruct import reconstruct_output_ids
from pipeline.core.views import api_view
from vllm_support.cases import all_groups


@pytest.fixture(scope="module")
def groups():
    return all_groups()


def losses(group, view: str) -> tuple[Counter, list[str]]:
    classes: Counter = Counter()
    unnamed = []
    for name, (ids, finish) in group.cases.items():
        response = api_view(ids, finish, group.profile, group.tokenizer, view, group.request(name))
        rebuilt = reconstruct_output_ids(response, group.profile, group.tokenizer)
        if rebuilt == ids:
            continue
        diagnosis = diagnose(ids, rebuilt, group.tokenizer, profile=group.profile, finish_reason=finish,
                             response_finish_reason=response["finish_reason"])
        classes.update(diagnosis.classes)
        if OTHER in diagnosis.classes:
            unnamed.append(f"{name}: {group.tokenizer.decode(ids)!r}\n{diagnosis.render()[:1500]}")
    return classes, unnamed


@pytest.mark.parametrize("view", ["vllm", "vllm-0.32", "sglang"])
def test_no_diverging_case_is_other(groups, view):
    report, seen = [], Counter()
    for group in groups:
        classes, unnamed = losses(group, view)
        seen.update(classes)
        if unnamed:
            report.append(f"{group.family}: {len(unnamed)} unnamed\n" + "\n".join(unnamed[:3]))
    assert not report, "\n\n".join(report)
    assert sum(seen.values()) > 100, seen  # the cases do diverge: this checks something


def test_vllm_losses_get_their_own_names(groups):
    seen = Counter()
    for group in groups:
        for view in ("vllm", "vllm-0.32"):
            seen.update(losses(group, view)[0])
    for cls in ("special-text-deleted", "finish-rewritten", "tool-args-json", "dropped-text", "truncated-utf8",
                "message-structure", "stop-text-kept", "cut-in-markup"):
        assert seen[cls], (cls, seen)


@pytest.fixture(scope="module")
def oss():
    from pipeline.core.profiles import bind_profile
    from pipeline.core.tokenizer import load_tokenizer

    tokenizer = load_tokenizer("o200k_harmony")
    return tokenizer, bind_profile("gpt-oss", tokenizer)


def oss_diagnosis(oss, text: str, finish: str, view: str, edit=None):
    """The diagnosis of gpt-oss output ``text`` (special tokens written as their text) served by ``view``;
    ``edit`` changes the response first (a loss no engine makes)."""
    tokenizer, profile = oss
    ids = tokenizer.encode(text) if isinstance(text, str) else text
    response = api_view(ids, finish, profile, tokenizer, view)
    if edit:
        response = edit(dict(response))
    rebuilt = reconstruct_output_ids(response, profile, tokenizer)
    return diagnose(ids, rebuilt, tokenizer, profile=profile, finish_reason=finish,
                    response_finish_reason=response["finish_reason"])


EMPTY_ANALYSIS = "<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>Answer here.<|return|>"
TWO_ANALYSES = ("<|channel|>analysis<|message|>First.<|end|><|start|>assistant<|channel|>analysis<|message|>Second.<|end|>"
                "<|start|>assistant<|channel|>final<|message|>Answer here.<|return|>")


@pytest.mark.parametrize("view", ["vllm", "sglang"])
def test_gpt_oss_message_structure(oss, view):
    """The response has one reasoning and one content field: an empty analysis message (sent as null reasoning),
    two analysis messages joined, a preamble without calls (sent as the answer) are message-structure."""
    assert oss_diagnosis(oss, EMPTY_ANALYSIS, "stop", view).classes == ["message-structure"]
    assert set(oss_diagnosis(oss, TWO_ANALYSES, "stop", view).classes) == {"message-structure"}
    preamble = "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>"
    assert set(oss_diagnosis(oss, preamble, "stop", view).classes) == {"message-structure"}


def test_gpt_oss_endoftext_kept_and_cut_header_are_named(oss):
    """vLLM: <|endoftext|> ending a final message comes back as text in the content; a cut inside a message
    header comes back as content text, its markers spelled out. SGLang drops a commentary message a cut left open."""
    kept = "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>Answer.<|endoftext|>"
    assert oss_diagnosis(oss, kept, "stop", "vllm").classes == ["stop-text-kept", "stop-token"]
    header = "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>fin"
    assert set(oss_diagnosis(oss, header, "length", "vllm").classes) == {"cut-in-markup"}
    assert set(oss_diagnosis(oss, "<|channel|>comm", "length", "vllm").classes) == {"cut-in-markup"}
    open_preamble = "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>commentary<|message|>Let me"
    assert oss_diagnosis(oss, open_preamble, "length", "sglang").classes == ["dropped-text"]


def test_an_unexplained_change_stays_other(oss):
    """The rules for gpt-oss's losses explain only what the engines do: a response whose text changed, in an
    output whose messages were restructured too, still has an `other` hunk."""
    def changed(response):
        response["content"] = response["content"].replace("here", "there")
        return response

    for text in (EMPTY_ANALYSIS, TWO_ANALYSES):
        for view in ("vllm", "sglang"):
            assert OTHER in oss_diagnosis(oss, text, "stop", view, changed).classes, (text, view)
    def shorter(response):
        response["reasoning"] = response["reasoning"][:-2]
        return response

    assert OTHER in oss_diagnosis(oss, TWO_ANALYSES, "stop", "vllm", shorter).classes
    # The model wrote marker text as text, and two commentary messages: SGLang's text parser cuts and joins the
    # messages there (named), but a word changed before the marker text is not what a parser does. (A hunk after
    # marker text the model wrote is marker-text whatever it is: the rule Kimi's and Qwen3's views had before.)
    tokenizer, _ = oss
    literal = (tokenizer.encode("<|channel|>analysis<|message|>Think here, then check the weather in Paris for the user."
                                "<|end|><|start|>assistant<|channel|>commentary"
                                "<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary<|message|>")
               + tokenizer.encode_ordinary("Quote <|end|> literally.")
               + tokenizer.encode("<|end|><|start|>assistant<|channel|>final<|message|>Answer.<|return|>"))
    named = oss_diagnosis(oss, literal, "stop", "sglang").classes
    assert named and OTHER not in named, named

    def rethought(response):
        response["reasoning"] = response["reasoning"].replace("here", "there")
        return response

    assert OTHER in oss_diagnosis(oss, literal, "stop", "sglang", rethought).classes

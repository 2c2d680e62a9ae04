"""A project's own reconstruction and prompt rendering, judged by the suite instead of tokfidelity's:
a conftest hook or an option names the function; wrong functions fail each sample with the right
class, right ones pass and open the gate; the record names the function and pins its files; gated
stages (tokfidelity's own code) refuse such a gate; reviewed divergences are kept per function."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pipeline.core.gate import check_gate, read_record
from pipeline.core.golden import write_dataset
from pipeline.core.own_code import OwnCodeError, TokenizerFacade, flat_message, load_function, output_ids_of, own_function
from pipeline.core.profiles import bind_profile
from pipeline.core.prompt_check import PromptJudge
from pipeline.core.tokenizer import load_tokenizer

KIMI = load_tokenizer("kimi-k2.5")
PROFILE = bind_profile("kimi-k2.5", KIMI)
THINK_END, STOP, CHAS = PROFILE.ids["think_end"], PROFILE.stop_id, 163533
HOOK = "conftest.py::pytest_tokfidelity_reconstruct"

# A project's pipeline module: its reconstruction with the stop id as a parameter, its own rendering.
PIPELINE = '''
STOP = {stop}

def reconstruct(message, tokenizer):
    ids = tokenizer.encode(message.get("reasoning_content") or "", add_special_tokens=False)
    ids.append(tokenizer.convert_tokens_to_ids("</think>"))
    ids += tokenizer.encode(message.get("content") or "", add_special_tokens=False)
    if message["finish_reason"] != "length" and STOP is not None:
        ids.append(STOP)
    return ids

def render(messages, tools, chat_template_kwargs, tokenizer):
    text = "{system}"
    for m in messages:
        text += "<|im_" + m["role"] + "|>" + m["role"] + "<|im_middle|>" + m["content"] + "<|im_end|>"
    return tokenizer.encode(text + "<|im_assistant|>assistant<|im_middle|><think>")
'''


def samples(n: int) -> list[dict]:
    out = []
    for i in range(n):
        messages = [{"role": "user", "content": f"What is {i} + {i + 1}?"}]
        prompt = KIMI.encode(f"<|im_user|>user<|im_middle|>What is {i} + {i + 1}?<|im_end|><|im_assistant|>assistant<|im_middle|><think>")
        ids = KIMI.encode_ordinary(f"Add {i} and {i + 1}.") + [THINK_END] + KIMI.encode_ordinary(f"{2 * i + 1}.") + [STOP]
        out.append({"id": f"s{i}", "messages": messages, "prompt_ids": prompt, "output_ids": ids, "finish_reason": "stop"})
    return out


def project(pytester: pytest.Pytester, stop: int | None = STOP, hook: bool = True, system: str = "", **manifest) -> Path:
    """A new project: golden data, its pipeline module, and (``hook``) a conftest hooking its reconstruction."""
    write_dataset(pytester.path / "golden" / "K1", {"name": "K1", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5",
                                                    "source": "built by tests/test_own_code.py", **manifest}, samples(3))
    module = pytester.path / "my_pipeline.py"
    module.write_text(PIPELINE.format(stop=stop, system=system))
    if hook:
        pytester.makeconftest("""
            import my_pipeline

            def pytest_tokfidelity_reconstruct(response, tokenizer):
                return my_pipeline.reconstruct(response, tokenizer)
        """)
    return module


def run(pytester: pytest.Pytester, *args: str):
    return pytester.runpytest("-p", "no:randomly", f"--tokfidelity-state-dir={pytester.path / 'state'}", "--tokfidelity-dataset=K1", *args)


def gate(pytester: pytest.Pytester, **code):
    return check_gate("K1", golden_dir=pytester.path / "golden", state_dir=pytester.path / "state", **code)


@pytest.fixture(autouse=True)
def _fresh_module():
    """Each project's my_pipeline is its own: pytester's in-process runs share sys.modules."""
    import sys

    yield
    sys.modules.pop("my_pipeline", None)


# ------------------------------------------------------------------------------------------
def test_a_wrong_hooked_reconstruction_fails_every_sample_naming_both_ids(pytester):
    project(pytester, stop=CHAS)
    result = run(pytester)
    result.assert_outcomes(failed=3, passed=4)
    result.stdout.fnmatch_lines([f"*K1/s0 (line 1): the rebuilt ids differ from the golden ids (judged: reconstruction {HOOK}): special-token-id*"])
    text = result.stdout.str()
    assert text.count("163586 '<|im_end|>'") >= 3 and text.count("163533 'chas'") >= 3
    assert record(pytester)["status"] == "closed"


def test_a_missing_stop_token_is_its_own_class(pytester):
    project(pytester, stop=None)
    result = run(pytester)
    result.assert_outcomes(failed=3, passed=4)
    result.stdout.fnmatch_lines(["*(judged: reconstruction conftest.py::pytest_tokfidelity_reconstruct): stop-token*"])


def record(pytester):
    return read_record(pytester.path / "state", "K1")


def test_a_right_hooked_reconstruction_opens_a_gate_that_names_and_pins_it(pytester):
    module = project(pytester)
    result = run(pytester)
    result.assert_outcomes(passed=3 + 4)
    rec = record(pytester)
    assert rec["status"] == "open" and rec["reconstructor"] == HOOK and rec["renderer"] == "tokfidelity"
    pinned = {Path(p).name: digest for p, digest in rec["own_files"].items()}
    assert set(pinned) == {"conftest.py", "my_pipeline.py"}  # the hook's file, and the pipeline it imports
    opened = gate(pytester, reconstructor=HOOK)
    assert opened.open and f"(judged: reconstruction {HOOK})" in opened.message
    closed = gate(pytester)  # what a gated stage asks: tokfidelity's own reconstruction
    assert not closed.open and f"opened for the reconstructor {HOOK!r}, not 'tokfidelity'" in closed.message
    module.write_text(module.read_text().replace("STOP = 163586", "STOP = 163586  # edited"))
    changed = gate(pytester, reconstructor=HOOK)
    assert not changed.open and "my_pipeline.py changed" in changed.message


def test_the_option_names_a_function_and_wins_over_the_hook(pytester):
    project(pytester, stop=CHAS)  # the conftest's hook is wrong
    result = run(pytester, "--tokfidelity-reconstruct=my_pipeline:reconstruct")
    result.assert_outcomes(failed=3, passed=4)  # the option's function is the same wrong one
    result.stdout.fnmatch_lines(["*(judged: reconstruction my_pipeline:reconstruct)*"])
    (pytester.path / "right.py").write_text(PIPELINE.format(stop=STOP, system=""))
    run(pytester, "--tokfidelity-reconstruct=right:reconstruct").assert_outcomes(passed=7)
    rec = record(pytester)
    # the function's file, and every module loaded from its folder (here the conftest's my_pipeline too)
    assert rec["reconstructor"] == "right:reconstruct" and "right.py" in {Path(p).name for p in rec["own_files"]}
    assert gate(pytester, reconstructor="right:reconstruct").open
    assert not gate(pytester, reconstructor=HOOK).open


def test_an_unknown_function_is_a_usage_error(pytester):
    project(pytester, hook=False)
    result = run(pytester, "--tokfidelity-reconstruct=my_pipeline:nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tokfidelity-reconstruct*has no 'nowhere'*"])
    result = run(pytester, "--tokfidelity-reconstruct=no_such_module")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*expected MODULE:FUNCTION*"])


def test_reviewed_divergences_are_kept_apart_per_reconstructor(pytester):
    project(pytester, stop=CHAS, max_known_divergence_rate=1.0)
    run(pytester, "--snapshot-update")
    snapshots = sorted(p.name for p in (pytester.path / "golden" / "K1" / "__snapshots__").glob("*.ambr"))
    assert snapshots == ["fidelity@reconstruct=conftest.py__pytest_tokfidelity_reconstruct.ambr"]
    result = run(pytester)
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["*3 known divergences*"])
    (pytester.path / "conftest.py").unlink()  # tokfidelity's own reconstruction: exact, no reviewed divergence of its own
    result = run(pytester)
    result.assert_outcomes(passed=7)
    assert "stale" not in result.stdout.str()
    assert record(pytester)["reconstructor"] == "tokfidelity" and record(pytester)["own_files"] == {}


def test_a_rendering_is_judged_by_the_option_and_named_by_the_record(pytester):
    project(pytester, hook=False, system="<|im_system|>system<|im_middle|>You are helpful.<|im_end|>")
    result = run(pytester, "--tokfidelity-render=my_pipeline:render")
    result.assert_outcomes(failed=3, passed=4)  # a system prompt the engine never saw
    result.stdout.fnmatch_lines(["*rendered prompt ids differ*(judged: rendering my_pipeline:render)*"])
    (pytester.path / "right.py").write_text(PIPELINE.format(stop=STOP, system=""))
    run(pytester, "--tokfidelity-render=right:render").assert_outcomes(passed=7)
    rec = record(pytester)
    assert rec["renderer"] == "right:render" and rec["reconstructor"] == "tokfidelity"
    assert gate(pytester, renderer="right:render").open and not gate(pytester).open


def test_a_rendering_hook_is_judged(pytester):
    project(pytester, hook=False)
    pytester.makeconftest("""
        import my_pipeline

        def pytest_tokfidelity_render(messages, tools, chat_template_kwargs, tokenizer):
            return my_pipeline.render(messages, tools, chat_template_kwargs, tokenizer)[:-1]
    """)
    result = run(pytester)
    result.assert_outcomes(failed=3, passed=4)
    result.stdout.fnmatch_lines(["*(judged: rendering conftest.py::pytest_tokfidelity_render)*"])


def test_what_a_function_returns_must_be_token_ids(pytester):
    project(pytester, hook=False)
    pytester.makeconftest("""
        def pytest_tokfidelity_reconstruct(response, tokenizer):
            return "not ids"
    """)
    result = run(pytester)
    result.assert_outcomes(failed=3, passed=4)
    result.stdout.fnmatch_lines([f"*{HOOK} returned str, expected a list of token ids*"])


def test_the_hook_is_resolved_in_xdist_workers(pytester):
    project(pytester, stop=CHAS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-n", "2", f"--tokfidelity-state-dir={pytester.path / 'state'}",
                                           "--tokfidelity-dataset=K1")
    result.assert_outcomes(failed=3, passed=4)
    assert result.stdout.str().count("163533 'chas'") >= 3
    (pytester.path / "my_pipeline.py").write_text(PIPELINE.format(stop=STOP, system=""))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-n", "2", f"--tokfidelity-state-dir={pytester.path / 'state'}",
                                           "--tokfidelity-dataset=K1")
    result.assert_outcomes(passed=7)
    assert record(pytester)["reconstructor"] == HOOK


# -- the pieces, without pytest ---------------------------------------------------------------
def test_the_facade_answers_as_transformers_does():
    facade = TokenizerFacade(KIMI)
    assert facade.encode("a<|im_end|>") == KIMI.encode_ordinary("a") + [STOP]  # special text is the special id
    assert facade.convert_tokens_to_ids("<|im_end|>") == STOP and facade.convert_tokens_to_ids(["</think>"]) == [THINK_END]
    assert facade.convert_ids_to_tokens([CHAS, STOP]) == ["chas", "<|im_end|>"]
    assert "<|im_end|>" in facade.all_special_tokens and STOP in facade.all_special_ids
    assert facade.decode([CHAS, STOP]) == "chas<|im_end|>" and facade.decode([CHAS, STOP], skip_special_tokens=True) == "chas"
    assert len(facade) == KIMI.n_vocab
    with pytest.raises(OwnCodeError, match="adds no BOS/EOS"):
        facade.encode("a", add_special_tokens=True)


def test_a_message_is_flattened_with_both_reasoning_names():
    body = {"choices": [{"message": {"content": "x", "reasoning_content": "r"}, "finish_reason": "stop"}]}
    assert flat_message(body) == {"content": "x", "reasoning": "r", "reasoning_content": "r", "finish_reason": "stop"}


def test_returned_ids_are_checked_against_the_vocabulary():
    own = own_function("mine:f", lambda: None)
    assert output_ids_of((1, 2), own, KIMI) == [1, 2]
    with pytest.raises(OwnCodeError, match=r"mine:f returned ids \[-1\] outside the vocabulary"):
        output_ids_of([-1], own, KIMI)
    with pytest.raises(OwnCodeError, match="holding 1.5"):
        output_ids_of([1.5], own, KIMI)


def test_a_function_is_loaded_and_pinned_from_its_file(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "pinned_module.py").write_text("def f(m, t):\n    return []\n")
    own = load_function("pinned_module:f", "--x")
    assert own.name == "pinned_module:f" and [Path(p).name for p in own.files] == ["pinned_module.py"]
    assert own.changes() == []
    (tmp_path / "pinned_module.py").write_text("def f(m, t):\n    return [1]\n")
    assert own.changes() == [f"source of pinned_module:f {tmp_path / 'pinned_module.py'} changed"]


def test_a_prompt_judge_judges_a_given_renderer():
    sample = samples(1)[0]
    from pipeline.core.golden import parse_sample

    parsed = parse_sample(sample, Path("x"), 1)
    assert PromptJudge(PROFILE, KIMI, lambda m, t, k: sample["prompt_ids"])(parsed) == "exact"
    assert PromptJudge(PROFILE, KIMI, lambda m, t, k: sample["prompt_ids"][1:])(parsed).cls
    assert json.dumps(sample)  # a plain sample: what the suite reads


def test_shards_of_a_projects_code_merge_into_a_gate_for_that_code(pytester):
    from pipeline.core.shards import merge_shards

    project(pytester)
    for shard in ("1/2", "2/2"):
        run(pytester, f"--tokfidelity-shard={shard}")
    merged = merge_shards("K1", golden_dir=pytester.path / "golden", state_dir=pytester.path / "state")
    assert merged.open, merged.message
    assert record(pytester)["reconstructor"] == HOOK and {Path(p).name for p in record(pytester)["own_files"]} >= {"my_pipeline.py"}
    assert gate(pytester, reconstructor=HOOK).open and not gate(pytester).open

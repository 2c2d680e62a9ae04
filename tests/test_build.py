"""tokfidelity build: training records from golden captures and from generate output, real Kimi tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.stages.export import read_training_records
from pipeline.core.golden import write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.render import render_prompt
from pipeline.core.tokenizer import load_tokenizer
from servers.gates import open_gate
from servers.http_server import FaultyServer
from servers.kimi_chat import KimiChat

MANIFEST = {"name": "T2_kimi", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}


@pytest.fixture(scope="module")
def kimi():
    tok = load_tokenizer("kimi-k2.5")
    return tok, bind_profile("kimi-k2.5", tok)


def golden_samples(tok, profile, n=3):
    enc = tok.encode_ordinary
    samples = []
    for i in range(n):
        messages = [{"role": "user", "content": f"Say hello {i}"}]
        # engine ids with a non-canonical split ("hel" + "lo"): must reach the record verbatim
        output = enc("hel") + enc("lo") + [profile.ids["think_end"]] + enc(f"Hello {i}!") + [profile.stop_id]
        samples.append({"id": f"s{i}", "messages": messages, "prompt_ids": render_prompt(messages, None, profile, tok),
                        "output_ids": output, "finish_reason": {"type": "stop", "matched": profile.stop_id}})
    return samples


def test_build_from_golden_capture(tmp_path, kimi):
    tok, profile = kimi
    samples = golden_samples(tok, profile)
    dataset = write_dataset(tmp_path / "golden" / "T2_kimi", MANIFEST, samples)
    out = tmp_path / "train"
    assert main(["build", "--in", str(dataset), "--out", str(out), "--no-progress"]) == 0
    records = list(read_training_records(out))
    assert [r["id"] for r in records] == ["s0", "s1", "s2"]
    for record, sample in zip(records, samples):
        assert record["input_ids"] == sample["prompt_ids"] + sample["output_ids"]
        assert record["loss_mask"] == [0] * len(sample["prompt_ids"]) + [1] * len(sample["output_ids"])
        assert record["prompt_len"] == len(sample["prompt_ids"]) and record["source"] == "capture"
    meta = json.loads((out / "export.json").read_text())
    assert meta["samples"] == 3 and meta["prompt_ids_checked"] == 3 and meta["tokenizer_fingerprint"] == tok.fingerprint


def test_prompt_mismatch_fails_the_build_with_a_diagnosis(tmp_path, kimi, capsys):
    tok, profile = kimi
    samples = golden_samples(tok, profile)
    # the engine's template put a newline after the role name: ids differ at index 2
    samples[1]["prompt_ids"] = samples[1]["prompt_ids"][:2] + tok.encode_ordinary("\n") + samples[1]["prompt_ids"][2:]
    dataset = write_dataset(tmp_path / "golden" / "T2_kimi", MANIFEST, samples)
    out = tmp_path / "train"
    assert main(["build", "--in", str(dataset), "--out", str(out), "--no-progress"]) == 1
    assert not (out / "train.jsonl").exists()
    err = capsys.readouterr().err
    assert "FAILED, nothing written" in err
    assert "samples.jsonl:2 (id 's1')" in err
    assert "at index 2" in err and "'\\n'" in err and "<|im_middle|>" in err


def test_build_from_generate_output_leaves_flagged_records_out(tmp_path, kimi, capsys):
    tok, profile = kimi
    golden = tmp_path / "golden"
    write_dataset(golden / "T2_kimi", MANIFEST, golden_samples(tok, profile, 1))
    open_gate(golden / "T2_kimi", tmp_path / "state")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"q{i}{' [bad-usage]' if i == 1 else ''}"}]}) + "\n"
                               for i in range(3)))
    gen = tmp_path / "gen"
    with FaultyServer(KimiChat()) as server:
        assert main(["generate", "--dataset", "T2_kimi", "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"),
                     "--prompts", str(prompts), "--out", str(gen), "--base-url", server.url, "--no-progress"]) == 1
    generated = {json.loads(l)["id"]: json.loads(l) for l in (gen / "generations.jsonl").read_text().splitlines()}
    out = tmp_path / "train"
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress"]) == 1  # one left out
    records = {r["id"]: r for r in read_training_records(out)}
    assert sorted(records) == ["p0", "p2"]
    for rid, record in records.items():
        prompt = render_prompt(generated[rid]["messages"], None, profile, tok)
        assert record["input_ids"] == prompt + generated[rid]["output_ids"]
        assert sum(record["loss_mask"]) == len(generated[rid]["output_ids"]) and record["source"] == "reconstruction"
    assert "left out" in capsys.readouterr().err


def test_golden_ids_outside_the_vocabulary_are_left_out(tmp_path, kimi, capsys):
    tok, profile = kimi
    samples = golden_samples(tok, profile)
    samples[0]["output_ids"] = [-1] + samples[0]["output_ids"]
    samples[2]["output_ids"] = samples[2]["output_ids"] + [tok.n_vocab]
    dataset = write_dataset(tmp_path / "golden" / "T2_kimi", MANIFEST, samples)
    out = tmp_path / "train"
    assert main(["build", "--in", str(dataset), "--out", str(out), "--no-progress"]) == 1
    assert [r["id"] for r in read_training_records(out)] == ["s1"]
    err = capsys.readouterr().err
    assert "samples.jsonl:1 (id 's0'): field 'output_ids': ids [-1] are outside the vocabulary" in err
    assert f"samples.jsonl:3 (id 's2'): field 'output_ids': ids [{tok.n_vocab}] are outside the vocabulary" in err
    # a golden prompt with an id no tokenizer has is a mismatch, named, not an IndexError
    samples[1]["prompt_ids"] = samples[1]["prompt_ids"][:3] + [10**30]
    write_dataset(dataset, MANIFEST, samples)
    assert main(["build", "--in", str(dataset), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "samples.jsonl:2 (id 's1')" in err and f">{10**30}:(outside the vocabulary)" in err


def test_bad_generation_lines_and_run_json_are_named_not_tracebacks(tmp_path, kimi, capsys):
    tok, profile = kimi
    gen = tmp_path / "gen"
    gen.mkdir()
    (gen / "run.json").write_text(json.dumps({"profile": "kimi-k2.5", "tokenizer": "kimi-k2.5"}))
    messages = [{"role": "user", "content": "hi"}]
    good = {"id": "ok", "check": "ok", "messages": messages, "output_ids": tok.encode_ordinary("Hi") + [profile.stop_id]}
    lines = [json.dumps([1, 2]), json.dumps({"id": "noids", "check": "ok", "messages": messages}),
             json.dumps({**good, "id": "big", "output_ids": [999_999]}), json.dumps(good)]
    (gen / "generations.jsonl").write_bytes(("\n".join(lines) + "\n").encode() + b'{"id": "caf\xe9"}\n')
    out = tmp_path / "train"
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress"]) == 1
    assert [r["id"] for r in read_training_records(out)] == ["ok"]
    err = capsys.readouterr().err
    assert "generations.jsonl:1: expected a generation record (a JSON object), got list" in err
    assert "generations.jsonl:2 (id 'noids'): field 'output_ids': expected a list of token ids" in err
    assert "generations.jsonl:3 (id 'big'): field 'output_ids': ids [999999] are outside the vocabulary" in err
    assert "generations.jsonl:5: not UTF-8: byte 0xe9" in err
    (gen / "run.json").write_text("{}")
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress"]) == 2
    assert "run.json: fields 'profile' and 'tokenizer' missing" in capsys.readouterr().err


def test_build_out_that_is_a_file_is_a_usage_error(tmp_path, kimi, capsys):
    tok, profile = kimi
    dataset = write_dataset(tmp_path / "golden" / "T2_kimi", MANIFEST, golden_samples(tok, profile, 1))
    (tmp_path / "train").write_text("not a folder")
    assert main(["build", "--in", str(dataset), "--out", str(tmp_path / "train"), "--no-progress"]) == 2
    assert f"--out {tmp_path / 'train'} is a file" in capsys.readouterr().err


@pytest.mark.parametrize("row, message", [
    ([1, 2], "expected a JSON object, got list"),
    ({"id": "a", "input_ids": 5, "loss_mask": [1]}, "field 'input_ids': expected a list of integers"),
    ({"id": "a", "input_ids": [1, "2"], "loss_mask": [0, 1]}, "field 'input_ids': expected a list of integers"),
])
def test_bad_training_records_are_named(tmp_path, row, message):
    (tmp_path / "train.jsonl").write_text(json.dumps({"id": "ok", "input_ids": [1], "loss_mask": [1]}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=f"train.jsonl:2: {message}"):
        list(read_training_records(tmp_path / "train.jsonl"))


def test_unknown_input_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["build", "--in", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "neither a golden dataset" in capsys.readouterr().err


PROJECT_GOLDEN = Path(__file__).resolve().parent.parent / "golden"


@pytest.mark.parametrize("dataset", ["B1_glaive", "B3_magicoder"])
def test_shipped_golden_datasets_render_to_their_prompt_ids(dataset, tmp_path, capsys):
    """The shipped datasets' prompt_ids were made by scripts/make_kimi_golden.py, not by pipeline.core.render."""
    folder = PROJECT_GOLDEN / dataset
    assert main(["build", "--in", str(folder), "--out", str(tmp_path / "out"), "--no-progress"]) == 0, capsys.readouterr().err
    meta = json.loads((tmp_path / "out" / "export.json").read_text())
    n = sum(1 for line in (folder / "samples.jsonl").read_text().splitlines() if line.strip())
    assert meta["samples"] == meta["prompt_ids_checked"] == n

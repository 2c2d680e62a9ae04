"""tokfidelity build: training records from golden captures and from generate output, real Kimi tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.stages.export import read_training_records
from pipeline.core.golden import write_dataset
from pipeline.core.prompt_renderers import render_prompt
from pipeline.core.tokenizer import load_tokenizer
from servers.gates import open_gate
from servers.http_server import FaultyServer
from servers.kimi_chat import KimiChat

MANIFEST = {"name": "T2_kimi", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}


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


def test_build_from_golden_capture(tmp_path, kimi, profile):
    tok = kimi
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


def test_prompt_mismatch_fails_the_build_with_a_diagnosis(tmp_path, kimi, profile, capsys):
    tok = kimi
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


def test_build_from_generate_output_leaves_flagged_records_out(tmp_path, kimi, profile, capsys):
    tok = kimi
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


def test_golden_ids_outside_the_vocabulary_are_left_out(tmp_path, kimi, profile, capsys):
    tok = kimi
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


def test_bad_generation_lines_and_run_json_are_named_not_tracebacks(tmp_path, kimi, profile, capsys):
    tok = kimi
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


def test_build_out_that_is_a_file_is_a_usage_error(tmp_path, kimi, profile, capsys):
    tok = kimi
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


def generate_folder(tmp_path, kimi, profile, contents: list[str]) -> Path:
    """A real `tokfidelity generate` output folder, made against the chat server on 127.0.0.1."""
    tok = kimi
    golden = tmp_path / "golden"
    write_dataset(golden / "T2_kimi", MANIFEST, golden_samples(tok, profile, 1))
    open_gate(golden / "T2_kimi", tmp_path / "state")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": c}]}) + "\n" for i, c in enumerate(contents)))
    gen = tmp_path / "gen"
    with FaultyServer(KimiChat()) as server:
        main(["generate", "--dataset", "T2_kimi", "--golden-dir", str(golden), "--state-dir", str(tmp_path / "state"),
              "--prompts", str(prompts), "--out", str(gen), "--base-url", server.url, "--no-progress"])
    return gen


def test_prompt_check_flags_a_record_whose_prompt_tokens_disagree_and_keeps_it_out(tmp_path, kimi, profile, capsys):
    tok = kimi
    gen = generate_folder(tmp_path, kimi, profile, ["agrees", "off by one [bad-prompt-usage]", "no count [no-prompt-usage]"])
    generated = {r["id"]: r for r in map(json.loads, (gen / "generations.jsonl").read_text().splitlines())}
    assert all(r["check"] == "ok" for r in generated.values())  # the completion side is fine everywhere
    rendered = {rid: render_prompt(r["messages"], None, profile, tok) for rid, r in generated.items()}
    assert generated["p0"]["usage"]["prompt_tokens"] == len(rendered["p0"])  # the server's own count agrees
    assert generated["p1"]["usage"]["prompt_tokens"] == len(rendered["p1"]) + 1
    out = tmp_path / "train"
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress"]) == 1
    records = {r["id"]: r for r in read_training_records(out)}
    assert sorted(records) == ["p0", "p2"]
    assert records["p0"]["prompt_check"] == "ok" and records["p2"]["prompt_check"] == "unknown"
    assert records["p0"]["input_ids"] == rendered["p0"] + generated["p0"]["output_ids"]
    (left,) = [json.loads(line) for line in (out / "left_out.jsonl").read_text().splitlines()]
    assert left["id"] == "p1" and left["prompt_check"] == "prompt_mismatch"
    assert f"rendered prompt has {len(rendered['p1'])} ids but usage.prompt_tokens is {len(rendered['p1']) + 1} (-1)" in left["reason"]
    meta = json.loads((out / "export.json").read_text())
    assert meta["prompt_checks"] == {"ok": 1, "prompt_mismatch": 1, "unknown": 1} and meta["left_out"] == 1
    err = capsys.readouterr().err
    assert "prompt check (rendered prompt vs usage.prompt_tokens): 1 ok, 1 prompt_mismatch (left out), 1 unknown" in err
    # kept on request, still marked
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress", "--keep-prompt-mismatch"]) == 0
    records = {r["id"]: r for r in read_training_records(out)}
    assert sorted(records) == ["p0", "p1", "p2"] and records["p1"]["prompt_check"] == "prompt_mismatch"
    assert (out / "left_out.jsonl").read_text() == ""


def write_generations(folder: Path, rows: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps({"profile": "kimi-k2.5", "tokenizer": "kimi-k2.5"}))
    (folder / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_loss_mask_audit_length_cut_and_stop_token(tmp_path, kimi, profile, capsys):
    tok = kimi
    enc = tok.encode_ordinary
    messages = [{"role": "user", "content": "hi"}]
    n_prompt = len(render_prompt(messages, None, profile, tok))

    def row(rid, output_ids, finish, **more):
        return {"id": rid, "check": "ok", "messages": messages, "output_ids": output_ids, "finish_reason": finish,
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(output_ids)}, **more}

    answer = enc("why") + [profile.ids["think_end"]] + enc("Hello")
    gen = write_generations(tmp_path / "gen", [
        row("stop", answer + [profile.stop_id], "stop"),
        row("cut", answer, "length"),                                   # reconstructed, cut: dropped by default
        row("cut-engine", answer, "length", ids_source="engine"),        # engine ids: exact, kept
        row("empty", [], "stop"),                                        # nothing supervised
        row("no-stop", answer, "stop"),                                  # stopped, but no stop token to learn
    ])
    out = tmp_path / "train"
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress"]) == 1
    records = {r["id"]: r for r in read_training_records(out)}
    assert sorted(records) == ["cut-engine", "stop"]
    stop = records["stop"]
    assert stop["input_ids"][-1] == profile.stop_id and stop["loss_mask"][-1] == 1
    assert stop["input_ids"][n_prompt - 1] == profile.ids["prompt.think_begin"] and stop["loss_mask"][n_prompt - 1] == 0  # prefilled <think>
    reasons = {r["id"]: r["reason"] for r in map(json.loads, (out / "left_out.jsonl").read_text().splitlines())}
    assert "cut at the length limit" in reasons["cut"] and "--length-cut keep" in reasons["cut"]
    assert "all zero" in reasons["empty"]
    assert "does not end with a stop token (163586; 163586 is '<|im_end|>')" in reasons["no-stop"]
    audit = json.loads((out / "export.json").read_text())["mask_audit"]
    assert (audit["length_cut_dropped"], audit["length_cut_exact_kept"], audit["all_zero"], audit["stop_missing"]) == (1, 1, 1, 1)
    err = capsys.readouterr().err
    assert "loss-mask audit: 5 records; all-zero masks 1; stop token supervised 1/2 stopped (1 without it)" in err
    assert "1 with engine ids kept, 1 reconstructed dropped, 0 reconstructed kept (--length-cut drop)" in err
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress", "--length-cut", "keep"]) == 1
    assert sorted(r["id"] for r in read_training_records(out)) == ["cut", "cut-engine", "stop"]
    assert "0 reconstructed dropped, 1 reconstructed kept (--length-cut keep)" in capsys.readouterr().err


def test_loss_mask_audit_reports_history_the_template_re_renders(tmp_path, kimi, profile, capsys):
    """Kimi K2.5's template drops the reasoning of assistant turns before the last plain answer."""
    tok = kimi
    first = {"role": "assistant", "reasoning": "The user greets me.", "content": "Hello!"}
    history = [{"role": "user", "content": "hi"}, first, {"role": "user", "content": "and now?"}]
    no_reasoning = [history[0], {"role": "assistant", "content": "Hello!"}, history[2]]
    rows = []
    for rid, messages in (("dropped", history), ("kept", no_reasoning)):
        output = tok.encode_ordinary("ok") + [profile.ids["think_end"]] + tok.encode_ordinary("Now.") + [profile.stop_id]
        n = len(render_prompt(messages, None, profile, tok))
        rows.append({"id": rid, "check": "ok", "messages": messages, "output_ids": output, "finish_reason": "stop",
                     "usage": {"prompt_tokens": n, "completion_tokens": len(output)}})
    gen = write_generations(tmp_path / "gen", rows)
    out = tmp_path / "train"
    assert main(["build", "--in", str(gen), "--out", str(out), "--no-progress"]) == 0
    records = {r["id"]: r for r in read_training_records(out)}
    assert sorted(records) == ["dropped", "kept"]  # reported, not left out: the earlier turn is prompt
    record = records["dropped"]
    reasoning = tok.encode_ordinary("The user greets me.")
    prompt = record["input_ids"][: record["prompt_len"]]
    assert not any(prompt[i:i + len(reasoning)] == reasoning for i in range(len(prompt)))  # the template dropped it
    assert sum(record["loss_mask"]) == len(rows[0]["output_ids"])  # only the final answer is supervised
    audit = json.loads((out / "export.json").read_text())["mask_audit"]
    assert (audit["multi_turn"], audit["history_records"], audit["history_turns"]) == (2, 1, 1)
    err = capsys.readouterr().err
    assert "multi-turn 2, of which 1 re-render 1 earlier assistant turn(s) differently" in err
    assert "generations.jsonl:1 (id 'dropped'): assistant turn(s) messages[1]" in err

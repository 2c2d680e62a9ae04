"""The special-token audit on real Kimi, Qwen3 and o200k tokenizers, and `tokfidelity audit`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.core.audit import audit
from pipeline.cli import main
from pipeline.core.golden import read_samples, write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer, resolve_tokenizer_dir

ROOT = Path(__file__).resolve().parent.parent
O200K = "o200k"  # a folder name under TOKFIDELITY_TOKENIZERS


@pytest.fixture(scope="module")
def qwen3():
    return load_tokenizer("qwen3")


@pytest.fixture(scope="module")
def o200k():
    return load_tokenizer(O200K)


def test_kimi_profiles_pass(kimi):
    for name in ("kimi-k2.5", "kimi-k2"):
        report = audit(bind_profile(name, kimi), kimi)
        assert report.ok, report.failures
        assert report.failures == []
        assert len(report.special_tokens) == 258 and all(s.ok for s in report.special_tokens)
        stop = next(m for m in report.markers if "stop" in m.roles)
        assert (stop.text, stop.configured_id, stop.encoded, stop.decoded) == ("<|im_end|>", 163586, [163586], "<|im_end|>")
        assert stop.as_text == [27, 91, 348, 11129, 91, 29]
        assert "prompt.end" in stop.roles  # one row per distinct (text, id)
    report = audit("kimi-k2.5", kimi)  # a profile name binds the same way
    assert report.ok
    think_end = next(m for m in report.markers if m.text == "</think>")
    assert think_end.configured_id == 163607 and think_end.as_text == [993, 39964, 29]


def test_kimi_lookalikes_are_few_warnings(kimi):
    report = audit("kimi-k2.5", kimi)
    assert report.first_special_id == 163584
    assert report.near_special_range == [163583, 163582, 163581]  # the nearest few, not all 64
    think_end = next(m for m in report.markers if m.text == "</think>")
    assert think_end.lookalikes[0] == 39964  # 'think'
    prompt_only = next(m for m in report.markers if m.text == "<|im_user|>")
    assert prompt_only.lookalikes == []  # only output markers are searched
    assert 1 <= len(report.warnings) <= 3
    assert any("163583" in w and "163584" in w for w in report.warnings)
    rendered = report.render()
    assert "39964 'think'" in rendered and "result: OK" in rendered


def test_misconfigured_stop_id_fails_and_names_both_ids(kimi):
    wrong = bind_profile("kimi-k2.5", kimi).with_ids(stop=163533)
    report = audit(wrong, kimi)  # must not raise
    assert not report.ok
    stop = next(m for m in report.markers if m.roles == ("stop",))
    assert not stop.ok and stop.configured_id == 163533 and stop.encoded == [163586] and stop.decoded == "chas"
    text = "\n".join(report.failures)
    assert "163533 'chas'" in text and "163586 '<|im_end|>'" in text
    assert "ordinary token" in text
    # The prompt's <|im_end|> is still right and is its own row.
    assert next(m for m in report.markers if m.roles == ("prompt.end",)).ok
    assert 163533 in report.near_special_range  # configured ids near the special range are named
    assert "FAILED" in report.render()


def test_wrong_tokenizer_reports_instead_of_raising(kimi, qwen3, o200k):
    report = audit("kimi-k2.5", qwen3)
    assert not report.ok
    section = next(m for m in report.markers if m.text == "<|tool_calls_section_begin|>")
    assert section.configured_id is None and len(section.encoded) > 1
    assert any("'<|tool_calls_section_begin|>'" in f and "not one id" in f for f in report.failures)
    # Qwen3 has <|im_end|> and </think>: those markers pass.
    assert next(m for m in report.markers if m.text == "<|im_end|>").encoded == [151645]
    report = audit("chatml", o200k)
    assert not report.ok
    assert any("'<|im_end|>'" in f for f in report.failures)
    assert all(s.ok for s in report.special_tokens)


def test_qwen3_chatml_passes(qwen3):
    report = audit("chatml", qwen3)
    assert report.ok, report.failures
    assert report.first_special_id == 151643
    assert {m.text: m.configured_id for m in report.markers} == {"<|im_end|>": 151645, "<|im_start|>": 151644}
    assert len(report.special_tokens) == len(qwen3.special_tokens) >= 20
    assert all(s.ok for s in report.special_tokens)
    assert report.near_special_range[0] == 151642


def test_o200k_special_tokens_round_trip(o200k):
    report = audit("chatml", o200k)
    checked = {s.text: (s.id, s.encoded, s.decoded) for s in report.special_tokens}
    assert checked["<|endoftext|>"] == (199999, [199999], "<|endoftext|>")
    assert report.first_special_id == 199999


def _dataset(tmp_path, samples, name="kimi_audit"):
    manifest = {"name": name, "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}
    return write_dataset(tmp_path / name, manifest, samples)


def _samples(kimi, n_stop=19, n_length=4):
    enc = kimi.encode_ordinary
    out = [
        {"id": f"stop{i}", "output_ids": enc(f"reason {i}") + [163607] + enc(f"answer {i}") + [163586], "finish_reason": "stop"}
        for i in range(n_stop)
    ]
    out += [
        {"id": f"cut{i}", "output_ids": enc(f"a long thought number {i}"), "finish_reason": {"type": "length", "length": 6}}
        for i in range(n_length)
    ]
    return out


def test_golden_final_tokens(kimi, tmp_path):
    folder = _dataset(tmp_path, _samples(kimi))
    report = audit("kimi-k2.5", kimi, read_samples(folder))
    assert report.ok, report.failures
    assert report.golden["stop"].matching == 19 and report.golden["length"].matching == 4
    rendered = report.render()
    assert "19/19 stop samples end with 163586 '<|im_end|>'" in rendered
    assert "  4/4 length samples end without a stop token\n" in rendered  # no list of ordinary final tokens
    assert report.to_json()["golden"]["stop"] == {"total": 19, "expected_id": 163586, "matching": 19, "found": {"163586": 19}}


def test_golden_samples_that_end_otherwise_fail(kimi, tmp_path):
    samples = _samples(kimi, n_stop=5, n_length=1)
    samples[2]["output_ids"][-1] = 163533
    samples[3]["output_ids"] = samples[3]["output_ids"][:-1]  # stop trimmed, as in an API's text
    samples[-1]["output_ids"].append(163586)  # "length" sample ending with the stop token: a warning
    folder = _dataset(tmp_path, samples)
    with open(folder / "samples.jsonl", "a", encoding="utf-8") as f:
        f.write("{not json\n")
    report = audit("kimi-k2.5", kimi, read_samples(folder))
    assert not report.ok
    text = "\n".join(report.failures)
    assert "3/5 stop samples end with 163586 '<|im_end|>'" in text
    assert "163533 'chas' x1" in text
    assert "sample 'stop2' (line 3)" in text
    assert "samples.jsonl:7" in text and "not valid JSON" in text  # the bad line, by file and line
    assert any(
        "0/1 length samples end without a stop token; the others end with 163586 '<|im_end|>' x1" in w
        for w in report.warnings
    )
    assert 163533 in report.near_special_range  # found in the data, so named among the look-alikes


def test_cli_exit_codes_and_json(kimi, tmp_path, capsys):
    assert main(["audit", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5"]) == 0
    assert "result: OK" in capsys.readouterr().out

    assert main(["audit", "--profile", "kimi-k2.5", "--tokenizer", "qwen3", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["failures"]
    assert {"markers", "special_tokens", "lookalikes", "golden", "warnings", "fingerprint"} <= set(data)

    good = _dataset(tmp_path, _samples(kimi, 3, 1), "good")
    assert main(["audit", "--golden", str(good), "--json"]) == 0  # profile and tokenizer from the manifest
    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "kimi-k2.5" and data["golden"]["stop"]["matching"] == 3

    bad_samples = _samples(kimi, 3, 0)
    bad_samples[0]["output_ids"][-1] = 163533
    bad = _dataset(tmp_path, bad_samples, "bad")
    assert main(["audit", "--profile", "kimi-k2.5", "--tokenizer", "kimi-k2.5", "--golden", str(bad)]) == 1
    assert "2/3 stop samples end with 163586 '<|im_end|>'" in capsys.readouterr().out

    assert main(["audit", "--profile", "no-such", "--tokenizer", "kimi-k2.5"]) == 2
    assert "known profiles" in capsys.readouterr().err
    assert main(["audit", "--profile", "kimi-k2.5", "--tokenizer", str(tmp_path / "missing")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["audit", "--golden", str(tmp_path)]) == 2  # the golden root, not a dataset folder
    err = capsys.readouterr().err
    assert "not a dataset folder" in err and "good" in err and "bad" in err
    assert main(["audit"]) == 2


def test_cli_runs_as_a_program(tmp_path):
    """The real entry point in a fresh process: exit status 1 and a table naming the failure."""
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.cli", "audit", "--profile", "chatml", "--tokenizer", O200K],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "'<|im_end|>'" in result.stdout and "FAILED" in result.stdout


def test_tokenizer_files_that_disagree_fail_the_round_trip(tmp_path):
    """Qwen3's tokenizer.json with a tokenizer_config.json naming tokens it does not have."""
    shared, _ = resolve_tokenizer_dir("qwen3")
    folder = tmp_path / "qwen3-mismatched"
    folder.mkdir()
    (folder / "tokenizer.json").symlink_to(shared / "tokenizer.json")  # read in place, never copied
    config = json.loads((shared / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["added_tokens_decoder"]["151665"] = {"content": "<|fake_marker|>", "special": True}  # id of <tool_response>
    config["added_tokens_decoder"]["151700"] = {"content": "<|beyond|>", "special": True}  # past the vocabulary
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    report = audit("chatml", load_tokenizer(folder))  # must not raise on an id outside the vocabulary
    assert not report.ok
    failed = {s.text: s for s in report.special_tokens if not s.ok}
    assert set(failed) == {"<|fake_marker|>", "<|beyond|>"}
    assert failed["<|fake_marker|>"].decoded == "<tool_response>" and failed["<|beyond|>"].decoded is None
    assert any("'<|fake_marker|>' 151665 does not round-trip" in f for f in report.failures)
    assert all(m.ok for m in report.markers)  # the chatml markers themselves are fine


@pytest.mark.parametrize("dataset", ["Q1_glaive", "D1_glaive"])
def test_family_profiles_pass_with_their_golden_sets(dataset):
    from pipeline.core.golden import load_manifest

    manifest = load_manifest(ROOT / "golden" / dataset)
    tokenizer = load_tokenizer(manifest.tokenizer)
    report = audit(manifest.profile, tokenizer, read_samples(ROOT / "golden" / dataset))
    assert report.ok, report.failures
    assert all(m.ok and m.encoded == [m.configured_id] for m in report.markers)
    assert all(s.ok for s in report.special_tokens)
    stop = report.golden["stop"]
    assert stop.matching == stop.total >= 60 and stop.stop_ids == bind_profile(manifest.profile, tokenizer).stop_ids
    # look-alikes: ordinary pieces of the output markers are named (warnings, not failures)
    assert any(m.lookalikes for m in report.markers) and any("look-alikes" in w for w in report.warnings)


def test_qwen3_audit_knows_both_stop_tokens_and_fails_a_wrong_one(qwen3, tmp_path):
    profile = bind_profile("qwen3", qwen3)
    assert [m.text for m in audit(profile, qwen3).markers if any(r.startswith("stop") for r in m.roles)] == [
        "<|im_end|>", "<|endoftext|>"]
    ends = [qwen3.encode_ordinary("a") + [151645], qwen3.encode_ordinary("b") + [151643], qwen3.encode_ordinary("c") + [151642]]
    samples = [{"id": f"s{i}", "output_ids": ids, "finish_reason": "stop"} for i, ids in enumerate(ends)]
    folder = write_dataset(tmp_path / "QA", {"name": "QA", "profile": "qwen3", "tokenizer": "qwen3", "source": "test"}, samples)
    report = audit(profile, qwen3, read_samples(folder))
    assert not report.ok and report.golden["stop"].matching == 2
    assert any("151642" in f and "151645 '<|im_end|>' or 151643 '<|endoftext|>'" in f for f in report.failures)
    wrong = audit(profile.with_ids(stop=151642), qwen3)
    assert any("'<|im_end|>'" in f and "151642" in f and "wrong id" in f for f in wrong.failures)


def test_family_markers_that_are_not_one_id_fail(qwen3):
    report = audit("deepseek-v3", qwen3)
    assert not report.ok
    assert any("'<｜tool▁sep｜>'" in f and "not one id" in f for f in report.failures)
    report = audit("qwen3", load_tokenizer("deepseek-v3"))
    assert any("'<think>'" in f and "not one id" in f for f in report.failures)

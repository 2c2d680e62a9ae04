"""A run's exit code is its gates' verdict, and every failure says the one thing to do."""

from __future__ import annotations

import json

import pytest

from pipeline.core.gate import read_record
from test_plugin import exact_samples, gate, make_dataset, record, run, split_sample


# -- 1. every reason that keeps a gate closed fails a test of the run --------------------------------
def test_known_divergence_rate_over_the_limit_fails_the_gate_policy_test(pytester):
    make_dataset(pytester.path, "V1_rate", exact_samples(3) + [split_sample()])  # max_known_divergence_rate 0
    run(pytester, "--tokfidelity-dataset=V1", "--snapshot-update")
    result = run(pytester, "--tokfidelity-dataset=V1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=4 + 4, failed=1)
    out = result.stdout.str()
    assert "FAILED golden/V1_rate/samples.jsonl::test_gate_policy" in out
    section = out.split("_ test_gate_policy _")[1]
    assert "known-divergence rate 1/4 = 0.2500 exceeds the manifest's max_known_divergence_rate 0.0" in section
    assert "max_known_divergence_rate to at least 0.2500" in section and "manifest.json" in section
    assert not gate(pytester, "V1").open and record(pytester, "V1_rate")["status"] == "closed"


def test_inputs_changed_during_the_run_fail_the_gate_policy_test(pytester):
    path = make_dataset(pytester.path, "V2_edit", exact_samples(2))
    pytester.makepyfile(test_edit=f"def test_edit():\n    open({str(path / 'extra.txt')!r}, 'w').write('x')\n")
    result = run(pytester, "--tokfidelity-dataset=V2", "test_edit.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "FAILED golden/V2_edit/samples.jsonl::test_gate_policy" in result.stdout.str()
    assert "inputs changed during the run" in result.stdout.str()
    assert not gate(pytester, "V2").open


def test_a_green_gate_adds_no_test_and_a_partial_run_keeps_the_record(pytester):
    make_dataset(pytester.path, "V3_rate", exact_samples(3) + [split_sample()])
    run(pytester, "--tokfidelity-dataset=V3", "--snapshot-update")
    partial = run(pytester, "--tokfidelity-dataset=V3", "-k", "s0 or manifest")
    assert partial.ret == 0 and "test_gate_policy" not in partial.stdout.str()
    partial.stdout.fnmatch_lines(["*gate: record unchanged: partial run (-k 's0 or manifest')*"])
    assert read_record(pytester.path / "state", "V3_rate") is None
    make_dataset(pytester.path, "V4_ok", exact_samples(2))
    green = run(pytester, "--tokfidelity-dataset=V4")
    green.assert_outcomes(passed=4 + 2)
    assert "test_gate_policy" not in green.stdout.str()


# -- 3. the record pins where the tokenizer was found; not found is said as that ---------------------
def test_gate_check_in_a_fresh_shell_finds_the_tokenizer_where_the_run_did(pytester, monkeypatch, capsys):
    from pipeline.cli import main
    from pipeline.core.tokenizer import tokenizer_location

    make_dataset(pytester.path, "V5_shell", exact_samples(2))  # tokenizer "kimi-k2.5": a folder under TOKFIDELITY_TOKENIZERS
    run(pytester, "--tokfidelity-dataset=V5").assert_outcomes(passed=4 + 2)
    rec = record(pytester, "V5_shell")
    assert rec["tokenizer"] == "kimi-k2.5" and rec["tokenizer_location"] == tokenizer_location("kimi-k2.5")
    monkeypatch.delenv("TOKFIDELITY_TOKENIZERS")  # a fresh shell, without the run's environment
    argv = ["gate", "check", "--dataset", "V5", "--golden-dir", str(pytester.path / "golden"), "--state-dir", str(pytester.path / "state")]
    assert main(argv) == 0, capsys.readouterr().err
    assert gate(pytester, "V5").tokenizer == rec["tokenizer_location"]


def test_a_tokenizer_not_found_is_said_as_that_with_how_to_pass_it(pytester, monkeypatch, capsys):
    from pipeline.cli import main

    make_dataset(pytester.path, "V6_gone", exact_samples(2))
    run(pytester, "--tokfidelity-dataset=V6").assert_outcomes(passed=4 + 2)
    path = pytester.path / "state" / "gates" / "V6_gone.json"
    rec = json.loads(path.read_text())
    rec["tokenizer_location"] = str(pytester.path / "moved-away")
    path.write_text(json.dumps(rec))
    monkeypatch.delenv("TOKFIDELITY_TOKENIZERS")
    argv = ["gate", "check", "--dataset", "V6", "--golden-dir", str(pytester.path / "golden"), "--state-dir", str(pytester.path / "state")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "tokenizer 'kimi-k2.5' not found" in err and "cannot be loaded" not in err
    assert "next: pass --tokenizer PATH, or set TOKFIDELITY_TOKENIZERS" in err
    assert "pytest --tokfidelity-dataset" not in err  # a rerun would not find it either


def test_shards_run_with_a_tokenizer_path_merge_into_an_open_gate(pytester, capsys):
    from pipeline.cli import main
    from pipeline.core.tokenizer import load_tokenizer

    kimi_dir = str(load_tokenizer("kimi-k2.5").source)
    make_dataset(pytester.path, "V7_shards", exact_samples(4), tokenizer="no-such-tokenizer-here")
    for i in (1, 2):
        run(pytester, "--tokfidelity-dataset=V7", f"--tokfidelity-shard={i}/2", f"--tokfidelity-tokenizer={kimi_dir}")
    argv = ["gate", "merge", "--dataset", "V7", "--golden-dir", str(pytester.path / "golden"), "--state-dir", str(pytester.path / "state")]
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.count("is open") == 2 and "closed" not in out.out + out.err


# -- 4. each reason gets its own next step, said once --------------------------------------------------
def test_unknown_dataset_is_a_usage_error_for_gate_check_and_gated_stages(tmp_path, capsys):
    from pipeline.cli import main

    (tmp_path / "golden").mkdir()
    common = ["--dataset", "NOPE", "--golden-dir", str(tmp_path / "golden"), "--state-dir", str(tmp_path / "state")]
    assert main(["gate", "check", *common]) == 2
    assert "no dataset named 'NOPE'" in capsys.readouterr().err
    assert main(["train", *common, "--data", str(tmp_path / "d.jsonl"), "--out", str(tmp_path / "out"), "--command", "true"]) == 2
    err = capsys.readouterr().err
    assert "no dataset named 'NOPE'" in err and "refused" not in err


def test_a_rate_over_the_limit_names_the_manifest_field_and_the_command_once(pytester, capsys):
    from pipeline.cli import main

    make_dataset(pytester.path, "V8_rate", exact_samples(3) + [split_sample()])
    run(pytester, "--tokfidelity-dataset=V8", "--snapshot-update")
    run(pytester, "--tokfidelity-dataset=V8")
    argv = ["gate", "check", "--dataset", "V8", "--golden-dir", str(pytester.path / "golden"), "--state-dir", str(pytester.path / "state")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "next: review the known divergences; if they are acceptable, raise the manifest's field max_known_divergence_rate" in err
    assert err.count("pytest --tokfidelity-dataset=V8_rate") == 1, err


def test_another_tokenizer_is_told_which_one_the_gate_was_opened_with(pytester):
    make_dataset(pytester.path, "V9_tok", exact_samples(2))
    run(pytester, "--tokfidelity-dataset=V9").assert_outcomes(passed=4 + 2)
    status = gate(pytester, "V9")
    assert status.open
    from pipeline.core.gate import check_gate

    other = check_gate("V9", golden_dir=pytester.path / "golden", state_dir=pytester.path / "state", tokenizer="qwen3")
    assert not other.open and "has fingerprint" in other.message
    assert other.next_step.startswith(f"pass --tokenizer {status.tokenizer} (the tokenizer the gate was opened with)")
    assert "--tokfidelity-tokenizer=qwen3" in other.next_step


# -- 8. messages ------------------------------------------------------------------------------------------
def test_a_truncated_json_line_names_its_own_column(pytester):
    path = make_dataset(pytester.path, "V10_cut", exact_samples(1))
    cut = '{"id": "cut", "output_ids": [1, 2, 3, 4, 5,'
    with open(path / "samples.jsonl", "a") as f:
        f.write(cut + "\n")
    out = run(pytester, "--tokfidelity-dataset=V10").stdout.str()
    assert f"samples.jsonl:2: not valid JSON: Expecting value (column {len(cut) + 1})" in out


def test_tokenizer_not_found_is_said_once_naming_the_pytest_option(pytester, monkeypatch):
    monkeypatch.delenv("TOKFIDELITY_TOKENIZERS")
    make_dataset(pytester.path, "V11_notok", exact_samples(3), tokenizer="no-such-tokenizer-here")
    out = run(pytester, "--tokfidelity-dataset=V11").stdout.str()
    assert out.count("tokenizer 'no-such-tokenizer-here' not found (tried: ") == 1, out
    assert "next: pass --tokfidelity-tokenizer=PATH, or set TOKFIDELITY_TOKENIZERS" in out
    assert "--tokenizer PATH" not in out and "Tried:" not in out


def test_summary_lines_are_short_plural_right_and_without_empty_counts(pytester):
    make_dataset(pytester.path, "V12_" + "long" * 10, exact_samples(1) + [split_sample()], max_known_divergence_rate=1.0)
    run(pytester, "--tokfidelity-dataset=V12", "--snapshot-update").stdout.fnmatch_lines(
        ["*partial run (--snapshot-update: review the recorded divergences, then run again without it)*"])
    result = run(pytester, "--tokfidelity-dataset=V12")
    lines = result.stdout.str().split("= tokfidelity =")[1].splitlines()[1:]
    summary = lines[: next(i for i, line in enumerate(lines) if line.lstrip().startswith("gate:")) + 3]
    assert all(len(line) < 120 for line in summary), summary
    text = "\n".join(summary)
    assert "2 samples: 1 exact, 1 known divergence (non-canonical-split 1)" in text
    assert "accepted by policy" not in text and "new divergence" not in text and "bad input" not in text
    assert "tokens/s (tests only: tokenizer loaded while collecting)" in text
    assert "))" not in result.stdout.str()


# -- 6. the vocabulary rule lives in the core Judge: engine_check judges exactly as the suite ----------
@pytest.mark.parametrize("bad_id", [-1, 10**7], ids=["negative", "too-large"])
def test_engine_check_calls_ids_outside_the_vocabulary_bad_input(kimi, profile, bad_id):
    from pipeline.core.fidelity import BAD_INPUT, Judge
    from pipeline.stages.engine_check import compare_engine_ids
    from test_plugin import kimi_ids

    judge = Judge(profile, kimi, "sglang", {"non-canonical-split": 1.0})
    ids = [bad_id] + kimi_ids("Hm.", "ok")
    body = {"reasoning": "Hm.", "content": "ok", "finish_reason": "stop"}
    comparison = compare_engine_ids("r1", ids, "stop", body, judge)
    assert comparison.bad_input and not comparison.exact and comparison.divergence is None
    assert f"ids [{bad_id}] are outside the vocabulary of" in comparison.report
    from pipeline.core.golden import GoldenSample

    verdict = judge(GoldenSample(id="g", output_ids=ids, finish_reason="stop", line=7))
    assert verdict.kind == BAD_INPUT and verdict.report.startswith(f"line 7 (g): ids [{bad_id}]")


# -- 5. a marker loss is never called harmless ----------------------------------------------------------
def test_a_lost_think_end_heads_the_sample_as_a_marker_problem_never_a_harmless_split(kimi, profile):
    from pipeline.core.fidelity import DIVERGENT, Judge
    from pipeline.core.golden import GoldenSample
    from test_plugin import CHAS, THINK_END, kimi_ids

    ids = kimi_ids("Let me look at the input.", "The bug is an off-by-one.")
    ids[ids.index(THINK_END)] = CHAS  # a look-alike ordinary id where </think> belongs
    judge = Judge(profile, kimi, "sglang", {"non-canonical-split": 1.0})  # re-splits accepted by policy
    verdict = judge(GoldenSample(id="m", output_ids=ids, finish_reason="stop", line=1))
    assert verdict.kind == DIVERGENT  # never accepted by policy
    # The headline is a marker class (the vllm views' think-not-closed names a reasoning whose </think> is
    # missing, as here), never the harmless re-split, and its advice comes first.
    headline = verdict.classes[0]
    assert headline in ("special-token-id", "think-not-closed"), verdict.classes
    report = verdict.report
    assert report.startswith(f"divergence: {headline};")
    advice = report.split("what to do (most severe first):\n")[1].splitlines()
    assert advice[0].startswith(f"  {headline}: ") and "non-canonical-split" not in advice[0]


def test_audit_golden_flags_a_missing_think_end_and_the_look_alike_in_its_place(tmp_path, capsys):
    from pipeline.cli import main
    from pipeline.core.golden import write_dataset
    from test_plugin import CHAS, THINK_END, manifest

    good = exact_samples(2)
    bad = dict(good[1], id="lost")
    bad["output_ids"] = [CHAS if i == THINK_END else i for i in bad["output_ids"]]
    folder = write_dataset(tmp_path / "A5", manifest("A5"), good + [bad])
    assert main(["audit", "--golden", str(folder)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "1 finished golden output(s) lack '</think>' (163607), which profile kimi-k2.5 requires" in text
    assert "line 3 (lost)" in text and "look-alike id(s) where '</think>' belongs" in text and "163533" in text
    write_dataset(tmp_path / "A6", manifest("A6"), good)
    assert main(["audit", "--golden", str(tmp_path / "A6")]) == 0

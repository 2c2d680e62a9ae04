"""The pytest plugin, run for real through pytester on small golden datasets built here with the
real Kimi K2.5 tokenizer (and ChatML over Qwen3's tokenizer for a second profile)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from pipeline.core.gate import check_gate, read_record
from pipeline.core.golden import write_dataset
from pipeline.core.profiles import bind_profile
from pipeline.core.tokenizer import load_tokenizer

KIMI = load_tokenizer("kimi-k2.5")
KIMI_PROFILE = bind_profile("kimi-k2.5", KIMI)
THINK_END = KIMI_PROFILE.ids["think_end"]
STOP = KIMI_PROFILE.stop_id
CHAS = 163533  # an ordinary token that decodes to "chas": the classic wrong stop id


def kimi_ids(reasoning: str, content: str, stop: int | None = STOP) -> list[int]:
    ids = KIMI.encode_ordinary(reasoning) + [THINK_END] + KIMI.encode_ordinary(content)
    return ids + [stop] if stop is not None else ids


def exact_samples(n: int) -> list[dict]:
    return [
        {"id": f"s{i}", "output_ids": kimi_ids(f"Let me add {i} and {i + 1}.", f"{i} + {i + 1} = {2 * i + 1}."), "finish_reason": "stop"}
        for i in range(n)
    ]


def split_sample(sample_id: str = "split") -> dict:
    """A harmless re-split: ' initial' + 'izer' where the tokenizer writes ' initializer'."""
    ids = KIMI.encode_ordinary("Think.") + [THINK_END] + KIMI.encode_ordinary(" initial") + KIMI.encode_ordinary("izer") + [STOP]
    assert KIMI.encode_ordinary(" initializer") != KIMI.encode_ordinary(" initial") + KIMI.encode_ordinary("izer")
    return {"id": sample_id, "output_ids": ids, "finish_reason": "stop"}


def manifest(name: str, **extra) -> dict:
    return {"name": name, "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "built by tests/test_plugin.py", **extra}


def make_dataset(root: Path, name: str, samples: list[dict], **extra) -> Path:
    return write_dataset(root / "golden" / name, manifest(name, **extra), samples)


def run(pytester: pytest.Pytester, *args: str):
    """One in-process pytest run of the fidelity suite, with the state dir inside the test's folder."""
    return pytester.runpytest("-p", "no:randomly", f"--tokfidelity-state-dir={pytester.path / 'state'}", *args)


def record(pytester: pytest.Pytester, name: str) -> dict | None:
    return read_record(pytester.path / "state", name)


def gate(pytester: pytest.Pytester, name: str):
    return check_gate(name, golden_dir=pytester.path / "golden", state_dir=pytester.path / "state")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------
def test_exact_dataset_passes_and_opens_the_gate(pytester):
    make_dataset(pytester.path, "K1_exact", exact_samples(5))
    result = run(pytester, "--tokfidelity-dataset=K1")
    result.assert_outcomes(passed=4 + 5)
    result.stdout.fnmatch_lines(["*K1_exact: 5 samples: 5 exact*", "*gate: open*"])
    status = gate(pytester, "K1")
    assert status.open, status.message
    assert status.dataset == "K1_exact"
    assert record(pytester, "K1_exact")["counts"]["exact"] == 5


def test_item_ids_name_dataset_and_sample(pytester):
    make_dataset(pytester.path, "K1_exact", exact_samples(2))
    result = run(pytester, "--tokfidelity-dataset=K1_exact", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "golden/K1_exact/samples.jsonl::test_manifest",
            "golden/K1_exact/samples.jsonl::s0",
            "golden/K1_exact/samples.jsonl::s1",
            "golden/K1_exact/samples.jsonl::test_vocabulary",
        ]
    )


def test_only_the_suite_runs_without_paths_and_project_tests_run_with_them(pytester):
    make_dataset(pytester.path, "K1_exact", exact_samples(2))
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests")
    pytester.makepyfile(**{"tests/test_other": "def test_other():\n    pass\n"})
    run(pytester, "--tokfidelity-dataset=K1").assert_outcomes(passed=4 + 2)
    run(pytester, "--tokfidelity-dataset=K1", "tests").assert_outcomes(passed=4 + 2 + 1)


def test_second_profile_chatml_over_qwen3(pytester):
    qwen = load_tokenizer("qwen3")
    stop = bind_profile("chatml", qwen).stop_id
    samples = [{"id": f"q{i}", "output_ids": qwen.encode_ordinary(f"Answer {i}: {i * i}.") + [stop], "finish_reason": "stop"} for i in range(3)]
    write_dataset(pytester.path / "golden" / "Q1_chatml", {"name": "Q1", "profile": "chatml", "tokenizer": "qwen3", "source": "tests"}, samples)
    run(pytester, "--tokfidelity-dataset=Q1").assert_outcomes(passed=4 + 3)


def test_new_divergence_fails_with_the_diagnosis(pytester):
    make_dataset(pytester.path, "K2_div", exact_samples(2) + [split_sample()])
    result = run(pytester, "--tokfidelity-dataset=K2")
    result.assert_outcomes(passed=4 + 2, failed=1)
    out = result.stdout.str()
    assert "golden/K2_div/samples.jsonl::split" in out
    assert "non-canonical-split" in out
    assert "first at index 3" in out  # 'Think' '.' '</think>' then the hunk
    assert "' initial'" in out and "'izer'" in out and "' initializer'" in out
    assert "--snapshot-update" in out
    assert not gate(pytester, "K2").open
    assert record(pytester, "K2_div")["status"] == "closed"


def test_known_divergence_recorded_by_snapshot_update_then_passes(pytester):
    path = make_dataset(pytester.path, "K3_known", exact_samples(3) + [split_sample()], max_known_divergence_rate=0.5)
    golden_before = sha(path / "samples.jsonl")
    updated = run(pytester, "--tokfidelity-dataset=K3", "--snapshot-update")
    updated.assert_outcomes(passed=4 + 4)
    assert record(pytester, "K3_known") is None  # an update run never opens the gate: review first
    snap = path / "__snapshots__" / "fidelity.ambr"
    text = snap.read_text()
    assert "# name: test_fidelity[K3_known/split]" in text
    assert '"classes": ["non-canonical-split"]' in text
    assert "s0]" not in text  # exact samples have no snapshot
    assert len(text.splitlines()) < 15  # compact: not one line per token
    assert sha(path / "samples.jsonl") == golden_before  # golden ids are never rewritten

    result = run(pytester, "--tokfidelity-dataset=K3")
    result.assert_outcomes(passed=4 + 4)
    result.stdout.fnmatch_lines(["*4 samples: 3 exact, 1 known divergence (non-canonical-split 1)", "*gate: open*"])
    assert gate(pytester, "K3").open


def test_known_divergences_over_the_manifest_rate_keep_the_gate_closed(pytester):
    make_dataset(pytester.path, "K3_known", exact_samples(3) + [split_sample()])  # default rate 0
    run(pytester, "--tokfidelity-dataset=K3", "--snapshot-update")
    result = run(pytester, "--tokfidelity-dataset=K3")
    result.assert_outcomes(passed=4 + 4, failed=1)  # test_gate_policy[K3_known]: pytest's exit code is the gate's
    status = gate(pytester, "K3")
    assert not status.open
    assert "max_known_divergence_rate" in status.message


def test_changed_divergence_fails_against_its_snapshot(pytester):
    path = make_dataset(pytester.path, "K4", exact_samples(1) + [split_sample()])
    run(pytester, "--tokfidelity-dataset=K4", "--snapshot-update")
    samples = [json.loads(line) for line in (path / "samples.jsonl").read_text().splitlines()]
    samples[1]["output_ids"][-1] = CHAS  # now also the wrong stop id
    write_dataset(path, manifest("K4"), samples)
    result = run(pytester, "--tokfidelity-dataset=K4")
    result.stdout.fnmatch_lines(["*It differs from the reviewed divergence stored in*fidelity.ambr*"])
    assert "stop-token" in result.stdout.str()


def test_a_renamed_dataset_folder_is_told_where_its_reviews_are_and_finds_them_once_renamed(pytester):
    import shutil

    path = make_dataset(pytester.path, "K9_orig", exact_samples(1) + [split_sample()], max_known_divergence_rate=0.5)
    run(pytester, "--tokfidelity-dataset=K9_orig", "--snapshot-update")
    moved = path.parent / "K9_moved"
    shutil.move(path, moved)  # its reviews are named test_fidelity[K9_orig/...]
    result = run(pytester, "--tokfidelity-dataset=K9_moved")
    result.assert_outcomes(passed=4 + 1, failed=1)  # the split sample
    result.stdout.fnmatch_lines([
        "*No reviewed divergence is stored for this sample under this dataset's name (K9_moved), but*fidelity.ambr holds "
        "one named test_fidelity?K9_orig/split?*rename the entries' `?K9_orig/` to `?K9_moved/` in that file*",  # (? for [)
    ])
    snap = moved / "__snapshots__" / "fidelity.ambr"
    snap.write_text(snap.read_text().replace("[K9_orig/", "[K9_moved/"))  # as the message says
    run(pytester, "--tokfidelity-dataset=K9_moved").assert_outcomes(passed=4 + 2)


def test_reviews_under_other_names_are_the_same_sample_and_view_only():
    from pytest_tokfidelity.snapshots import reviewed_under_other_names, snapshot_key

    stored = {snapshot_key("B1", "s1"), snapshot_key("B1", "s2"), snapshot_key("B1", "s1", "vllm"), snapshot_key("B1_copy", "s1")}
    assert reviewed_under_other_names(stored, snapshot_key("B1_copy", "s1")) == [("B1", "test_fidelity[B1/s1]")]
    assert reviewed_under_other_names(stored, snapshot_key("B2", "s1", "vllm")) == [("B1", "test_fidelity[B1/s1[vllm]]")]
    assert reviewed_under_other_names(stored, snapshot_key("B2", "s3")) == []


def test_a_sample_with_no_review_anywhere_is_told_so_plainly(pytester):
    make_dataset(pytester.path, "K10", exact_samples(1) + [split_sample()])
    result = run(pytester, "--tokfidelity-dataset=K10")
    result.stdout.fnmatch_lines(["*No reviewed divergence is stored for this sample. If this divergence is expected*"])
    assert "under this dataset's name" not in result.stdout.str()


def test_stale_snapshot_is_removed_on_update(pytester):
    path = make_dataset(pytester.path, "K5", exact_samples(1) + [split_sample()])
    run(pytester, "--tokfidelity-dataset=K5", "--snapshot-update")
    snap = path / "__snapshots__" / "fidelity.ambr"
    assert "K5/split" in snap.read_text()
    write_dataset(path, manifest("K5"), exact_samples(1) + [{**exact_samples(2)[1], "id": "split"}])
    run(pytester, "--tokfidelity-dataset=K5").stdout.fnmatch_lines(["*1 reviewed divergence stale*"])
    run(pytester, "--tokfidelity-dataset=K5", "--snapshot-update").stdout.fnmatch_lines(["*1 reviewed divergence removed*"])
    assert not snap.exists() or "K5/split" not in snap.read_text()


def test_accept_policy_passes_text_preserving_splits_within_the_rate(pytester):
    make_dataset(pytester.path, "K6", exact_samples(3) + [split_sample()], accept={"non-canonical-split": 0.05})
    result = run(pytester, "--tokfidelity-dataset=K6")
    result.assert_outcomes(passed=4 + 4)
    result.stdout.fnmatch_lines(["*3 exact, 1 accepted by policy (hunks: non-canonical-split 1)*", "*gate: open*"])


def test_accept_policy_rate_exceeded_fails_the_run(pytester):
    make_dataset(pytester.path, "K6", exact_samples(3) + [split_sample()], accept={"non-canonical-split": 0.0001})
    result = run(pytester, "--tokfidelity-dataset=K6")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAILED: accept policy exceeded: 1 non-canonical-split hunks in*"])
    assert not gate(pytester, "K6").open


def test_policy_never_accepts_classes_that_change_text(pytester):
    bad = {"id": "chas", "output_ids": kimi_ids("Hm.", "ok", stop=CHAS), "finish_reason": "stop"}
    make_dataset(pytester.path, "K7", exact_samples(2) + [bad], accept={"stop-token": 1.0, "special-token-id": 1.0})
    result = run(pytester, "--tokfidelity-dataset=K7")
    result.stdout.fnmatch_lines(["golden/K7/manifest.json: field accept.stop-token: this class changes or loses text*"])
    out = result.stdout.str()
    assert "FAILED golden/K7/samples.jsonl::test_manifest" in out
    assert "FAILED golden/K7/samples.jsonl::chas" in out


def test_wrong_stop_token_is_named_by_the_stop_check(pytester):
    bad = {"id": "chas", "output_ids": kimi_ids("Hm.", "ok", stop=CHAS), "finish_reason": "stop"}
    make_dataset(pytester.path, "K8", exact_samples(1) + [bad])
    result = run(pytester, "--tokfidelity-dataset=K8")
    result.stdout.fnmatch_lines(["*line 2 (chas): finish_reason stop but the last id is 163533 'chas', not 163586 '<|im_end|>'*"])
    assert "FAILED golden/K8/samples.jsonl::test_stop_tokens" in result.stdout.str()


def test_ids_outside_the_vocabulary_fail_the_vocabulary_check(pytester):
    bad = {"id": "big", "output_ids": [1, 2, 999_999, STOP], "finish_reason": "stop"}
    make_dataset(pytester.path, "K9", exact_samples(1) + [bad])
    result = run(pytester, "--tokfidelity-dataset=K9")
    result.stdout.fnmatch_lines(["*line 2 (big): ids [[]999999[]] are outside the vocabulary*"])
    out = result.stdout.str()
    assert "FAILED golden/K9/samples.jsonl::test_vocabulary" in out
    assert "golden/K9/samples.jsonl: line 2 (big): ids [999999] are outside the vocabulary" in out.split("_ big _")[1]


def test_negative_id_is_bad_input_not_a_divergence(pytester):
    # -1 would decode as the last token of the vocabulary; it must never be diagnosed as a re-split
    bad = {"id": "neg", "output_ids": [-1] + kimi_ids("Hm.", "ok"), "finish_reason": "stop"}
    make_dataset(pytester.path, "K9n", exact_samples(1) + [bad], accept={"non-canonical-split": 1.0})
    result = run(pytester, "--tokfidelity-dataset=K9n")
    out = result.stdout.str()
    assert "FAILED golden/K9n/samples.jsonl::neg" in out, out
    section = out.split("_ neg _")[1]
    assert "golden/K9n/samples.jsonl: line 2 (neg): ids [-1] are outside the vocabulary" in section
    assert "non-canonical-split" not in section and "reserved_token" not in section
    assert "accepted by policy" not in out and "1 with bad input" in out


def test_non_utf8_line_fails_its_own_test_and_the_rest_runs(pytester):
    path = make_dataset(pytester.path, "K9u", exact_samples(2))
    with open(path / "samples.jsonl", "ab") as f:
        f.write(b'{"id":"caf\xe9","output_ids":[1],"finish_reason":"stop"}\n')
    result = run(pytester, "--tokfidelity-dataset=K9u")
    result.assert_outcomes(passed=1 + 2 + 3, failed=1)
    assert "golden/K9u/samples.jsonl:3: not UTF-8: byte 0xe9 at column 11" in result.stdout.str()
    assert "golden/K9u/samples.jsonl::line-3" in result.stdout.str()


def test_empty_ids_are_named_by_line_and_said_to_be_missing(pytester):
    path = make_dataset(pytester.path, "K9i", exact_samples(1))
    with open(path / "samples.jsonl", "a") as f:
        f.write('{"id": "", "output_ids": [1], "finish_reason": "stop"}\n' * 2)
    result = run(pytester, "--tokfidelity-dataset=K9i")
    out = result.stdout.str()
    assert "golden/K9i/samples.jsonl::line-2" in out and "golden/K9i/samples.jsonl::line-3" in out
    assert "golden/K9i/samples.jsonl:3: field 'id': missing or not a non-empty string" in out and "duplicate id" not in out


def test_huge_integer_id_is_named_as_too_large(pytester):
    path = make_dataset(pytester.path, "K9h", exact_samples(1))
    with open(path / "samples.jsonl", "a") as f:
        f.write('{"id": "huge", "output_ids": [1, 100000000000000000000000000000], "finish_reason": "stop"}\n')
    result = run(pytester, "--tokfidelity-dataset=K9h")
    assert "golden/K9h/samples.jsonl:2: field 'output_ids[1]': expected a token id, got an integer too large for one" in result.stdout.str()


def test_bad_field_of_a_recorded_response_names_file_line_and_field(pytester):
    bad = {"id": "resp", "output_ids": kimi_ids("Hm.", "ok"), "finish_reason": "stop", "response": {"content": 5, "finish_reason": "stop"}}
    make_dataset(pytester.path, "K9r", exact_samples(1) + [bad])
    result = run(pytester, "--tokfidelity-dataset=K9r")
    assert "golden/K9r/samples.jsonl: resp: line 2: field 'response.content': expected a string or null, got int" in result.stdout.str()


def test_deeply_nested_line_fails_its_own_test_only(pytester):
    path = make_dataset(pytester.path, "K9d", exact_samples(2))
    with open(path / "samples.jsonl", "a") as f:
        f.write('{"id": "deep", "output_ids": ' + "[" * 100_000 + "]" * 100_000 + ', "finish_reason": "stop"}\n')
    result = run(pytester, "--tokfidelity-dataset=K9d")
    result.assert_outcomes(passed=1 + 2 + 3, failed=1)
    assert "golden/K9d/samples.jsonl:3: not valid JSON: nested too deeply" in result.stdout.str()


@pytest.mark.parametrize("samples_file", ["empty", "missing", "folder"])
def test_dataset_without_samples_does_not_crash_the_run(pytester, samples_file):
    path = make_dataset(pytester.path, "K9e", [])
    if samples_file != "empty":
        (path / "samples.jsonl").unlink()
    if samples_file == "folder":
        (path / "samples.jsonl").mkdir()
    result = run(pytester, "--tokfidelity-dataset=K9e")  # alone: not one sample test to collect
    assert result.ret != pytest.ExitCode.INTERNAL_ERROR and "INTERNALERROR" not in result.stdout.str()
    assert "K9e: 0 samples" in result.stdout.str()
    if samples_file == "missing":
        assert "golden/K9e/samples.jsonl: missing" in result.stdout.str()
    if samples_file == "folder":
        assert "golden/K9e/samples.jsonl: cannot be read (Is a directory)" in result.stdout.str()
    assert not gate(pytester, "K9e").open


def test_bad_lines_and_fields_fail_their_own_tests_and_the_rest_runs(pytester):
    path = make_dataset(pytester.path, "K10", exact_samples(3))
    lines = (path / "samples.jsonl").read_text().splitlines()
    lines.insert(1, '{"id": "broken", "output_ids": [1, 2,')  # line 2: not JSON (its id still names the test)
    lines.insert(2, '[1, 2, 3')  # line 3: no id at all
    lines.append(json.dumps({"id": "badfinish", "output_ids": [1, STOP], "finish_reason": "exploded"}))  # line 6
    lines.append(json.dumps({"id": "badid", "output_ids": [1, "x"], "finish_reason": "stop"}))  # line 7
    (path / "samples.jsonl").write_text("\n".join(lines) + "\n")
    result = run(pytester, "--tokfidelity-dataset=K10")
    result.assert_outcomes(passed=4 + 3, failed=4)
    out = result.stdout.str()
    assert "golden/K10/samples.jsonl:2: not valid JSON" in out
    assert "golden/K10/samples.jsonl:3: not valid JSON" in out and "golden/K10/samples.jsonl::line-3" in out
    assert "golden/K10/samples.jsonl:6: field 'finish_reason'" in out
    assert "golden/K10/samples.jsonl:7: field 'output_ids[1]'" in out
    assert "golden/K10/samples.jsonl::broken" in out and "golden/K10/samples.jsonl::badfinish" in out
    assert not gate(pytester, "K10").open


def test_bad_manifest_fails_its_own_test_and_samples_still_run(pytester):
    path = make_dataset(pytester.path, "K11", exact_samples(2))
    raw = json.loads((path / "manifest.json").read_text())
    del raw["source"]
    (path / "manifest.json").write_text(json.dumps(raw))
    result = run(pytester, "--tokfidelity-dataset=K11")
    result.assert_outcomes(passed=3 + 2, failed=1)
    result.stdout.fnmatch_lines(["golden/K11/manifest.json: field 'source': missing"])
    assert not gate(pytester, "K11").open


def test_unparseable_manifest_fails_every_test_of_the_dataset_without_crashing(pytester):
    make_dataset(pytester.path, "K12", exact_samples(2))
    (pytester.path / "golden" / "K12" / "manifest.json").write_text("{not json")
    make_dataset(pytester.path, "K13", exact_samples(1))
    result = run(pytester, "--tokfidelity-dataset=K12,K13")
    result.assert_outcomes(passed=4 + 1, failed=4 + 2)
    result.stdout.fnmatch_lines(["*manifest.json:1: not valid JSON*"])


@pytest.mark.parametrize(
    "args",
    [("-k", "s1 or manifest"), ("--tokfidelity-sample=2",), ("-m", "not slow"), ("--deselect", "golden/K14/samples.jsonl::s0")],
    ids=["-k", "sample", "-m", "deselect"],
)
def test_partial_runs_write_no_record(pytester, args):
    make_dataset(pytester.path, "K14", exact_samples(4))
    result = run(pytester, "--tokfidelity-dataset=K14", *args)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*gate: record unchanged: partial run*"])
    assert record(pytester, "K14") is None
    assert not gate(pytester, "K14").open


def test_sample_subset_is_deterministic(pytester):
    make_dataset(pytester.path, "K15", exact_samples(20))
    first = run(pytester, "--tokfidelity-dataset=K15", "--tokfidelity-sample=5", "--collect-only", "-q").stdout.lines
    second = run(pytester, "--tokfidelity-dataset=K15", "--tokfidelity-sample=5", "--collect-only", "-q").stdout.lines
    chosen = [line for line in first if line.startswith("golden/K15/samples.jsonl::s")]
    assert len(chosen) == 5 and chosen == [line for line in second if line.startswith("golden/K15/samples.jsonl::s")]


def test_early_stop_and_last_failed_never_open_the_gate(pytester):
    path = make_dataset(pytester.path, "K16", [split_sample("a")] + exact_samples(3))
    first = run(pytester, "--tokfidelity-dataset=K16", "-x")
    first.assert_outcomes(passed=1, failed=1)  # test_manifest, then the first sample stops the run
    assert record(pytester, "K16")["status"] == "closed"
    write_dataset(path, manifest("K16"), exact_samples(4))  # fixed
    # --lf runs only the failed ids (none exist any more: pytest then runs all, still marked --lf)
    run(pytester, "--tokfidelity-dataset=K16", "--lf").stdout.fnmatch_lines(["*record unchanged: partial run (--lf)*"])
    assert not gate(pytester, "K16").open
    run(pytester, "--tokfidelity-dataset=K16").assert_outcomes(passed=4 + 4)
    assert gate(pytester, "K16").open


def test_failing_full_run_closes_an_open_gate(pytester):
    path = make_dataset(pytester.path, "K17", exact_samples(3))
    run(pytester, "--tokfidelity-dataset=K17")
    assert gate(pytester, "K17").open
    write_dataset(path, manifest("K17"), exact_samples(3) + [split_sample()])
    run(pytester, "--tokfidelity-dataset=K17").assert_outcomes(passed=4 + 3, failed=1)
    status = gate(pytester, "K17")
    assert not status.open
    assert "failed" in status.message and "pytest --tokfidelity-dataset=K17" in status.open_command


def test_editing_a_golden_file_after_a_green_run_closes_the_gate(pytester):
    path = make_dataset(pytester.path, "K18", exact_samples(3))
    run(pytester, "--tokfidelity-dataset=K18")
    assert gate(pytester, "K18").open
    with open(path / "samples.jsonl", "a") as f:
        f.write(json.dumps(exact_samples(4)[3]) + "\n")
    status = gate(pytester, "K18")
    assert not status.open
    assert "golden file samples.jsonl changed" in status.message


def test_unknown_dataset_is_a_usage_error(pytester):
    make_dataset(pytester.path, "K19", exact_samples(1))
    result = run(pytester, "--tokfidelity-dataset=NOPE")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no dataset named 'NOPE'*available: K19*"])


def test_state_dir_that_is_a_file_is_a_usage_error_before_the_run(pytester):
    make_dataset(pytester.path, "K19d", exact_samples(1))
    (pytester.path / "state").write_text("not a folder")
    result = run(pytester, "--tokfidelity-dataset=K19d")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--tokfidelity-state-dir: {pytester.path / 'state'} is a file*"])


@pytest.mark.parametrize("option, message", [
    ("--tokfidelity-view=openai", "*--tokfidelity-view: unknown view 'openai'; known: sglang, sglang-legacy, vllm*"),
    ("--tokfidelity-sample=-3", "*--tokfidelity-sample: expected a positive number of samples, got -3*"),
    ("--tokfidelity-sample=0", "*--tokfidelity-sample: expected a positive number of samples, got 0*"),
])
def test_bad_view_or_sample_size_is_a_usage_error(pytester, option, message):
    make_dataset(pytester.path, "K19b", exact_samples(1))
    result = run(pytester, "--tokfidelity-dataset=K19b", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert record(pytester, "K19b") is None


@pytest.mark.parametrize("value", ["", " , "])
def test_empty_dataset_option_is_a_usage_error_not_a_silent_no_op(pytester, value):
    make_dataset(pytester.path, "K19c", exact_samples(1))
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = run(pytester, f"--tokfidelity-dataset={value}")  # as from an unset variable in a CI line
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--tokfidelity-dataset: no dataset name given*"])


def test_without_the_option_the_plugin_adds_nothing_and_imports_nothing(pytester):
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    script = pytester.makepyfile(
        probe=(
            "import sys, pytest\n"
            "rc = pytest.main(['-q', '-p', 'no:cacheprovider', 'test_one.py'])\n"
            "heavy = [m for m in ('tiktoken', 'tokenizers', 'transformers', 'pipeline', 'pytest_tokfidelity.session') if m in sys.modules]\n"
            "print('HEAVY', heavy)\n"
            "sys.exit(rc)\n"
        )
    )
    result = pytester.run(sys.executable, str(script))
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*1 passed*", "HEAVY []"])
    assert "tokfidelity" not in result.stdout.str().replace("pytest_tokfidelity", "")


@pytest.mark.slow
def test_xdist_gives_the_same_verdicts_snapshots_and_record(pytester):
    samples = exact_samples(12) + [split_sample("split1"), split_sample("split2")]
    outcomes = {}
    for mode, extra in (("one", ()), ("xdist", ("-n", "2"))):
        root = pytester.path / mode
        path = write_dataset(root / "golden" / "K20", manifest("K20", max_known_divergence_rate=0.2), samples)
        common = (f"--tokfidelity-golden-dir={root / 'golden'}", f"--tokfidelity-state-dir={root / 'state'}", "--tokfidelity-dataset=K20", "-p", "no:cacheprovider")
        first = pytester.runpytest_subprocess(*common, "-rA", *extra)
        first.assert_outcomes(passed=4 + 12, failed=2)
        failed = sorted(line.split(" - ")[0].replace(f"FAILED {mode}/", "FAILED ", 1) for line in first.stdout.lines if line.startswith("FAILED"))
        pytester.runpytest_subprocess(*common, "--snapshot-update", *extra).assert_outcomes(passed=4 + 14)
        final = pytester.runpytest_subprocess(*common, *extra)
        final.assert_outcomes(passed=4 + 14)
        rec = read_record(root / "state", "K20")
        assert rec["status"] == "open"
        outcomes[mode] = (failed, (path / "__snapshots__" / "fidelity.ambr").read_text(), rec["counts"], rec["golden_files"], rec["code_fingerprint"])
    assert outcomes["one"] == outcomes["xdist"]


def test_recorded_response_is_reconstructed_instead_of_the_view(pytester):
    same = {**exact_samples(1)[0], "id": "same", "response": {"reasoning": "Let me add 0 and 1.", "content": "0 + 1 = 1.", "finish_reason": "stop"}}
    stripped = {**exact_samples(1)[0], "id": "stripped", "response": {"reasoning": "Let me add 0 and 1.", "content": "0 + 1 = 1.\n", "finish_reason": "stop"}}
    make_dataset(pytester.path, "K21", [same, stripped])
    result = run(pytester, "--tokfidelity-dataset=K21")
    result.assert_outcomes(passed=4 + 1, failed=1)
    assert "FAILED golden/K21/samples.jsonl::stripped" in result.stdout.str()


def test_view_and_tokenizer_overrides_and_ini_golden_dir(pytester, monkeypatch):
    write_dataset(pytester.path / "data" / "K22", manifest("K22"), exact_samples(3))
    pytester.makeini("[pytest]\ntokfidelity_golden_dir = data\n")
    kimi_dir = str(Path(KIMI.source).resolve())
    run(pytester, "--tokfidelity-dataset=all", f"--tokfidelity-tokenizer={kimi_dir}").assert_outcomes(passed=4 + 3)
    assert read_record(pytester.path / "state", "K22")["tokenizer"] == kimi_dir
    # the vllm view judges the same samples (they round-trip through it too) and the record says so
    run(pytester, "--tokfidelity-dataset=K22", "--tokfidelity-view=vllm").assert_outcomes(passed=4 + 3)
    assert read_record(pytester.path / "state", "K22")["view"] == "vllm"
    # sglang-legacy strips around </think>: a sample with whitespace there diverges under it
    write_dataset(pytester.path / "data" / "K23", manifest("K23"),
                  [{"id": "ws", "output_ids": kimi_ids("Think.\n", "\nAnswer."), "finish_reason": "stop"}])
    result = run(pytester, "--tokfidelity-dataset=K23", "--tokfidelity-view=sglang-legacy")
    result.assert_outcomes(passed=4, failed=1)
    assert read_record(pytester.path / "state", "K23")["status"] == "closed"


def test_files_with_a_byte_order_mark_are_read(pytester):
    d = make_dataset(pytester.path, "K9_bom", exact_samples(2))
    for name in ("manifest.json", "samples.jsonl"):
        (d / name).write_bytes("\ufeff".encode() + (d / name).read_bytes())
    result = run(pytester, "--tokfidelity-dataset=K9")
    result.assert_outcomes(passed=4 + 2)
    assert gate(pytester, "K9").open


def test_collected_items_are_frozen_for_the_run_and_thawed_after_it(pytester):
    """The collector leaves the collected items alone during the run (gc.freeze), and a run inside
    a longer-lived process (this one) leaves nothing frozen behind."""
    import gc

    make_dataset(pytester.path, "K1_exact", exact_samples(3))
    seen = pytester.path / "frozen.txt"
    pytester.syspathinsert()
    probe = f"import gc\ndef pytest_runtest_call(item):\n    open({str(seen)!r}, 'a').write(f'{{gc.get_freeze_count()}}\\n')\n"
    pytester.makepyfile(freeze_probe=probe)
    assert gc.get_freeze_count() == 0
    run(pytester, "-p", "freeze_probe", "--tokfidelity-dataset=K1").assert_outcomes(passed=4 + 3)
    counts = [int(n) for n in seen.read_text().split()]
    assert len(counts) == 4 + 3 and min(counts) > 1000, counts  # the items, the modules, the tokenizer's tables
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()  # it is off only while the items are made


def test_what_the_run_keeps_is_frozen_as_it_piles_up(pytester, monkeypatch):
    """pytest's reports pile up for its summary; every FREEZE_EVERY tests they are frozen too."""
    import gc
    import importlib

    # from sys.modules, as the run will import it (an earlier in-process run may have left the
    # package an attribute pointing to a module it then dropped)
    session = importlib.import_module("pytest_tokfidelity.session")
    monkeypatch.setattr(session, "FREEZE_EVERY", 2)
    make_dataset(pytester.path, "K1_exact", exact_samples(6))
    seen = pytester.path / "frozen.txt"
    pytester.syspathinsert()
    probe = f"import gc\ndef pytest_runtest_logfinish():\n    open({str(seen)!r}, 'a').write(f'{{gc.get_freeze_count()}}\\n')\n"
    pytester.makepyfile(freeze_probe=probe)
    run(pytester, "-p", "freeze_probe", "--tokfidelity-dataset=K1").assert_outcomes(passed=4 + 6)
    counts = [int(n) for n in seen.read_text().split()]
    grew = sum(b > a for a, b in zip(counts, counts[1:]))
    # after collection nothing else freezes: the count only grows when the run freezes what piled up
    assert grew >= 3, counts
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_sample_tests_take_no_fixtures_and_keep_their_ids(pytester):
    """Each sample is a SampleItem (no fixture request, no parameter fixture: the controlling
    process's cost per sample), with the node id of its sample in its dataset's samples.jsonl."""
    from pytest_tokfidelity.collection import SampleItem

    make_dataset(pytester.path, "K1_exact", exact_samples(2))
    items, _ = pytester.inline_genitems("-p", "no:randomly", f"--tokfidelity-state-dir={pytester.path / 'state'}", "--tokfidelity-dataset=K1")
    samples = [i for i in items if isinstance(i, SampleItem)]
    assert [i.nodeid for i in samples] == [f"golden/K1_exact/samples.jsonl::s{n}" for n in range(2)]
    assert all(not getattr(i, "fixturenames", ()) for i in samples)
    assert [i.name for i in items if not isinstance(i, SampleItem)] == [
        "test_manifest", "test_vocabulary", "test_special_tokens", "test_stop_tokens",
    ]


@pytest.mark.parametrize("how", ["option", "manifest"])
def test_a_view_the_profile_lacks_is_one_manifest_failure(pytester, how):
    """A view the dataset's profile lacks (qwen3 has no sglang-legacy) is one test_manifest
    failure naming the field and the profile's views; no sample is judged and none shows a traceback."""
    qwen3 = load_tokenizer("qwen3")
    extra = {"api_view": "sglang-legacy"} if how == "manifest" else {}
    m = {**manifest("Q9"), "profile": "qwen3", "tokenizer": "qwen3", **extra}
    write_dataset(pytester.path / "golden" / "Q9_view", m, [
        {"id": f"q{i}", "output_ids": qwen3.encode_ordinary(f"answer {i}") + [qwen3.encode("<|im_end|>")[0]],
         "finish_reason": "stop"} for i in range(3)
    ])
    args = ["--tokfidelity-dataset=Q9"] + (["--tokfidelity-view=sglang-legacy"] if how == "option" else [])
    result = run(pytester, *args)
    field = "--tokfidelity-view" if how == "option" else "field 'api_view'"
    result.stdout.fnmatch_lines([f"*{field}: profile qwen3 has no view 'sglang-legacy'; its views: sglang, vllm*"])
    out = result.stdout.str()
    assert "Traceback" not in out and "ViewError" not in out and out.count("has no view") <= 3
    assert result.ret != 0

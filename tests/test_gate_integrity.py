"""The gate pins what it judged: every input hashed when read and checked at the end,
stage options checked against the record, counts that could not have opened it refused, and the
plugin faults found by adversarial runs (mixed runs, odd names, bad settings, bad bytes)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pipeline.core import gate
from pipeline.core.pins import file_sha256
from pipeline.core.golden import load_manifest, write_dataset
from pipeline.core.tokenizer import load_tokenizer
from test_plugin import KIMI, exact_samples, make_dataset, manifest, record, run, split_sample


def gate_of(pytester, name: str, **kw) -> gate.GateStatus:
    return gate.check_gate(name, golden_dir=pytester.path / "golden", state_dir=pytester.path / "state", **kw)


EDIT_TEST = """
from pathlib import Path

def test_edit_after_the_suite():
    path = Path({path!r})
    with open(path, "ab") as f:
        f.write({data!r})
"""


def edit_test(pytester, path: Path, data: bytes) -> None:
    """A project test, run after the fidelity suite, that appends ``data`` to ``path``."""
    pytester.makepyfile(test_edit=EDIT_TEST.format(path=str(path), data=data))


# -- 1. inputs pinned when read, checked at the end -----------------------------------------------
def test_samples_appended_during_the_run_keep_the_gate_closed(pytester):
    path = make_dataset(pytester.path, "P1_edit", exact_samples(3))
    line = json.dumps({"id": "unjudged", "output_ids": [1, 2, 3], "finish_reason": "stop"}) + "\n"
    edit_test(pytester, path / "samples.jsonl", line.encode())
    result = run(pytester, "--tokfidelity-dataset=P1", "test_edit.py")
    result.assert_outcomes(passed=4 + 3 + 1, failed=1)  # test_gate_policy: the gate stays closed
    rec = record(pytester, "P1_edit")
    assert rec["status"] == "closed"
    assert "golden file samples.jsonl changed since it was read" in rec["reason"]
    assert "samples.jsonl changed" in result.stdout.str()
    assert not gate_of(pytester, "P1").open


def test_tokenizer_file_edited_during_the_run_keeps_the_gate_closed(pytester):
    tok_dir = pytester.path / "tok"
    shutil.copytree(KIMI.source, tok_dir)
    make_dataset(pytester.path, "P2_tok", exact_samples(2), tokenizer=str(tok_dir))
    edit_test(pytester, tok_dir / "tokenizer_config.json", b"\n")  # harmless to JSON, not to the pin
    result = run(pytester, "--tokfidelity-dataset=P2", "test_edit.py")
    result.assert_outcomes(passed=4 + 2 + 1, failed=1)  # test_gate_policy: the gate stays closed
    rec = record(pytester, "P2_tok")
    assert rec["status"] == "closed"
    assert f"tokenizer file {(tok_dir / 'tokenizer_config.json').resolve()} changed since it was loaded" in rec["reason"]


def test_chat_template_edited_during_the_run_keeps_the_gate_closed_and_is_named(pytester):
    tok_dir = pytester.path / "tok"
    shutil.copytree(KIMI.source, tok_dir)
    make_dataset(pytester.path, "P2_tmpl", exact_samples(2), tokenizer=str(tok_dir))
    edit_test(pytester, tok_dir / "chat_template.jinja", b" ")  # one character
    result = run(pytester, "--tokfidelity-dataset=P2", "test_edit.py")
    result.assert_outcomes(passed=4 + 2 + 1, failed=1)  # test_gate_policy: the gate stays closed
    rec = record(pytester, "P2_tmpl")
    assert rec["status"] == "closed"
    assert f"chat template {(tok_dir / 'chat_template.jinja').resolve()} changed since it was read" in rec["reason"]


def test_snapshot_edited_during_the_run_keeps_the_gate_closed(pytester):
    path = make_dataset(pytester.path, "P3_snap", exact_samples(2) + [split_sample()], max_known_divergence_rate=0.5)
    run(pytester, "--tokfidelity-dataset=P3", "--snapshot-update")
    edit_test(pytester, path / "__snapshots__" / "fidelity.ambr", b"\n")
    result = run(pytester, "--tokfidelity-dataset=P3", "test_edit.py")
    result.assert_outcomes(passed=4 + 3 + 1, failed=1)  # test_gate_policy: the gate stays closed
    rec = record(pytester, "P3_snap")
    assert rec["status"] == "closed" and "__snapshots__/fidelity.ambr changed" in rec["reason"]


def test_the_record_holds_the_hashes_of_what_was_read(pytester):
    path = make_dataset(pytester.path, "P4_pins", exact_samples(2))
    run(pytester, "--tokfidelity-dataset=P4").assert_outcomes(passed=4 + 2)
    rec = record(pytester, "P4_pins")
    assert rec["status"] == "open"
    assert rec["golden_files"] == gate.golden_file_hashes(path)
    assert rec["tokenizer_files"] == KIMI.file_digests and rec["tokenizer_files"]
    jinja = str((Path(KIMI.source) / "chat_template.jinja").resolve())
    assert list(rec["template_files"]) == [jinja] and rec["template_files"][jinja] == file_sha256(jinja)


def test_a_sample_line_changed_in_place_after_indexing_fails_its_own_test(tmp_path):
    from pytest_tokfidelity.index import SampleIndex

    path = write_dataset(tmp_path / "D", manifest("D"), exact_samples(2)) / "samples.jsonl"
    index = SampleIndex(path)
    assert index.sha256 == file_sha256(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"s1"', b'"t1"'))  # same length, same offsets
    fd = os.open(path, os.O_RDONLY)
    try:
        assert index.read(0, fd).id == "s0"
        error = index.read(1, fd)
    finally:
        os.close(fd)
    assert "changed on disk since the file was indexed" in str(error) and f"{path}:2" in str(error)


def _stamped_samples(tmp_path, monkeypatch):
    """A dataset whose samples file has been still for longer than a (shortened) SETTLED_NS, indexed: its pins
    and the samples file. Reading the samples file again is counted."""
    import time

    from pipeline.core import pins as pins_module
    from pytest_tokfidelity.index import SampleIndex

    monkeypatch.setattr(pins_module, "SETTLED_NS", 20_000_000)  # 20 ms, where a real run waits 2 s
    folder = write_dataset(tmp_path / "D", manifest("D"), exact_samples(2))
    path = folder / "samples.jsonl"
    time.sleep(0.06)
    index = SampleIndex(path)
    assert index.stamp is not None
    reads = []
    real = pins_module.file_sha256
    monkeypatch.setattr(pins_module, "file_sha256", lambda p: reads.append(Path(p).name) or real(p))
    golden = {"samples.jsonl": index.sha256, "manifest.json": file_sha256(folder / "manifest.json")}
    return pins_module.Pins(golden, stamps={"samples.jsonl": index.stamp}), folder, path, reads


def test_a_samples_file_whose_stamp_holds_is_not_read_again_at_the_end(tmp_path, monkeypatch):
    pins, folder, _, reads = _stamped_samples(tmp_path, monkeypatch)
    assert pins.changes(folder) == []
    assert reads == ["manifest.json"]


@pytest.mark.parametrize("edit", ["append", "same size", "replaced"])
def test_a_stamped_samples_file_changed_after_it_was_read_is_hashed_again_and_named(tmp_path, monkeypatch, edit):
    """Any write after the stamp moves the file's change time (or its size, or its inode): the end check reads it again."""
    pins, folder, path, reads = _stamped_samples(tmp_path, monkeypatch)
    data = path.read_bytes()
    if edit == "append":
        with open(path, "ab") as f:
            f.write(b'{"id":"late","output_ids":[1],"finish_reason":"stop"}\n')
    elif edit == "same size":
        with open(path, "r+b") as f:  # in place: same inode, same size
            f.write(data.replace(b'"s1"', b'"t1"'))
    else:
        path.with_name("new").write_bytes(data.replace(b'"s1"', b'"t1"'))
        os.replace(path.with_name("new"), path)
    assert pins.changes(folder) == ["golden file samples.jsonl changed since it was read"]
    assert "samples.jsonl" in reads


def test_the_report_lists_a_samples_file_still_as_read_without_reading_it_again(pytester, monkeypatch):
    """--tokfidelity-report's results.json gives each golden file's hash: the samples file's is the run's own
    where its stamp still holds (no third read of it after the gate's end check), and the same as hashing it now."""
    import time

    from pipeline.core import pins as pins_module

    monkeypatch.setattr(pins_module, "SETTLED_NS", 20_000_000)  # 20 ms, where a real run waits 2 s
    folder = make_dataset(pytester.path, "P5_report", exact_samples(2))
    time.sleep(0.06)
    reads = []
    real = pins_module.file_sha256
    monkeypatch.setattr(pins_module, "file_sha256", lambda p: reads.append(Path(p).name) or real(p))
    result = run(pytester, f"--tokfidelity-report={pytester.path / 'report'}", "--tokfidelity-dataset=P5")
    result.assert_outcomes(passed=4 + 2)
    assert record(pytester, "P5_report")["status"] == "open"
    (entry,) = json.loads((pytester.path / "report" / "results.json").read_text())["datasets"]
    assert entry["golden_files"]["samples.jsonl"] == file_sha256(folder / "samples.jsonl")
    assert entry["golden_files"]["manifest.json"] == file_sha256(folder / "manifest.json")
    assert "samples.jsonl" not in reads and "manifest.json" in reads


def test_a_lone_run_records_the_code_as_hashed_when_it_began(pytester):
    """A lone pytest (its own process: one inside an xdist worker does not fork) hashes the code that judges in
    the process that indexes the samples, as the run begins; the record written at the end holds those hashes
    (the same as hashing it now), and the code is not hashed again then (the project's conftest makes that fail)."""
    from pipeline.core.fingerprints import code_file_hashes

    make_dataset(pytester.path, "P4_code", exact_samples(2))
    pytester.makeconftest("""
from pipeline.core import gate

def _hashed_at_the_end(*args):
    raise AssertionError("the code was hashed again at the end")

gate.code_file_hashes = _hashed_at_the_end
""")
    result = pytester.runpytest_subprocess("-p", "no:randomly", f"--tokfidelity-state-dir={pytester.path / 'state'}",
                                           "--tokfidelity-dataset=P4")
    result.assert_outcomes(passed=4 + 2)
    rec = record(pytester, "P4_code")
    assert rec["status"] == "open"
    assert rec["code_files"] == code_file_hashes([rec["profile"]])


def test_a_samples_file_written_just_before_it_was_read_gets_no_stamp(tmp_path):
    """Written within SETTLED_NS (2 s) of the pass: a later write in the same clock tick could leave its stat as it
    was, so it has no stamp and is hashed again at the end."""
    from pytest_tokfidelity.index import SampleIndex

    path = write_dataset(tmp_path / "D", manifest("D"), exact_samples(2)) / "samples.jsonl"
    assert SampleIndex(path).stamp is None


# -- 3. a GGUF tokenizer: what is loaded is the rebuilt tokenizer.json too ---------------------------
@pytest.mark.slow
def test_gguf_fingerprint_covers_the_cached_rebuild(tmp_path, monkeypatch):
    from pipeline.core.tokenizer import resolve as tk

    spec = load_manifest(Path(__file__).parent.parent / "golden" / "smollm2-chat").tokenizer
    monkeypatch.setenv("TOKFIDELITY_CACHE_DIR", str(tmp_path / "cache"))
    tk._load_cached.cache_clear()
    try:
        first = load_tokenizer(spec)
        cached = [p for p in first.files if p.name == "tokenizer.json"]
        assert cached and cached[0].is_relative_to(tmp_path / "cache")
        before = first.fingerprint
        data = json.loads(cached[0].read_text())
        data["model"]["vocab"]["tokfidelity-edit"] = len(data["model"]["vocab"]) + 5
        cached[0].write_text(json.dumps(data))
        tk._load_cached.cache_clear()
        assert load_tokenizer(spec).fingerprint != before
    finally:
        tk._load_cached.cache_clear()


# -- 4. a symlinked __snapshots__ is part of the dataset -----------------------------------------------
def test_symlinked_snapshot_folder_is_followed(tmp_path):
    from pipeline.core.decision import Counts

    dataset = write_dataset(tmp_path / "golden" / "P5_link", manifest("P5_link"), exact_samples(1))
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "fidelity.ambr").write_text("# name: x\n")
    (dataset / "__snapshots__").symlink_to(real, target_is_directory=True)
    assert "__snapshots__/fidelity.ambr" in gate.golden_file_hashes(dataset)
    state = tmp_path / "state"
    gate.write_open_record(
        dataset, state_dir=state, tokenizer_spec="kimi-k2.5", tokenizer_fingerprint=KIMI.fingerprint,
        profile="kimi-k2.5", view="sglang", counts=Counts(samples=1, exact=1),
    )
    assert gate.check_gate("P5", golden_dir=dataset.parent, state_dir=state).open
    (real / "fidelity.ambr").write_text("# name: y\n")
    status = gate.check_gate("P5", golden_dir=dataset.parent, state_dir=state)
    assert not status.open and "golden file __snapshots__/fidelity.ambr changed" in status.message


# -- 5. counts that could not have opened the gate ----------------------------------------------------
@pytest.mark.parametrize("edit, why", [
    ({"new": 7}, "7 new divergence(s)"),
    ({"bad_input": 3}, "3 sample(s) with bad input"),
    ({"samples": 1, "exact": 1}, "1 of 2 samples passed"),
    ({"exact": "2"}, "counts.exact: expected a whole number"),
    ({"exact": 1, "known": 1}, "known-divergence rate 1/2"),
])
def test_hand_edited_counts_keep_the_gate_closed(pytester, edit, why):
    make_dataset(pytester.path, "P6_counts", exact_samples(2))
    run(pytester, "--tokfidelity-dataset=P6").assert_outcomes(passed=4 + 2)
    assert gate_of(pytester, "P6").open
    path = gate.record_path(pytester.path / "state", "P6_counts")
    rec = json.loads(path.read_text())
    rec["counts"].update(edit)
    path.write_text(json.dumps(rec))
    status = gate_of(pytester, "P6")
    assert not status.open and why in status.message


def test_decide_is_the_one_gate_decision():
    from pipeline.core.decision import Completeness, Counts, decide

    m = load_manifest_like(max_known_divergence_rate=0.5)
    full = Completeness(expected=2, passed=2)
    assert decide(Counts(samples=2, exact=1, known=1), m, full).open
    assert decide(Counts(samples=2, exact=2), m, Completeness(expected=2, passed=2, partial=("-k x",))).status == "unchanged"
    assert decide(Counts(samples=2, exact=2), m, Completeness(expected=2, passed=2, failed=1)).status == "closed"
    assert decide(Counts(samples=2, exact=2, policy_hunks_by_class={"non-canonical-split": 1}), m, full).status == "closed"
    merged = Counts(samples=1, exact=1, known_by_class={"a": 1}).merge(Counts(samples=1, known=1, known_by_class={"a": 2}))
    assert (merged.samples, merged.exact, merged.known, merged.known_by_class) == (2, 1, 1, {"a": 3})


def load_manifest_like(**extra):
    from pipeline.core.golden import Manifest

    return Manifest(name="M", profile="kimi-k2.5", tokenizer="kimi-k2.5", source="t", **extra)


# -- 2. stage options checked against the record ------------------------------------------------------
@pytest.mark.parametrize("option, value, why", [
    ("profile", "kimi-k2", "--profile kimi-k2 differs from the profile the gate was opened with ('kimi-k2.5')"),
    ("view", "vllm", "view vllm is not a view the gate was opened with (sglang)"),
    ("tokenizer", "qwen3", "tokenizer 'qwen3' has fingerprint"),
])
def test_check_gate_refuses_an_option_other_than_the_recorded_one(pytester, option, value, why):
    make_dataset(pytester.path, "P7_opt", exact_samples(1))
    run(pytester, "--tokfidelity-dataset=P7").assert_outcomes(passed=4 + 1)
    assert gate_of(pytester, "P7", **{option: None}).open
    status = gate_of(pytester, "P7", **{option: value})
    assert not status.open and why in status.message


# -- 13. mixed runs with snapshots ------------------------------------------------------------------
def test_mixed_run_with_snapshots_and_other_tests_opens_only_on_its_own_tests(pytester):
    make_dataset(pytester.path, "P8_mixed", exact_samples(2) + [split_sample()], max_known_divergence_rate=0.5)
    run(pytester, "--tokfidelity-dataset=P8", "--snapshot-update")
    pytester.makepyfile(
        test_project="import pytest\n\n@pytest.mark.parametrize('x', [1])\ndef test_param(x):\n    pass\n\n"
        "def test_plain(snapshot):\n    assert snapshot == 1\n\ndef test_failing():\n    assert False\n"
    )
    result = run(pytester, "--tokfidelity-dataset=P8", "test_project.py", "--snapshot-update")
    run(pytester, "--tokfidelity-dataset=P8", "test_project.py")
    result = run(pytester, "--tokfidelity-dataset=P8", "test_project.py")
    result.assert_outcomes(passed=4 + 3 + 2, failed=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "P8_mixed: 3 samples" in result.stdout.str()
    assert record(pytester, "P8_mixed")["status"] == "open"


# -- 14. located errors, never INTERNALERROR ----------------------------------------------------------
def test_manifest_that_is_a_folder_fails_its_own_test(pytester):
    make_dataset(pytester.path, "P9_good", exact_samples(1))
    bad = make_dataset(pytester.path, "P9_dir", exact_samples(1))
    (bad / "manifest.json").unlink()
    (bad / "manifest.json").mkdir()
    result = run(pytester, "--tokfidelity-dataset=all")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert "P9_dir/manifest.json: is a folder" in out
    assert "P9_good: 1 sample:" in out and record(pytester, "P9_good")["status"] == "open"


def test_new_first_orders_the_suite_by_its_samples_files(pytester):
    """--nf sorts tests by their files' modification times: the suite's tests are its datasets' own
    samples.jsonl files (collection.py), so it runs, new tests first, and a full run opens the gate."""
    make_dataset(pytester.path, "P10_nf", exact_samples(1))
    make_dataset(pytester.path, "P10_other", exact_samples(2))
    result = run(pytester, "--tokfidelity-dataset=P10_nf,P10_other", "--nf")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2 * 4 + 3)
    assert record(pytester, "P10_nf")["status"] == "open" and record(pytester, "P10_other")["status"] == "open"


@pytest.mark.parametrize("shape", ["dangling", "below-a-file"])
def test_unusable_state_dir_is_a_usage_error_at_startup(pytester, shape):
    make_dataset(pytester.path, "P11_state", exact_samples(1))
    if shape == "dangling":
        state = pytester.path / "state"
        state.symlink_to(pytester.path / "nowhere")
    else:
        (pytester.path / "afile").write_text("x")
        state = pytester.path / "afile" / "state"
    result = pytester.runpytest("-p", "no:randomly", f"--tokfidelity-state-dir={state}", "--tokfidelity-dataset=P11")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert "Traceback" not in result.stderr.str() and "INTERNALERROR" not in result.stdout.str()
    result.stderr.fnmatch_lines(["*--tokfidelity-state-dir:*"])


# -- 15. read what capture writes ------------------------------------------------------------------
def test_lone_surrogate_written_escaped_is_read_back(pytester):
    sample = {**exact_samples(1)[0], "messages": [{"role": "user", "content": "half \ud800 an emoji"}]}
    path = make_dataset(pytester.path, "P12_sur", [sample])
    assert b"\\ud800" in (path / "samples.jsonl").read_bytes()
    run(pytester, "--tokfidelity-dataset=P12").assert_outcomes(passed=4 + 1)


# -- 16. names, settings, bytes and times ------------------------------------------------------------
def test_non_ascii_dataset_name_can_open_its_gate(pytester):
    make_dataset(pytester.path, "P13_é", exact_samples(2))
    result = run(pytester, "--tokfidelity-dataset=P13")
    result.assert_outcomes(passed=4 + 2)
    assert record(pytester, "P13_é")["status"] == "open", result.stdout.str()


@pytest.mark.parametrize("value", ["0", "abc", "-2"])
def test_bad_judge_count_is_a_usage_error_naming_the_variable(pytester, monkeypatch, value):
    make_dataset(pytester.path, "P14_judges", exact_samples(1))
    monkeypatch.setenv("TOKFIDELITY_JUDGES", value)
    result = run(pytester, "--tokfidelity-dataset=P14")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*TOKFIDELITY_JUDGES: expected a whole number of judges from 1, got '{value}'*"])
    assert "--tokfidelity-dataset" not in result.stderr.str()


def test_utf16_looking_line_is_reported_at_its_first_byte(pytester):
    path = make_dataset(pytester.path, "P15_ff", exact_samples(1))
    with open(path / "samples.jsonl", "ab") as f:
        f.write(b'\xff\xfe{"id": "x"}\n')
    result = run(pytester, "--tokfidelity-dataset=P15")
    assert "samples.jsonl:2: not UTF-8: byte 0xff at column 1" in result.stdout.str()


def test_huge_integer_sample_id_is_named_as_too_large(pytester):
    path = make_dataset(pytester.path, "P16_big", exact_samples(1))
    with open(path / "samples.jsonl", "a") as f:
        f.write('{"id": 1000000000000000000000000000000, "output_ids": [1], "finish_reason": "stop"}\n')
    out = run(pytester, "--tokfidelity-dataset=P16").stdout.str()
    assert "samples.jsonl:2: field 'id': an integer too large for an id" in out


def test_open_hint_names_a_non_default_state_dir(tmp_path):
    dataset = write_dataset(tmp_path / "golden" / "P17_hint", manifest("P17_hint"), exact_samples(1))
    status = gate.check_gate("P17", golden_dir=dataset.parent, state_dir=tmp_path / "mystate")
    assert f"--tokfidelity-state-dir={tmp_path / 'mystate'}" in status.open_command


def test_whole_dataset_problems_are_listed_in_file_order_across_chunks(pytester):
    from test_plugin import CHAS, kimi_ids

    samples = exact_samples(70)
    for i in (60, 5, 40):  # judged in different chunks, possibly out of order
        samples[i] = {**samples[i], "output_ids": kimi_ids("x", "y", stop=CHAS)}
    make_dataset(pytester.path, "P18_order", samples)
    out = run(pytester, "--tokfidelity-dataset=P18").stdout.str()
    lines = [out.index(f"line {n} (s{n - 1})") for n in (6, 41, 61)]
    assert lines == sorted(lines)

"""Every test the suite reports has a node id that pytest takes back. A dataset is collected
as its own ``samples.jsonl`` (pytest_tokfidelity/collection.py): ``golden/DS/samples.jsonl::SAMPLE_ID`` runs
that sample, with or without ``--tokfidelity-dataset``; ``--lf``, ``-k``, ``--deselect`` and xdist select
with pytest's own machinery; a run of selected tests never opens the gate."""

from __future__ import annotations

import pytest

from test_plugin import CHAS, exact_samples, gate, kimi_ids, make_dataset, record, run, split_sample

WRONG_STOP = {"id": "chas", "output_ids": kimi_ids("Hm.", "ok", stop=CHAS), "finish_reason": "stop"}


def failed_ids(result) -> list[str]:
    return [line.split()[1] for line in result.stdout.lines if line.startswith("FAILED ")]


def ran_ids(result) -> list[str]:
    """Node ids of the tests a ``-rA`` run reports, with their outcome."""
    return sorted(line.split()[1] for line in result.stdout.lines if line.startswith(("PASSED ", "FAILED ", "ERROR ")))


def test_the_node_id_of_a_failure_pastes_back_and_runs_that_test_alone(pytester):
    make_dataset(pytester.path, "N1_mixed", exact_samples(4) + [split_sample(), WRONG_STOP])
    first = run(pytester, "--tokfidelity-dataset=N1")
    assert failed_ids(first) == ["golden/N1_mixed/samples.jsonl::split", "golden/N1_mixed/samples.jsonl::chas",
                                 "golden/N1_mixed/samples.jsonl::test_stop_tokens"]
    assert "`pytest golden/N1_mixed/samples.jsonl::split --snapshot-update`" in first.stdout.str()
    for nodeid in failed_ids(first):
        for extra in ((), ("--tokfidelity-dataset=N1",)):  # the path alone names the dataset
            again = run(pytester, "-rA", nodeid, *extra)
            again.assert_outcomes(failed=1)
            assert ran_ids(again) == [nodeid], again.stdout.str()
    one = run(pytester, "-rA", "golden/N1_mixed/samples.jsonl::s2")
    one.assert_outcomes(passed=1)
    assert ran_ids(one) == ["golden/N1_mixed/samples.jsonl::s2"]


def test_every_collected_id_selects_exactly_itself(pytester):
    make_dataset(pytester.path, "N2", exact_samples(2))
    ids = [line for line in run(pytester, "--tokfidelity-dataset=N2", "--collect-only", "-q").stdout.lines if "::" in line]
    assert ids == [f"golden/N2/samples.jsonl::{n}" for n in ("test_manifest", "s0", "s1", "test_vocabulary", "test_special_tokens",
                                                              "test_stop_tokens")]
    for nodeid in ids:
        got = [line for line in run(pytester, "--collect-only", "-q", nodeid).stdout.lines if "::" in line]
        assert got == [nodeid]


def test_one_selected_sample_never_opens_the_gate(pytester):
    make_dataset(pytester.path, "N3", exact_samples(1))  # one sample: selecting it selects every sample
    result = run(pytester, "golden/N3/samples.jsonl::s0")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*gate: record unchanged: partial run (node ids given*"])
    assert record(pytester, "N3") is None
    every = run(pytester, *(f"golden/N3/samples.jsonl::{n}" for n in ("test_manifest", "s0", "test_vocabulary", "test_special_tokens",
                                                                         "test_stop_tokens")))
    every.assert_outcomes(passed=5)  # every test named one by one: still a selection, never a gate
    assert record(pytester, "N3") is None
    whole = run(pytester, "golden/N3/samples.jsonl")  # the file itself is the whole dataset
    whole.assert_outcomes(passed=5)
    assert gate(pytester, "N3").open


def test_last_failed_runs_only_the_failed_samples(pytester):
    make_dataset(pytester.path, "N4", exact_samples(5) + [split_sample(), WRONG_STOP])
    run(pytester, "--tokfidelity-dataset=N4").assert_outcomes(passed=4 + 5 - 1, failed=3)
    again = run(pytester, "--tokfidelity-dataset=N4", "--lf", "-rA")
    assert ran_ids(again) == sorted(f"golden/N4/samples.jsonl::{n}" for n in ("split", "chas", "test_stop_tokens"))
    again.stdout.fnmatch_lines(["*gate: closed (record written: 3 test(s) failed)*"])  # as any run with a failure


def test_keyword_and_deselect_select_by_the_new_ids(pytester):
    make_dataset(pytester.path, "N5", exact_samples(4))
    picked = run(pytester, "--tokfidelity-dataset=N5", "-k", "s2 or test_manifest", "-rA")
    assert ran_ids(picked) == ["golden/N5/samples.jsonl::s2", "golden/N5/samples.jsonl::test_manifest"]
    by_dataset = run(pytester, "--tokfidelity-dataset=N5", "-k", "N5 and not test_fidelity", "-rA")  # the checks only
    assert ran_ids(by_dataset) == sorted(f"golden/N5/samples.jsonl::{n}" for n in ("test_manifest", "test_vocabulary",
                                                                                      "test_special_tokens", "test_stop_tokens"))
    dropped = run(pytester, "--tokfidelity-dataset=N5", "--deselect", "golden/N5/samples.jsonl::s1", "-rA")
    dropped.assert_outcomes(passed=4 + 3, deselected=1)
    assert "golden/N5/samples.jsonl::s1" not in ran_ids(dropped)
    assert record(pytester, "N5") is None


def test_gate_policy_id_pastes_back_and_checks_the_record(pytester):
    make_dataset(pytester.path, "N6", exact_samples(3) + [split_sample()])  # max_known_divergence_rate 0
    run(pytester, "--tokfidelity-dataset=N6", "--snapshot-update")
    full = run(pytester, "--tokfidelity-dataset=N6")
    assert failed_ids(full) == ["golden/N6/samples.jsonl::test_gate_policy"]
    again = run(pytester, "-rA", "golden/N6/samples.jsonl::test_gate_policy")
    again.assert_outcomes(failed=1)
    assert ran_ids(again) == ["golden/N6/samples.jsonl::test_gate_policy"]
    out = again.stdout.str()
    assert "known-divergence rate 1/4" in out and "`pytest golden/N6/samples.jsonl`" in out
    assert record(pytester, "N6")["status"] == "closed"


@pytest.mark.slow
def test_node_ids_keyword_and_deselect_under_xdist(pytester):
    make_dataset(pytester.path, "N7", exact_samples(6) + [split_sample()])
    common = ("-p", "no:randomly", "-n", "2", "-rA", f"--tokfidelity-state-dir={pytester.path / 'state'}")
    first = pytester.runpytest_subprocess(*common, "--tokfidelity-dataset=N7")
    assert failed_ids(first) == ["golden/N7/samples.jsonl::split"]
    pasted = pytester.runpytest_subprocess(*common, "golden/N7/samples.jsonl::split", "golden/N7/samples.jsonl::s3")
    pasted.assert_outcomes(passed=1, failed=1)
    assert ran_ids(pasted) == ["golden/N7/samples.jsonl::s3", "golden/N7/samples.jsonl::split"]
    assert record(pytester, "N7")["status"] == "closed"  # a failure closes it, as any run's does; none opens it
    picked = pytester.runpytest_subprocess(*common, "--tokfidelity-dataset=N7", "-k", "s1 or s4", "--deselect",
                                           "golden/N7/samples.jsonl::s4")
    picked.assert_outcomes(passed=1)  # (an xdist controller counts no deselected tests)
    assert ran_ids(picked) == ["golden/N7/samples.jsonl::s1"]
    last = pytester.runpytest_subprocess(*common, "--tokfidelity-dataset=N7", "--lf")
    assert ran_ids(last) == ["golden/N7/samples.jsonl::split"]
    assert not gate(pytester, "N7").open


def test_results_and_report_show_each_sample_node_id(pytester):
    make_dataset(pytester.path, "N8", exact_samples(2) + [split_sample()])
    result = run(pytester, "--tokfidelity-dataset=N8", f"--tokfidelity-report={pytester.path / 'report'}")
    assert failed_ids(result) == ["golden/N8/samples.jsonl::split"]
    from pipeline.reporting.results import read_results

    doc = read_results(pytester.path / "report" / "results.json")
    assert [s["test"] for s in doc["samples"]] == ["golden/N8/samples.jsonl::split"]
    assert "<code>pytest golden/N8/samples.jsonl::split</code>" in (pytester.path / "report" / "report.html").read_text()


def test_ids_pytest_cannot_select_are_named_by_line(pytester):
    samples = exact_samples(3)
    samples[0]["id"], samples[1]["id"], samples[2]["id"] = "a::b", "test_manifest", "c[1]"
    make_dataset(pytester.path, "N9", samples)
    ids = [line for line in run(pytester, "--tokfidelity-dataset=N9", "--collect-only", "-q").stdout.lines if "::" in line]
    assert ids[1:4] == ["golden/N9/samples.jsonl::line-1", "golden/N9/samples.jsonl::line-2", "golden/N9/samples.jsonl::c[1]"]
    for nodeid in ids[1:4]:
        got = [line for line in run(pytester, "--collect-only", "-q", nodeid).stdout.lines if "::" in line]
        assert got == [nodeid]


def test_the_advised_single_sample_snapshot_update_records_only_that_sample(pytester):
    path = make_dataset(pytester.path, "N10", exact_samples(2) + [split_sample("split1"), split_sample("split2")],
                        max_known_divergence_rate=0.5)
    first = run(pytester, "--tokfidelity-dataset=N10")
    assert "`pytest golden/N10/samples.jsonl::split1 --snapshot-update`" in first.stdout.str()
    run(pytester, "golden/N10/samples.jsonl::split1", "--snapshot-update").assert_outcomes(passed=1)
    names = [line for line in (path / "__snapshots__" / "fidelity.ambr").read_text().splitlines() if line.startswith("# name:")]
    assert names == ["# name: test_fidelity[N10/split1]"]
    run(pytester, "golden/N10/samples.jsonl::split2", "--snapshot-update").assert_outcomes(passed=1)
    full = run(pytester, "--tokfidelity-dataset=N10", "--ff")
    full.assert_outcomes(passed=4 + 4)
    assert gate(pytester, "N10").open


def test_failed_first_runs_the_failed_sample_first_and_every_test(pytester):
    make_dataset(pytester.path, "N11", exact_samples(3) + [split_sample()])
    run(pytester, "--tokfidelity-dataset=N11").assert_outcomes(passed=4 + 3, failed=1)
    again = run(pytester, "--tokfidelity-dataset=N11", "--ff", "-v")
    again.assert_outcomes(passed=4 + 3, failed=1)
    ran = [line.split()[0] for line in again.stdout.lines if line.startswith("golden/N11/samples.jsonl::")]
    assert ran[0] == "golden/N11/samples.jsonl::split" and len(ran) == 8

"""A run's exit code is its gates' verdict, and every failure says the one thing to do (issue 22)."""

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
    assert "FAILED tokfidelity_suite.py::test_gate_policy[V1_rate]" in out
    section = out.split("test_gate_policy[V1_rate] _")[1]
    assert "known-divergence rate 1/4 = 0.2500 exceeds the manifest's max_known_divergence_rate 0.0" in section
    assert "max_known_divergence_rate to at least 0.2500" in section and "manifest.json" in section
    assert not gate(pytester, "V1").open and record(pytester, "V1_rate")["status"] == "closed"


def test_inputs_changed_during_the_run_fail_the_gate_policy_test(pytester):
    path = make_dataset(pytester.path, "V2_edit", exact_samples(2))
    pytester.makepyfile(test_edit=f"def test_edit():\n    open({str(path / 'extra.txt')!r}, 'w').write('x')\n")
    result = run(pytester, "--tokfidelity-dataset=V2", "test_edit.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "FAILED tokfidelity_suite.py::test_gate_policy[V2_edit]" in result.stdout.str()
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

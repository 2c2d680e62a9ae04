"""pytest's failure summary, linear in the number of failures (pytest_tokfidelity/pytest_adapter.py's
``TeardownIndex``): the same text as pytest's own scan, each report looked up in an index built once.

pytest prints, after each failed test's traceback, what the test wrote during its teardown; it finds
that test's teardown report by scanning every passed setup and teardown report of the run. When every
sample of a dataset fails (the founding bug: a wrong stop id), that scan made 6,000 failing samples
spend about 2 minutes after the last test (bench/bench_plugin.py --modes lone-diverging)."""

from __future__ import annotations

import re
import sys

import pytest

from test_plugin import CHAS, exact_samples, kimi_ids, make_dataset, run

# Tests whose teardown writes output (pytest prints it in the failure summary, under each failed test,
# and under passed ones with -rA), failing and passing, on both sides of a test without teardown output.
TESTS = """
import pytest

@pytest.fixture
def noisy(request):
    yield
    print(f"teardown of {request.node.name}")

@pytest.mark.parametrize("n", range(12))
def test_fails(noisy, n):
    print(f"call {n}")
    assert n % 3 == 0

def test_quiet_failure():
    assert False

@pytest.mark.parametrize("n", range(4))
def test_passes(noisy, n):
    pass
"""

# Installs the index when INDEX is set, and counts the full scans of the setup and teardown reports.
PROBE = """
import os
import pytest
from pytest_tokfidelity.pytest_adapter import index_teardown_reports

SCANS = []

@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    config = session.config
    if os.environ.get("INDEX"):
        index_teardown_reports(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    own = reporter.getreports
    def getreports(name):
        if name == "":
            SCANS.append(name)
        return own(name)
    reporter.getreports = getreports

def pytest_unconfigure(config):
    with open(os.environ["SCANS_FILE"], "w") as f:
        f.write(str(len(SCANS)))
"""


def _summary(result) -> str:
    """The output without its timings."""
    return re.sub(r" in [0-9.]+s", "", result.stdout.str())


@pytest.mark.parametrize("extra", [(), ("-rA",), ("--tb=short", "-rA"), ("--show-capture=stdout",)])
def test_the_failure_summary_is_pytests_own_with_one_scan_of_the_reports(pytester, monkeypatch, extra):
    pytester.makepyfile(test_noisy=TESTS)
    pytester.makepyfile(summary_probe=PROBE)
    pytester.syspathinsert()
    scans = pytester.path / "scans"
    monkeypatch.setenv("SCANS_FILE", str(scans))
    args = ("-p", "summary_probe", "-p", "no:randomly", "-p", "no:cacheprovider", *extra)

    own = pytester.runpytest_subprocess(*args)
    own_scans = int(scans.read_text())
    monkeypatch.setenv("INDEX", "1")
    indexed = pytester.runpytest_subprocess(*args)
    indexed_scans = int(scans.read_text())

    own.assert_outcomes(failed=9, passed=8)
    indexed.assert_outcomes(failed=9, passed=8)
    assert "teardown of test_fails[1]" in _summary(own)  # the sections the lookup finds are printed
    assert _summary(indexed) == _summary(own)
    assert own_scans >= 9  # pytest's own: one scan per failed test
    assert indexed_scans == 1


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["lone", "xdist"])
def test_a_fidelity_run_uses_the_index_and_a_run_without_the_suite_does_not(pytester, monkeypatch, xdist):
    probe = pytester.path / "probe.txt"
    pytester.makepyfile(index_probe=(
        "def pytest_unconfigure(config):\n"
        "    if hasattr(config, 'workerinput'):\n"
        "        return\n"
        "    reporter = config.pluginmanager.get_plugin('terminalreporter')\n"
        f"    open({str(probe)!r}, 'w').write(type(reporter._get_teardown_reports).__name__)\n"
    ))
    pytester.syspathinsert()
    samples = exact_samples(3) + [
        {"id": f"chas{i}", "output_ids": kimi_ids("Think.", f"Done {i}.", stop=CHAS), "finish_reason": "stop"} for i in range(4)
    ]
    make_dataset(pytester.path, "F1_wrong_stop", samples)
    if xdist:  # the controller prints the summary: its reporter gets the index
        monkeypatch.setenv("PYTHONPATH", f"{pytester.path}:{':'.join(sys.path)}")
        result = pytester.runpytest_subprocess("-p", "no:randomly", f"--tokfidelity-state-dir={pytester.path / 'state'}",
                                               "-p", "index_probe", "--tokfidelity-dataset=F1", *xdist)
    else:
        result = run(pytester, "-p", "index_probe", "--tokfidelity-dataset=F1")
    result.assert_outcomes(passed=3 + 3, failed=4 + 1)  # the samples with a wrong stop id, and test_stop_tokens
    assert probe.read_text() == "TeardownIndex"
    out = result.stdout.str()
    assert out.count("chas") >= 4 and "163533" in out  # each failing sample's diagnosis is still printed

    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    pytester.runpytest("-p", "index_probe", "-p", "no:randomly", "test_plain.py").assert_outcomes(passed=1)
    assert probe.read_text() == "method"  # no dataset: pytest's own reporter, untouched


def test_the_index_answers_what_pytests_own_lookup_looks_for():
    """TeardownIndex mirrors this code of the checked pytest (an upgrade that changes it is looked at)."""
    import inspect

    from _pytest.terminal import TerminalReporter

    source = inspect.getsource(TerminalReporter._get_teardown_reports)
    assert 'self.getreports("")' in source
    assert 'report.when == "teardown" and report.id == node_id' in source
    assert "self._handle_teardown_sections(rep.id)" in inspect.getsource(TerminalReporter.summary_failures_combined)


def test_another_pytest_version_keeps_pytests_own_scan(pytester, monkeypatch):
    from pytest_tokfidelity import pytest_adapter

    class Reporter:
        def _get_teardown_reports(self, node_id):
            return []

    class PluginManager:
        def get_plugin(self, name):
            return reporter if name == "terminalreporter" else None

    class Config:
        pluginmanager = PluginManager()

    reporter = Reporter()
    own = reporter._get_teardown_reports
    monkeypatch.setattr(pytest_adapter, "internals_checked", lambda config=None: False)
    pytest_adapter.index_teardown_reports(Config())
    assert reporter._get_teardown_reports == own
    monkeypatch.setattr(pytest_adapter, "internals_checked", lambda config=None: True)
    pytest_adapter.index_teardown_reports(Config())
    assert type(reporter._get_teardown_reports) is pytest_adapter.TeardownIndex

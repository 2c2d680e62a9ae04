"""Passing samples (exact, or accepted by policy) reported without pytest's per-phase machinery
(pytest_tokfidelity/protocol.py): the same reports, outcomes, summary and gate record as pytest's own
protocol gives, taken only where it is exactly equivalent, and never when a plugin hooks a test's phases."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from test_plugin import CHAS, STOP, exact_samples, gate, kimi_ids, make_dataset, split_sample

# Reads how many samples the shortcut reported; implements none of the hooks it skips.
PROBE = """
import json, os
REPORTS = []
def pytest_runtest_logreport(report):
    REPORTS.append((report.nodeid, report.when, report.outcome, report.location, sorted(report.keywords), report.user_properties))
def pytest_sessionfinish(session):
    worker = session.config.workerinput["workerid"] if hasattr(session.config, "workerinput") else "main"
    if worker == "main":  # the controller sees every report
        with open(os.path.join(os.environ["PROBE_DIR"], "reports.json"), "w") as f:
            json.dump(REPORTS, f)
    plugin = session.config.pluginmanager.get_plugin("tokfidelity-session")
    with open(os.path.join(os.environ["PROBE_DIR"], f"reported-{worker}"), "w") as f:
        f.write(str(plugin.plain_passes.reported))
"""

# A plugin that hooks a test's call phase: the shortcut must step aside, so it sees every sample.
CALL_HOOK = """
import os
def pytest_runtest_call(item):
    if type(item).__name__ == "SampleItem":
        with open(os.path.join(os.environ["PROBE_DIR"], "called"), "a") as f:
            f.write(item.name + "\\n")
"""


def mixed_dataset(root):
    """s0..s5 exact, a harmless re-split (accepted by policy), a wrong stop id (a new divergence),
    s6..s8 exact, then a line that is not JSON (bad input)."""
    samples = exact_samples(9)
    wrong_stop = {"id": "chas", "output_ids": kimi_ids("Think.", "Done.", stop=CHAS), "finish_reason": "stop"}
    data = make_dataset(root, "P1_mixed", samples[:6] + [split_sample(), wrong_stop] + samples[6:],
                        accept={"non-canonical-split": 0.5})
    with open(data / "samples.jsonl", "a") as f:
        f.write('{"id": "broken", "output_ids": [1, 2\n')
    assert STOP != CHAS


def suite_run(pytester, monkeypatch, tag: str, *extra: str):
    probe = pytester.path / f"probe-{tag}"
    probe.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(probe))
    state, xml = pytester.path / f"state-{tag}", pytester.path / f"junit-{tag}.xml"
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "tf_probe", f"--tokfidelity-state-dir={state}",
        f"--junitxml={xml}", "-rA", "--tokfidelity-dataset=P1", *extra,
    )
    cases = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        cases[case.get("name")] = outcome
    reported = sum(int(p.read_text()) for p in probe.glob("reported-*"))
    reports = json.loads((probe / "reports.json").read_text())
    cases["reports"] = reports if "-n" not in extra else sorted(reports)
    summary = [line for line in result.outlines if line.startswith("P1_mixed:") or line.startswith("  rates:")]
    return result, cases, reported, summary, json.loads((state / "gates" / "P1_mixed.json").read_text()), probe


@pytest.mark.parametrize("mode", [(), ("-n", "2")], ids=["lone", "xdist"])
def test_the_shortcut_reports_exactly_what_pytests_protocol_reports(pytester, monkeypatch, mode):
    mixed_dataset(pytester.path)
    pytester.syspathinsert()
    pytester.makepyfile(tf_probe=PROBE, tf_call_hook=CALL_HOOK)
    fast, fast_cases, fast_reported, fast_summary, fast_record, _ = suite_run(pytester, monkeypatch, "fast", *mode)
    slow, slow_cases, slow_reported, slow_summary, slow_record, probe = suite_run(pytester, monkeypatch, "slow", "-p", "tf_call_hook", *mode)

    # the same outcome for every test, in the terminal and in the junit XML
    assert fast.parseoutcomes() == slow.parseoutcomes() == {"passed": 4 + 8 + 1, "failed": 2 + 1}
    # the same reports, phase by phase, with the same location, keywords and user properties
    assert fast_cases == slow_cases and len(fast_cases) == 4 + 12 + 1
    assert len(fast_cases["reports"]) == 3 * (4 + 12)
    assert fast_cases["chas"] == "failure" and fast_cases["s3"] == "passed"
    fast.stdout.fnmatch_lines(["*P1_mixed/chas (line 8): the rebuilt ids differ*"])
    # the same counts in the summary and in the gate record (closed, for the failures)
    assert len(fast_summary) == 2
    assert [s.split(" tokens in ")[0] for s in fast_summary] == [s.split(" tokens in ")[0] for s in slow_summary]
    assert fast_record["counts"] == slow_record["counts"] and fast_record["status"] == slow_record["status"] == "closed"
    # the shortcut reported passing samples only (exact, or accepted by policy), and stepped aside for the
    # plugin that hooks the call phase
    assert slow_reported == 0
    assert len((probe / "called").read_text().split()) == 12  # every sample reached that plugin's hook
    if not mode:  # a lone run: s1..s5, the re-split and s6..s8 (s0 sets the dataset file up; the others fail)
        assert fast_reported == 9
    else:  # each worker's first sample, and samples before a test that is not one, go through pytest's protocol
        assert 0 < fast_reported <= 9


def test_stop_at_the_first_failure_still_stops_there(pytester, monkeypatch):
    """-x: the failing sample goes through pytest's protocol, which stops the session after it."""
    mixed_dataset(pytester.path)
    pytester.syspathinsert()
    pytester.makepyfile(tf_probe=PROBE)
    result, cases, reported, *_ = suite_run(pytester, monkeypatch, "x", "-x")
    assert cases["chas"] == "failure"
    assert "s6" not in cases
    assert reported == 6  # s1..s5 and the re-split (accepted by policy)


def test_a_marked_sample_goes_through_pytests_protocol(pytester, monkeypatch):
    """A mark added to a sample (here skip, by a plugin) is honoured: the shortcut leaves it to pytest."""
    make_dataset(pytester.path, "P1_exact", exact_samples(5))
    pytester.syspathinsert()
    pytester.makepyfile(tf_probe=PROBE, tf_marks="""
import pytest
def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.endswith("samples.jsonl::s2"):
            item.add_marker(pytest.mark.skip(reason="marked by a plugin"))
""")
    probe = pytester.path / "probe"
    probe.mkdir()
    monkeypatch.setenv("PROBE_DIR", str(probe))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "tf_probe", "-p", "tf_marks",
                                           f"--tokfidelity-state-dir={pytester.path / 'state'}", "--tokfidelity-dataset=P1")
    result.assert_outcomes(passed=4 + 4, skipped=1)
    assert int((probe / "reported-main").read_text()) == 2  # s1 and s3 (s0 sets up; s2 is marked; s4 is last)
    assert not gate(pytester, "P1").open  # a skipped sample was not verified


LOCATION_PROBE = """
import json, os, pytest
@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    samples = [i for i in session.items if type(i).__name__ == "SampleItem"]
    cached = [list(i.location) for i in samples]
    own = [list(pytest.Item.location.func(i)) for i in samples]  # what pytest itself works out, afresh
    with open(os.path.join(os.environ["PROBE_DIR"], "locations.json"), "w") as f:
        json.dump({"cached": cached, "own": own}, f)
"""


def test_every_sample_has_the_location_pytest_would_give_it(pytester, monkeypatch):
    """Sample items share the path part of their location (collection.sample_items): the same
    (path, line, name) pytest's Item.location computes for each, from a rootdir above the suite too."""
    mixed_dataset(pytester.path)
    pytester.syspathinsert()
    pytester.makepyfile(tf_location=LOCATION_PROBE)
    monkeypatch.setenv("PROBE_DIR", str(pytester.path))
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)  # invoked from below the rootdir: paths are still relative to the rootdir
    result = pytester.runpytest("-p", "tf_location", f"--rootdir={pytester.path}", f"--tokfidelity-golden-dir={pytester.path / 'golden'}",
                                f"--tokfidelity-state-dir={pytester.path / 'state'}", "--tokfidelity-dataset=P1", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    found = json.loads((pytester.path / "locations.json").read_text())
    assert len(found["cached"]) == 12 and found["cached"] == found["own"]
    assert {tuple(loc[:2]) for loc in found["own"]} == {("golden/P1_mixed/samples.jsonl", 0)}

"""A sample test that passes (an exact match, or a divergence the manifest's policy accepts), reported
without pytest's per-phase machinery.

pytest runs a test as three phases (setup, call, teardown), each through a ``CallInfo``, the
``pytest_runtest_makereport`` hook and the hook wrappers of logging, capture, skipping and
unraisable-exception handling: about 0.3 ms of the controlling process per test
(bench/bench_plugin.py), on a budget of about 1 ms per sample. A sample test has none of what those
wrappers serve (no fixtures, no marks, no output, no logs: its judging runs ahead, in other
processes), and its verdict is known before it runs. So ``pytest_runtest_protocol``, the hook
pytest provides for running a test another way, reports such a sample here: the log-start and
log-finish hooks and its three passed ``TestReport``s, through ``pytest_runtest_logreport`` as
pytest's own would be (the terminal, xdist, junitxml, --lf and the gate all see them). About 0.15 ms
of the 0.3 ms is saved.

Everything else goes through pytest's own protocol, with the verdict already fetched: a
divergence the policy does not accept, bad input or anything that raises (so failures, tracebacks
and --pdb are pytest's own), an item carrying marks, ``--setup-only``/``--setup-show``/``--setup-plan``, and every sample
whose setup or teardown moves pytest's setup state (the first of a run of samples, and the last,
whose next test is not a sample of the suite). Between those two, a sample's setup and teardown
only push and pop the item itself, which has no fixtures and no finalizers, so skipping them leaves
pytest's setup state exactly as it would be.

The phases it skips are hooks other plugins may implement. So the shortcut is taken only while every
implementation of ``pytest_runtest_setup``, ``_call``, ``_teardown`` and ``_makereport`` for the
suite's items is one of pytest's own, listed in ``INERT`` with what it would do for a sample: a
conftest or plugin that hooks a test's phases (pytest-timeout's call hook, a user's setup hook)
turns it off, and every sample runs through pytest's protocol with that hook.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pipeline.core.fidelity import EXACT, POLICY, Verdict

from .collection import SampleItem
from .pytest_adapter import internals_checked, passed_report, phase_hooks_inert

__all__ = ["PlainPasses"]

_PHASES = ("setup", "call", "teardown")
_SKIPPED_HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown", "pytest_runtest_makereport")

# pytest's own implementations of the skipped hooks (by plugin name), and what each does for a sample:
INERT = frozenset({
    "runner",  # pushes and pops the item in the setup state (nothing to set up), runs runtest, makes the reports;
    # it also names the phase in PYTEST_CURRENT_TEST and unsets it after teardown: during a shortcut it stays unset
    "skipping",  # evaluates skip and xfail marks (a sample with marks never takes the shortcut)
    "capturemanager",  # captures output into the report's sections (a sample writes none)
    "logging-plugin",  # captures log records into the report's sections (a sample logs none)
    "threadexception",  # warns of exceptions in threads (none are started; pytest also checks at session end)
    "unraisableexception",  # warns of unraisable exceptions (pytest also checks at session end)
    "unittest",  # makereport for unittest.TestCase items only
    "tmpdir",  # notes the outcome for tmp_path's retention policy (a sample has no tmp_path)
})


class PlainPasses:
    """Reports passing samples directly; says (None) when pytest's protocol must run a test."""

    def __init__(self, session):
        self.session = session
        config = session.config
        self.enabled = internals_checked(config) and not (
            config.getoption("setuponly", False) or config.getoption("setupshow", False)
            or config.getoption("setupplan", False)
        )
        self._ready_parent: Any = None  # the dataset file (collection.DatasetFile) that pytest's setup state holds set up
        self._hooks: dict[Any, Any] = {}  # dataset file -> its items' hook caller, or None: shortcut off
        self.reported = 0  # samples reported here (tests read it)

    def run(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        """True when ``item`` was reported here; None: pytest's protocol runs it (its verdict fetched)."""
        if type(item) is not SampleItem:
            self._ready_parent = None
            return None
        parent = item.parent
        plain = (
            self.enabled and self._ready_parent is parent and type(nextitem) is SampleItem and nextitem.parent is parent
            and not item.own_markers
        )
        # After this test's teardown, pytest's setup state holds the dataset file set up only when
        # the next test is a sample of it (then only this item itself was popped).
        self._ready_parent = parent if type(nextitem) is SampleItem and nextitem.parent is parent else None
        if not plain or (hook := self._hook(item)) is None:
            return None
        start, began = time.time(), time.perf_counter()
        verdict = self.session.checks.fetch(item)
        if not (type(verdict) is Verdict and (verdict.kind == EXACT or verdict.kind == POLICY)
                and self.session.checks.count_passed(item, verdict)):
            item.verdict = verdict  # pytest's protocol runs the test, on this verdict
            return None
        duration = time.perf_counter() - began
        location = item.location
        hook.pytest_runtest_logstart(nodeid=item.nodeid, location=location)
        keywords = dict.fromkeys(item.keywords, 1)
        for when in _PHASES:
            report = passed_report(
                item, location, keywords, when, duration if when == "call" else 0.0, start, start + duration if when == "call" else start,
            )
            hook.pytest_runtest_logreport(report=report)
        hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=location)
        self.reported += 1
        return True

    def _hook(self, item: pytest.Item):
        """The hook caller of the suite's items (item.ihook, looked up once per dataset file), or
        None when a plugin or conftest outside ``INERT`` implements a phase this would skip."""
        parent = item.parent
        if parent not in self._hooks:
            hook = item.ihook
            self._hooks[parent] = hook if phase_hooks_inert(hook, _SKIPPED_HOOKS, INERT) and not parent.own_markers else None
        return self._hooks[parent]

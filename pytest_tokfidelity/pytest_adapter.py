"""Every reach into pytest's internals, in one place: what the sample fast path (protocol.py,
collection.py) relies on beyond pytest's public API.

- the plugin names of pytest's own implementations of a test's phase hooks (``HookImpl.plugin_name``),
  by which protocol.py knows that skipping those phases for a passing sample changes nothing;
- ``TestReport``'s constructor, called with keywords as pytest's ``TestReport.from_item_and_call`` does;
- ``Item.location``, a cached property that collection.py fills for each sample as pytest would;
- ``TerminalReporter._get_teardown_reports``, replaced for the run by an index that gives the same
  answers (``index_teardown_reports``): pytest's own scan makes a run where most samples fail quadratic.

Checked against the pytest releases in ``CHECKED``. Outside them ``self_test`` decides
(``pipeline.core.checked_versions``): passed, this fast path is used; failed, every test takes
pytest's own path (slower, never different). The run says which in one line.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from pipeline.core.checked_versions import CheckedRange, usable

__all__ = [
    "CHECKED", "self_test", "internals_checked", "phase_hooks_inert", "hook_implementations", "passed_report", "failed_report",
    "share_location",
    "index_teardown_reports", "TeardownIndex",
]

CHECKED = CheckedRange("pytest", "pytest_tokfidelity/pytest_adapter.py", "9.2.0", "9.2.0")


def internals_checked(config: pytest.Config | None = None) -> bool:
    """May these internals be used with the running pytest? (Decided once per process.)"""
    return usable(CHECKED, self_test)


def self_test() -> None:
    """Raise unless every internal this module uses is there, in the shape it uses."""
    import functools
    import inspect

    from _pytest.nodes import Item
    from _pytest.terminal import TerminalReporter
    from pluggy import HookImpl

    wanted = {"nodeid", "location", "keywords", "outcome", "longrepr", "when", "sections", "duration", "start", "stop",
              "user_properties"}
    missing = wanted - set(inspect.signature(pytest.TestReport.__init__).parameters)
    if missing:
        raise AssertionError(f"TestReport() takes no {sorted(missing)}")
    if not isinstance(inspect.getattr_static(Item, "location"), functools.cached_property):
        raise AssertionError("Item.location is no longer a cached property")
    if not callable(getattr(TerminalReporter, "_get_teardown_reports", None)):
        raise AssertionError("TerminalReporter has no _get_teardown_reports")
    if "plugin_name" not in inspect.getsource(HookImpl):
        raise AssertionError("pluggy's HookImpl keeps no plugin_name")


def phase_hooks_inert(hook: Any, names: tuple[str, ...], inert: frozenset[str]) -> bool:
    """Is every implementation of the hooks ``names`` one of the plugins named in ``inert``?"""
    return all(impl.plugin_name in inert for name in names for impl in getattr(hook, name).get_hookimpls())


def hook_implementations(caller: Any) -> list[tuple[Any, str]]:
    """(function, the file or plugin name it comes from) of each implementation of one hook (pluggy's HookCaller)."""
    return [(impl.function, getattr(impl.plugin, "__file__", None) or impl.plugin_name) for impl in caller.get_hookimpls()]


def passed_report(item: pytest.Item, location, keywords, when: str, duration: float, start: float, stop: float) -> pytest.TestReport:
    """A passed report of one phase of ``item``, as pytest's runner makes it."""
    return pytest.TestReport(
        nodeid=item.nodeid, location=location, keywords=keywords, outcome="passed", longrepr=None, when=when,
        sections=(), duration=duration, start=start, stop=stop, user_properties=item.user_properties,
    )


def failed_report(nodeid: str, location, keywords, longrepr: str, user_properties) -> pytest.TestReport:
    """A failed call report of a test the controlling process decides itself (report.py's gate test)."""
    now = time.time()
    return pytest.TestReport(
        nodeid=nodeid, location=location, keywords=keywords, outcome="failed", longrepr=longrepr, when="call",
        sections=(), duration=0.0, start=now, stop=now, user_properties=user_properties,
    )


def share_location(items: list) -> None:
    """Give every item the first one's path and line (pytest's cached ``Item.location``), as pytest
    would compute it for items that share a file and report line 0."""
    where, line, _ = items[0].location
    for item in items[1:]:
        item.location = (where, line, item.name)


def index_teardown_reports(config: pytest.Config) -> None:
    """Make pytest's failure summary linear in the number of failures, for this run.

    After each failed test's traceback the summary prints what that test wrote during teardown, and
    ``TerminalReporter._get_teardown_reports`` finds its teardown report by scanning every passed setup
    and teardown report of the run: quadratic. When every sample fails (a wrong stop id fails them all),
    6,000 samples spent about 2 minutes in it after the last test, and 40,000 would spend hours
    (``bench/bench_plugin.py --modes lone-diverging``); ``-rA`` runs the same lookup for every passed test.
    ``TeardownIndex`` answers the same from an index built once. The checked pytest only; another keeps
    its own scan."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if internals_checked() and reporter is not None and hasattr(reporter, "_get_teardown_reports"):
        reporter._get_teardown_reports = TeardownIndex(reporter)


class TeardownIndex:
    """``TerminalReporter._get_teardown_reports(node_id)``: the teardown reports among ``getreports("")``
    whose ``id`` is ``node_id``, in order, from an index of them by id (made again when reports were added)."""

    def __init__(self, reporter: Any):
        self.reporter = reporter
        self.indexed = -1  # how many setup and teardown reports the index was made from
        self.by_id: dict[Any, list] = {}

    def __call__(self, node_id: Any) -> list:
        count = len(self.reporter.stats.get("", ()))
        if count != self.indexed:
            by_id: dict[Any, list] = {}
            for report in self.reporter.getreports(""):
                if report.when == "teardown":
                    by_id.setdefault(report.id, []).append(report)
            self.by_id, self.indexed = by_id, count
        return list(self.by_id.get(node_id, ()))

"""Every reach into pytest-xdist's internals, in one place: which items this worker runs next.

An xdist worker's loop (``xdist.remote.WorkerInteractor``) keeps the indices of the items it was
sent in ``torun`` (a ``TestQueue`` whose ``lock()`` yields a deque) and the one it is about to run
in ``nextitem_index``. Judging ahead needs that queue; nothing public exposes it. Checked against
the pytest-xdist releases in ``CHECKED``; outside them ``self_test`` decides, and where it fails each
sample is judged when its test runs (slower, same verdicts). If the internals are not there at run
time after all, the worker warns once, visibly, and does the same.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pipeline.core.checked_versions import CheckedRange, usable

__all__ = ["CHECKED", "self_test", "XdistQueue", "XdistChanged", "worker_queue"]

CHECKED = CheckedRange("pytest-xdist", "pytest_tokfidelity/xdist_adapter.py", "3.8.0", "3.8.0")


def self_test() -> None:
    """Raise unless xdist's worker loop still keeps ``torun`` (with ``lock()``) and ``nextitem_index``."""
    import inspect

    from xdist import remote

    source = inspect.getsource(remote.WorkerInteractor)
    for name in ("self.torun", "nextitem_index", "def lock"):
        if name not in source and name not in inspect.getsource(remote):
            raise AssertionError(f"xdist.remote no longer has {name}")


class XdistChanged(RuntimeError):
    """pytest-xdist's worker internals are not what this adapter was written against."""


class XdistQueue:
    """The item indices an xdist worker will run, next first."""

    def __init__(self, interactor: Any):
        self._interactor = interactor
        self._broken = False

    def upcoming(self) -> list[int]:
        """Indices of the item about to run and of those queued after it ([] once broken)."""
        if self._broken:
            return []
        try:
            return self.read(self._interactor)
        except XdistChanged as e:
            self._broken = True
            warnings.warn(f"tokfidelity: {e}; samples are judged one by one when their test runs", stacklevel=2)
            return []

    @staticmethod
    def read(interactor: Any) -> list[int]:
        try:
            with interactor.torun.lock() as queue:
                pending = list(queue)
            nxt = interactor.nextitem_index
        except AttributeError as e:
            raise XdistChanged(f"pytest-xdist {_version()} changed its worker queue ({e}); checked with {CHECKED.span()}") from None
        return [i for i in ([nxt] if isinstance(nxt, int) else []) + pending if isinstance(i, int)]


def worker_queue(config: pytest.Config) -> XdistQueue | None:
    """The queue of this xdist worker (None when the worker loop is not found, with a warning)."""
    if not usable(CHECKED, self_test):
        return None  # the run's note says why
    interactor = next((p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None)
    if interactor is None:
        warnings.warn(f"tokfidelity: pytest-xdist {_version()} has no WorkerInteractor plugin (checked with {CHECKED.span()})", stacklevel=2)
        return None
    return XdistQueue(interactor)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-xdist")
    except PackageNotFoundError:
        return "(not installed)"

"""The one module that reads pytest-xdist's internals (pytest_tokfidelity/xdist_adapter.py): its
self-test and its reads, against the installed pytest-xdist."""

from __future__ import annotations

import inspect
from importlib.metadata import version

import pytest

from pytest_tokfidelity.xdist_adapter import CHECKED, XdistChanged, XdistQueue, self_test


def test_the_self_test_holds_on_the_installed_pytest_xdist():
    self_test()
    assert version("pytest-xdist")


def test_worker_loop_still_keeps_its_queue_where_the_adapter_reads_it():
    from xdist.remote import TestQueue, WorkerInteractor

    source = inspect.getsource(WorkerInteractor)
    assert "self.torun = TestQueue(" in source and "self.nextitem_index" in source
    assert callable(TestQueue.lock)


def test_the_adapter_reads_a_real_test_queue_next_item_first():
    from xdist.remote import TestQueue

    class Interactor:  # the two attributes the adapter reads, with xdist's own queue type
        def __init__(self):
            import execnet

            self.torun = TestQueue(execnet.gateway_base.get_execmodel("thread"))
            self.nextitem_index = 3

    interactor = Interactor()
    for i in (4, 7, 9):
        interactor.torun.put(i)
    assert XdistQueue.read(interactor) == [3, 4, 7, 9]


def test_a_changed_worker_loop_is_said_not_guessed():
    with pytest.raises(XdistChanged, match="checked with " + CHECKED.span().replace(".", r"\.")):
        XdistQueue.read(object())
    queue = XdistQueue(object())
    with pytest.warns(UserWarning, match="judged one by one"):
        assert queue.upcoming() == []
    assert queue.upcoming() == []  # once: no warning storm

"""The prefetching judge: samples judged in chunks, ahead of the test that asks for them.

``Prefetcher.verdict(ds, position)`` is all a sample test calls. Behind it: a pool (judge_pools.py)
and an order that says which of a dataset's samples this process runs next, so that they are
judged while pytest runs the tests before them. Two orders: a lone pytest runs its selected items
in collection order (``LoneOrder``); an xdist worker runs what the controller queued for it
(``XdistOrder``, through xdist_adapter.py).
"""

from __future__ import annotations

import pickle
import traceback
import warnings
from typing import Any, Protocol

from .judge_pools import ForkedJudges, JudgeDied, ThreadJudges, can_fork

__all__ = ["Prefetcher", "LoneOrder", "XdistOrder", "Order", "CHUNK", "AHEAD"]

CHUNK = 32  # samples judged by one background task
AHEAD = 512  # samples judged ahead of the running test, at most: memory stays flat
WARM = 2048  # samples a lone pytest judges while it collects (40,000 items take pytest about 2 s)


class Order(Protocol):
    def upcoming(self, ds: Any, position: int, limit: int) -> list[int]:
        """Positions of ds's samples this process runs after ``position``, in order (at most ``limit``)."""


class LoneOrder:
    """A lone process runs its selected items in order."""

    def upcoming(self, ds, position: int, limit: int) -> list[int]:
        rank = ds.rank.get(position, 0)
        return ds.selected[rank + 1 : rank + 1 + limit]


class XdistOrder:
    """An xdist worker runs the items its controller queued for it (xdist_adapter.XdistQueue)."""

    def __init__(self, queue, case_of_item: list[tuple[int, int] | None]):
        self.queue = queue
        self.case_of_item = case_of_item

    def upcoming(self, ds, position: int, limit: int) -> list[int]:
        out = []
        cases = self.case_of_item
        for i in self.queue.upcoming() if self.queue is not None else ():
            case = cases[i] if i < len(cases) else None
            if case is not None and case[0] == ds.position:
                out.append(case[1])
                if len(out) >= limit:
                    break
        return out


class Prefetcher:
    """Verdicts for one process's datasets, judged ahead in a pool started on first use."""

    def __init__(self, datasets: list, order: Order, judges: int, may_fork: bool):
        self.datasets = datasets
        self.order = order
        self.judges = judges
        self.may_fork = may_fork
        self.pool = None
        self.restarts = 0

    def _start(self) -> None:
        datasets = self.datasets
        if self.may_fork and can_fork():
            self.pool = ForkedJudges(self.judges, lambda d, positions: _portable_judged(datasets[d].judge_positions(positions)))
        else:
            self.pool = ThreadJudges(self.judges, lambda d, positions: datasets[d].judge_positions(positions))

    def _schedule(self, ds, todo: list[int]) -> None:
        ds.index, ds.fd  # opened here, once, before the judges read them
        if self.pool is None:
            self._start()
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            pending = self.pool.submit(ds.position, chunk)
            for p in chunk:
                ds.scheduled[p] = pending

    def warm_up(self, cases: list[tuple[int, int]]) -> None:
        """Start judging the first WARM sample cases (collection order, which a lone run keeps)
        while pytest builds its items: the judges would otherwise wait for the first test."""
        todo: dict[int, list[int]] = {}
        for d, position in cases[:WARM]:
            todo.setdefault(d, []).append(position)
        for d, positions in todo.items():
            ds = self.datasets[d]
            if ds.setup()[0] is not None:  # loaded before the fork, so that the judges share it
                self._schedule(ds, positions)

    def forget_unselected(self) -> None:
        """Drop warmed-up samples that collection then deselected: they would hold the window shut."""
        for ds in self.datasets:
            for p in [p for p in ds.scheduled if p not in ds.rank]:
                del ds.scheduled[p]

    def verdict(self, ds, position: int):
        """The verdict on one sample (a Verdict, or the exception judging it raised)."""
        try:
            return self._verdict(ds, position)
        except JudgeDied as e:  # killed, out of memory: judge on threads from here, once
            self._restart(e)
            return self._verdict(ds, position)

    def _verdict(self, ds, position: int):
        scheduled = ds.scheduled
        if position not in scheduled:
            self._schedule(ds, [position])
        pending = scheduled.pop(position)
        if len(scheduled) < AHEAD // 2:  # keep the judges ahead of the tests
            more = [p for p in self.order.upcoming(ds, position, AHEAD) if p not in scheduled and p != position]
            if more:
                self._schedule(ds, more)
        judged = pending.result()
        ds.absorb(judged)
        return judged.verdicts[position]

    def _restart(self, why: JudgeDied) -> None:
        """Replace dead judging processes by judging threads, once; a second loss stops the run
        with one error instead of failing every remaining sample."""
        import pytest

        self.restarts += 1
        if self.restarts > 1:
            pytest.exit(f"tokfidelity: judging processes died twice ({why}); the run stops (killed, out of memory?)", returncode=3)
        warnings.warn(f"tokfidelity: a judging process died ({why}); the remaining samples are judged on threads", stacklevel=3)
        self.close()
        datasets = self.datasets
        self.pool = ThreadJudges(self.judges, lambda d, positions: datasets[d].judge_positions(positions))
        for ds in datasets:
            ds.scheduled.clear()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def _portable_judged(judged):
    """A judged chunk whose exceptions survive the trip back from a judging process."""
    for p, verdict in judged.verdicts.items():
        if isinstance(verdict, BaseException):
            judged.verdicts[p] = _portable(verdict)
    return judged


def _portable(error: BaseException) -> BaseException:
    """An exception that pickles, its traceback as a note."""
    where = "".join(traceback.format_exception(error))
    try:
        error = pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - an exception that does not pickle: keep its type's name and message
        error = RuntimeError(f"{type(error).__qualname__}: {error}")
    error.add_note(f"raised in a judging process:\n{where}")
    return error

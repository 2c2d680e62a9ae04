"""The prefetching judge: samples judged in chunks, ahead of the test that asks for them.

``Prefetcher.verdict(ds, position)`` is all a sample test calls. Behind it: a pool (judge_pools.py)
and an order that says which of a dataset's samples this process runs next, so that they are
judged while pytest runs the tests before them. Two orders: a lone pytest runs its selected items
in collection order (``LoneOrder``); an xdist worker runs what the controller queued for it
(``XdistOrder``, through xdist_adapter.py).

A judging process that dies is replaced by judging threads, and its samples judged again there. One
that is stuck (stopped, or on one sample past ``--tokfidelity-sample-timeout``: judge_watch.py) is
killed and replaced the same way, but the samples it held, and the one pytest was waiting for,
fail, naming it and the deadline: the run is not green, so the gate does not open.
"""

from __future__ import annotations

import pickle
import traceback
import warnings
from concurrent.futures import Future
from typing import Any, Protocol

from .dataset import Judged
from .judge_pools import ForkedJudges, JudgeDied, JudgeStuck, ThreadJudges, can_fork
from .judge_watch import DEFAULT_DEADLINE

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
            if case is not None and case[0] == ds.position and (not out or out[-1] != case[1]):
                out.append(case[1])
                if len(out) >= limit:
                    break
        return out


class Prefetcher:
    """Verdicts for one process's datasets, judged ahead in a pool started on first use."""

    def __init__(self, datasets: list, order: Order, judges: int, may_fork: bool, deadline: float | None = DEFAULT_DEADLINE):
        self.datasets = datasets
        self.order = order
        self.judges = judges
        self.may_fork = may_fork
        self.deadline = deadline  # seconds a judging process may spend on one sample
        self.pool = None
        self.restarts = 0
        self.expected: int | None = None  # samples a warm-up knows are all there is to judge
        self.chunk = CHUNK  # samples a request holds; a small run's are shared out over the judges

    def _pool_size(self) -> int:
        """Judges to start: ``judges``, or where the samples to judge are known (all of a small run's, at warm-up;
        the selected ones, in a pool started by the first test, as with node ids) no more than their chunks
        need: one for a pasted node id or a 20-sample dataset, not a fork per core that finds nothing to judge."""
        if self.expected is not None:
            samples = self.expected
        elif any(not d.selected for d in self.datasets):
            return self.judges
        else:
            samples = sum(len(d.selected) for d in self.datasets)
        return max(1, min(self.judges, -(-samples // self.chunk)))

    def _start(self) -> None:
        datasets = self.datasets
        if self.may_fork and can_fork():
            self.pool = ForkedJudges(
                self._pool_size(), lambda d, positions, began: _portable_judged(datasets[d].judge_positions(positions, began)),
                self.deadline
            )
        else:
            self._threads()

    def _threads(self) -> None:
        datasets = self.datasets
        self.pool = ThreadJudges(self.judges, lambda d, positions, began: datasets[d].judge_positions(positions, began))

    def _schedule(self, ds, todo: list[int]) -> None:
        ds.index, ds.fd  # opened here, once, before the judges read them
        if self.pool is None:
            for d in self.datasets:
                d.before_fork()  # what every judge needs, loaded once (dataset.py)
            self._start()
        for start in range(0, len(todo), self.chunk):
            chunk = todo[start : start + self.chunk]
            pending = self.pool.submit(ds.position, chunk)
            for p in chunk:
                ds.scheduled[p] = pending

    def warm_up(self, cases: list[tuple[int, int, int]]) -> None:
        """Start judging the first WARM sample cases (collection order, which a lone run keeps)
        while pytest builds its items: the judges would otherwise wait for the first test."""
        todo: dict[int, list[int]] = {}
        for d, position, _ in cases[:WARM]:
            positions = todo.setdefault(d, [])
            if not positions or positions[-1] != position:  # a sample's views follow each other: judged once
                positions.append(position)
        if len(cases) <= WARM:
            self.expected = sum(map(len, todo.values()))
            self.chunk = max(1, min(CHUNK, -(-self.expected // self.judges)))  # 20 samples, 2 judges: 10 each
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
            self._restart(f"a judging process died ({e})")
        except JudgeStuck as e:  # stopped, or past the deadline: the same, and what it held fails
            self._restart(f"a judging process was stuck ({e}) and was killed")
            self._fail(e)
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

    def _restart(self, what: str) -> None:
        """Replace dead or stuck judging processes by judging threads, once; a second loss stops the
        run with one error instead of failing every remaining sample."""
        import pytest

        self.restarts += 1
        if self.restarts > 1:
            pytest.exit(f"tokfidelity: judging processes lost twice ({what}); the run stops (killed, out of memory?)", returncode=3)
        warnings.warn(f"tokfidelity: {what}; the remaining samples are judged on threads", stacklevel=4)
        self.close()
        self._threads()
        for ds in self.datasets:
            ds.scheduled.clear()

    def _fail(self, stuck: JudgeStuck) -> None:
        """The samples a stuck judge held, and the one waited for, fail: they were not judged, and
        a run that needed its judges killed must not open the gate."""
        limit = f"at most {self.deadline:g} s" if self.deadline else "any time"
        from .collection import sample_item_name

        on = [f"{self.datasets[d].test_file}::{sample_item_name(self.datasets[d].index, p)}" for d, p in stuck.judging]
        alone = f" (`pytest {' '.join(on)}` runs it alone)" if on else ""
        judging = f" (judging {', '.join(on)})" if on else ""
        error = JudgeStuck(
            f"not verified: {stuck}{judging}. It was killed (judging processes are checked "
            f"once a second while pytest waits, and may spend {limit} on one sample: --tokfidelity-sample-timeout), and the remaining samples are judged "
            f"on threads. This sample fails so that the gate stays closed: run again; if the same sample is stuck "
            f"again{alone}, judging it is too slow or never ends: file it with the sample",
            stuck.pids, stuck.affected,
        )
        for d, positions in stuck.affected:
            ds = self.datasets[d]
            failed: Future = Future()
            failed.set_result(Judged(verdicts=dict.fromkeys(positions, error)))
            for p in positions:
                if p in ds.rank:
                    ds.scheduled[p] = failed

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

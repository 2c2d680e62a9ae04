"""Where judging runs: processes forked from a lone pytest, or threads.

Both pools take ``submit(dataset, positions)`` and give back an object whose ``result()`` is the
``Judged`` chunk. Judging is mostly Python work around the tokenizer's encode, so threads share the
GIL with pytest's own per-test work; on 2 cores, 2,000 samples took about 4.0 s on threads and
2.8-3.0 s in processes (bench/bench_plugin.py). A lone, single-threaded pytest on Linux therefore
forks judging processes (after the tokenizer is loaded, so they share it); otherwise threads.

A forked judge holds its datasets in the closure it was forked with (no module state), reads
requests from a pipe and answers on another, in order. It dies with its parent: the kernel kills
it when the parent dies (``PR_SET_PDEATHSIG``), and it ends when its request pipe closes. A judge
that dies is reported as ``JudgeDied`` by the result it owed.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["JudgeDied", "ForkedJudges", "ThreadJudges", "can_fork"]

Task = Callable[[int, list[int]], Any]  # (dataset position, sample positions) -> Judged
_F_SETPIPE_SZ = 1031  # Linux: a bigger answer pipe lets a judge run further ahead


class JudgeDied(RuntimeError):
    """A judging process ended without answering (killed, out of memory)."""


def can_fork() -> bool:
    """Forking is safe in a lone, single-threaded pytest on Linux (macOS system libraries are
    not fork-safe; forking beside other threads, as in an xdist worker, can deadlock the child)."""
    return sys.platform == "linux" and threading.active_count() == 1


class ThreadJudges:
    def __init__(self, n: int, task: Task):
        self._pool = ThreadPoolExecutor(n, thread_name_prefix="tokfidelity")
        self._task = task

    def submit(self, dataset: int, positions: list[int]):
        return self._pool.submit(self._task, dataset, positions)

    def shutdown(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class _Answer:
    """The result a forked judge owes for one request."""

    __slots__ = ("judge", "value", "done")

    def __init__(self, judge: "_ForkedJudge"):
        self.judge, self.value, self.done = judge, None, False

    def result(self):
        while not self.done:
            self.judge.read_one()
        return self.value


class _ForkedJudge:
    def __init__(self, task: Task, close_in_child: list[int]):
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the judge: never returns into pytest
            code = 0
            try:
                for fd in (req_w, ans_r, *close_in_child):
                    os.close(fd)
                _die_with_parent(parent)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the parent's business
                _serve(task, req_r, ans_w)
            except BaseException:  # noqa: BLE001 - the parent sees a dead judge and says so
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(ans_w)
        try:
            import fcntl

            fcntl.fcntl(ans_r, _F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass
        self.pid = pid
        self.fds = [req_w, ans_r]
        self.requests = os.fdopen(req_w, "wb")
        self.answers = os.fdopen(ans_r, "rb")
        self.owed: deque[_Answer] = deque()

    def send(self, dataset: int, positions: list[int]) -> _Answer:
        answer = _Answer(self)
        try:
            pickle.dump((dataset, positions), self.requests)
            self.requests.flush()
        except OSError:
            raise JudgeDied(f"judging process {self.pid} is gone") from None
        self.owed.append(answer)
        return answer

    def read_one(self) -> None:
        try:
            value = pickle.load(self.answers)
        except (EOFError, OSError, pickle.UnpicklingError):
            raise JudgeDied(f"judging process {self.pid} died") from None
        answer = self.owed.popleft()
        answer.value, answer.done = value, True

    def close(self) -> None:
        for f in (self.requests, self.answers):
            try:
                f.close()
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _serve(task: Task, req_fd: int, ans_fd: int) -> None:
    with os.fdopen(req_fd, "rb") as requests, os.fdopen(ans_fd, "wb") as answers:
        while True:
            try:
                dataset, positions = pickle.load(requests)
            except EOFError:  # the parent closed the pipe, or died
                return
            pickle.dump(task(dataset, positions), answers)
            answers.flush()


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (even by kill -9)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no prctl: the request pipe's end still stops it
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


class ForkedJudges:
    """``n`` judging processes forked from this one; chunks go round-robin.

    The judges are forked with this process's heap frozen (``gc.freeze``, as the standard
    library's documentation advises before a fork): their collections then never walk the
    objects they inherited, and so never copy the pages they share with this process."""

    def __init__(self, n: int, task: Task):
        self._judges: list[_ForkedJudge] = []
        frozen_before = gc.get_freeze_count() > 0  # a caller's freeze stays as it was
        gc.freeze()
        try:
            for _ in range(n):
                inherited = [fd for j in self._judges for fd in j.fds]
                self._judges.append(_ForkedJudge(task, inherited))
        finally:
            if not frozen_before:
                gc.unfreeze()
        self._next = 0

    @property
    def pids(self) -> list[int]:
        return [j.pid for j in self._judges]

    def submit(self, dataset: int, positions: list[int]) -> _Answer:
        judge = self._judges[self._next % len(self._judges)]
        self._next += 1
        return judge.send(dataset, positions)

    def shutdown(self) -> None:
        for judge in self._judges:
            judge.close()

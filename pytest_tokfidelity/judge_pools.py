"""Where judging runs: processes forked from a lone pytest, or threads.

Both pools take ``submit(dataset, positions)`` and give back an object whose ``result()`` is the
``Judged`` chunk. Judging is mostly Python work around the tokenizer's encode, so threads share the
GIL with pytest's own per-test work; on 2 cores, 2,000 samples took about 4.0 s on threads and
2.8-3.0 s in processes (bench/bench_plugin.py). A lone, single-threaded pytest on Linux therefore
forks judging processes (after the tokenizer is loaded, so they share it); otherwise threads.
``ForkedCall`` runs one function in a process forked for it (the session indexes the golden files
that way).

A forked judge holds its datasets in the closure it was forked with (no module state), takes
requests from a pipe all judges share, and answers each on a pipe of its own, framed by its length
and naming the request. It dies with its parent: the kernel kills it when the parent dies
(``PR_SET_PDEATHSIG``), and it ends when the request pipe closes. A judge that dies is reported as
``JudgeDied`` by the next result pytest waits for; one that is stopped, or stays on one sample past
the deadline, as ``JudgeStuck`` (judge_watch.py).
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .judge_watch import TICK, JudgeStuck, Progress, Watch

__all__ = ["JudgeDied", "JudgeStuck", "ForkedJudges", "ThreadJudges", "ForkedCall", "can_fork"]

# (dataset position, sample positions, what to call with each position before judging it, or None) -> Judged
Task = Callable[[int, list[int], Callable[[int], None] | None], Any]
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
        return self._pool.submit(self._task, dataset, positions, None)

    def shutdown(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class _Answer:
    """The result owed for one request, read by ``ForkedJudges.wait`` from whichever judge took it."""

    __slots__ = ("pool", "value", "done", "number", "dataset", "positions")

    def __init__(self, pool: "ForkedJudges", number: int, dataset: int, positions: list[int]):
        self.pool, self.value, self.done = pool, None, False
        self.number, self.dataset, self.positions = number, dataset, positions

    def result(self):
        if not self.done:
            self.pool.wait(self)
        return self.value


# A request: (its number, dataset, how many positions, the positions), always this many bytes, so
# that a judge reads exactly one with one read: a pipe never splits nor interleaves a write of at
# most PIPE_BUF bytes (4,096 on Linux; POSIX says at least 512), and with every request the same
# size a read of that size takes one whole request.
MAX_POSITIONS = 60  # positions a request holds (judges.CHUNK is 32)
_REQUEST = struct.Struct(f"<QII{MAX_POSITIONS}I")  # 256 bytes
_QUEUED = 128  # requests written and not yet answered, at most: far below what the pipe holds (64 KB)


def _serve(task: Task, requests: int, answers: int, progress: Progress, slot: int) -> None:
    size = _REQUEST.size
    gc.disable()  # collected between requests instead (_collect_between_requests)
    while True:
        request = os.read(requests, size)
        if not request:  # the parent closed the pipe, or died
            return
        if len(request) != size:  # cannot happen on Linux (see _REQUEST); a judge that sees it dies
            raise RuntimeError(f"a torn request ({len(request)} bytes)")
        number, dataset, count, *positions = _REQUEST.unpack(request)
        began = progress.marker(slot, number)
        began(positions[0])
        data = pickle.dumps((number, task(dataset, positions[:count], began)), pickle.HIGHEST_PROTOCOL)
        _write_all(answers, _FRAME.pack(len(data)) + data)
        progress.idle(slot)  # after the answer: a judge stopped before it still holds the request
        _collect_between_requests()


def _collect_between_requests() -> None:
    """Python's collection, by its own thresholds, run where little is alive. Run by itself, mid-request, it
    walks every id list of the chunk being judged (about 1% of judging's CPU, bench/bench_plugin.py's 6,000
    Kimi samples); here, after the answer, the chunk is gone. Cycles made while judging (an exception and its
    traceback) are freed here."""
    counts, thresholds = gc.get_count(), gc.get_threshold()
    for generation in (2, 1, 0):
        if counts[generation] > thresholds[generation]:
            gc.collect(generation)
            return


_FRAME = struct.Struct("<Q")  # an answer's length, before it


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_frame(fd: int) -> bytes:
    """One whole answer (its length, then its bytes); EOFError when the judge is gone."""
    (n,) = _FRAME.unpack(_read_exactly(fd, _FRAME.size))
    return _read_exactly(fd, n)


def _read_exactly(fd: int, n: int) -> bytes:
    data = os.read(fd, n)
    if len(data) == n:  # nearly always: the judge wrote the whole frame at once
        return data
    parts, got = [data], len(data)
    while got < n:
        data = os.read(fd, n - got)
        if not data:
            raise EOFError
        parts.append(data)
        got += len(data)
    return b"".join(parts)


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


def _fork_process(body: Callable[[], None], close: list[int]) -> int:
    """Fork a process that closes ``close`` (its copies of this process's pipe ends), dies with this
    process, leaves interrupts to it, runs ``body`` and exits (status 1 if body raised): its pid.
    It never returns into pytest."""
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            for fd in close:
                os.close(fd)
            _die_with_parent(parent)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the parent's business
            body()
        except BaseException:  # noqa: BLE001 - the parent sees the process gone and says so, or does the work
            code = 1
        finally:
            os._exit(code)
    return pid


class ForkedCall:
    """``fn()`` run in a process forked now, while this one goes on; ``result()`` is its return
    value (pickled across), or None when that process failed: the caller then runs ``fn`` itself.

    A lone pytest indexes its golden files this way while it loads their tokenizers: both must be
    done before judging starts, and each alone keeps one core busy (session.py)."""

    def __init__(self, fn: Callable[[], Any]):
        r, w = os.pipe()

        def call() -> None:
            gc.freeze()  # what it inherited is never walked (nor its pages copied) by its collections
            data = pickle.dumps(fn(), pickle.HIGHEST_PROTOCOL)
            _write_all(w, _FRAME.pack(len(data)) + data)

        self.pid = _fork_process(call, [r])
        os.close(w)
        self._fd: int | None = r
        self._value: Any = None

    def result(self) -> Any:
        if self._fd is not None:
            try:
                self._value = pickle.loads(_read_frame(self._fd))
            except (EOFError, OSError, pickle.UnpicklingError):
                self._value = None
            self._end()
        return self._value

    def cancel(self) -> None:
        """Stop it when its result will not be asked for (idempotent)."""
        if self._fd is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._end()

    def _end(self) -> None:
        os.close(self._fd)
        self._fd = None
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


class ForkedJudges:
    """``n`` judging processes forked from this one, which take requests from one pipe they share,
    each as soon as it is free, and answer on a pipe of its own.

    Work is never assigned to a judge ahead of time: a judge that gets the CPU less often simply
    takes fewer requests. (Sending each judge its own share left one judge idle for up to 0.25 s in 4
    of 6 timed 6,000-sample runs, and for a few ms whenever pytest was slow to read its answers.) ``wait``
    reads answers as they come, from any judge, until the one asked for.

    The judges are forked with this process's heap frozen (``gc.freeze``, as the standard
    library's documentation advises before a fork): their collections then never walk the
    objects they inherited, and so never copy the pages they share with this process.

    ``deadline``: the seconds a judge may spend on one sample (None: no limit; a stopped judge is
    still found, judge_watch.py)."""

    def __init__(self, n: int, task: Task, deadline: float | None = None):
        requests_r, requests_w = os.pipe()
        self.pids: list[int] = []
        self._progress = Progress(n)
        self._answers: list[int] = []  # each judge's answer pipe (read end)
        frozen_before = gc.get_freeze_count() > 0  # a caller's freeze stays as it was
        gc.freeze()
        try:
            for _ in range(n):
                self._fork(task, requests_r, requests_w)
        finally:
            if not frozen_before:
                gc.unfreeze()
        os.close(requests_r)
        self._requests = requests_w
        self._number = 0
        self._owed: dict[int, _Answer] = {}  # request number -> its answer, for requests written
        self._unsent: deque[tuple[int, bytes]] = deque()  # (number, request) past _QUEUED
        self._watch = Watch(self.pids, self._progress, deadline)

    def _fork(self, task: Task, requests_r: int, requests_w: int) -> None:
        answers_r, answers_w = os.pipe()
        slot = len(self.pids)
        serve = lambda: _serve(task, requests_r, answers_w, self._progress, slot)  # noqa: E731
        pid = _fork_process(serve, [requests_w, answers_r, *self._answers])
        os.close(answers_w)
        try:
            import fcntl

            fcntl.fcntl(answers_r, _F_SETPIPE_SZ, 1 << 20)  # a judge can run further ahead of pytest
        except OSError:
            pass
        self.pids.append(pid)
        self._answers.append(answers_r)

    def submit(self, dataset: int, positions: list[int]) -> _Answer:
        if not 0 < len(positions) <= MAX_POSITIONS:
            raise ValueError(f"a request holds 1 to {MAX_POSITIONS} positions, not {len(positions)}")
        self._number += 1
        answer = _Answer(self, self._number, dataset, positions)
        request = _REQUEST.pack(self._number, dataset, len(positions), *positions, *[0] * (MAX_POSITIONS - len(positions)))
        self._unsent.append((self._number, request))
        self._owed[self._number] = answer
        self._send()
        return answer

    def _send(self) -> None:
        unsent = self._unsent
        while unsent and len(self._owed) - len(unsent) < _QUEUED:
            number, request = unsent.popleft()
            try:
                os.write(self._requests, request)  # whole: at most PIPE_BUF bytes, with room left
            except OSError:  # every judge is gone
                raise JudgeDied("the judging processes are gone") from None

    def wait(self, answer: _Answer) -> None:
        """Read answers as they come, from any judge, until ``answer``'s; JudgeStuck when a judge is
        stopped or past the deadline (checked once a TICK while it has not come)."""
        watch = self._watch
        watch.start()
        while not answer.done:
            ready, _, _ = select.select(self._answers, [], [], TICK)
            for fd in ready:
                try:
                    number, value = pickle.loads(_read_frame(fd))
                except (EOFError, OSError, pickle.UnpicklingError):
                    raise JudgeDied(f"judging process {self.pids[self._answers.index(fd)]} died") from None
                done = self._owed.pop(number)
                done.value, done.done = value, True
            self._send()
            if not answer.done and (stuck := watch.check(self._owed)):
                owed = self._owed
                numbers = dict.fromkeys([answer.number, *(held for _, held, _, _ in stuck if held is not None)])
                affected = [(owed[n].dataset, owed[n].positions) for n in numbers if n in owed]
                judging = [(owed[held].dataset, p) for _, held, p, _ in stuck if held is not None]
                raise JudgeStuck("; ".join(why for *_, why in stuck), [pid for pid, *_ in stuck], affected, judging)

    def shutdown(self) -> None:
        for close in (self._requests, *self._answers):
            try:
                os.close(close)
            except OSError:
                pass
        for pid in self.pids:  # all killed first: each frees its memory while the next is waited for
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in self.pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self._progress.close()

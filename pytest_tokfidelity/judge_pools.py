"""Where judging runs: processes forked from a lone pytest, or threads.

Both pools take ``submit(dataset, positions)`` and give back an object whose ``result()`` is the
``Judged`` chunk (``eager``: sent to a judging process at once, not when one has room). Judging is
mostly Python work around the tokenizer's encode, so threads share the GIL with pytest's own
per-test work; on 2 cores, 2,000 samples took about 4.0 s on threads and 2.8-3.0 s in processes
(bench/bench_plugin.py). A lone, single-threaded pytest on Linux therefore forks judging processes
(after the tokenizer is loaded, so they share it); otherwise threads.

A forked judge holds its datasets in the closure it was forked with (no module state), reads
requests from a pipe and answers on another, in order, each answer framed by its length. It dies
with its parent: the kernel kills it when the parent dies (``PR_SET_PDEATHSIG``), and it ends when
its request pipe closes. A judge that dies is reported as ``JudgeDied`` by the result it owed.
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

__all__ = ["JudgeDied", "ForkedJudges", "ThreadJudges", "ForkedCall", "can_fork"]

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

    def submit(self, dataset: int, positions: list[int], eager: bool = False):
        return self._pool.submit(self._task, dataset, positions)

    def shutdown(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class _Answer:
    """The result owed for one request: by a judge once sent, else still waiting in the pool."""

    __slots__ = ("pool", "value", "done")

    def __init__(self, pool: "ForkedJudges"):
        self.pool, self.value, self.done = pool, None, False

    def result(self):
        if not self.done:
            self.pool.wait(self)
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
        self.answers = ans_r  # read whole framed answers (_read_frame): nothing waits in a buffer unseen by select
        self.owed: deque[_Answer] = deque()

    def send(self, answer: _Answer, dataset: int, positions: list[int]) -> None:
        try:
            pickle.dump((dataset, positions), self.requests)
            self.requests.flush()
        except OSError:
            raise JudgeDied(f"judging process {self.pid} is gone") from None
        self.owed.append(answer)

    def read_one(self) -> None:
        try:
            value = pickle.loads(_read_frame(self.answers))
        except (EOFError, OSError, pickle.UnpicklingError):
            raise JudgeDied(f"judging process {self.pid} died") from None
        answer = self.owed.popleft()
        answer.value, answer.done = value, True

    def close(self) -> None:
        for close in (self.requests.close, lambda: os.close(self.answers)):
            try:
                close()
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _serve(task: Task, req_fd: int, ans_fd: int) -> None:
    with os.fdopen(req_fd, "rb") as requests:
        while True:
            try:
                dataset, positions = pickle.load(requests)
            except EOFError:  # the parent closed the pipe, or died
                return
            data = pickle.dumps(task(dataset, positions), pickle.HIGHEST_PROTOCOL)
            _write_all(ans_fd, _FRAME.pack(len(data)) + data)


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


class ForkedCall:
    """``fn()`` run in a process forked now, while this one goes on; ``result()`` is its return
    value (pickled across), or None when that process failed: the caller then runs ``fn`` itself.

    A lone pytest indexes its golden files this way while it loads their tokenizers: both must be
    done before judging starts, and each alone keeps one core busy (session.py)."""

    def __init__(self, fn: Callable[[], Any]):
        r, w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # never returns into pytest
            code = 0
            try:
                os.close(r)
                _die_with_parent(parent)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                gc.freeze()  # what it inherited is never walked (nor its pages copied) by its collections
                data = pickle.dumps(fn(), pickle.HIGHEST_PROTOCOL)
                _write_all(w, _FRAME.pack(len(data)) + data)
            except BaseException:  # noqa: BLE001 - the parent gets None and does the work itself
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        self.pid = pid
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
    """``n`` judging processes forked from this one; each chunk goes to the judge with the fewest
    chunks owed, at most ``DEPTH`` each, the rest waiting here in order.

    Round-robin let a judge that had the CPU less often fall behind while the other ran out of work
    (0.5 s idle in a 6,000-sample run): here a judge is sent more as its answers come back, which
    ``wait`` reads from whichever judge answers first, while pytest waits for any one of them.

    The judges are forked with this process's heap frozen (``gc.freeze``, as the standard
    library's documentation advises before a fork): their collections then never walk the
    objects they inherited, and so never copy the pages they share with this process."""

    DEPTH = 3  # chunks sent to one judge and not yet answered: about 0.1 s of its work

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
        self._by_fd = {j.answers: j for j in self._judges}
        self._unsent: deque[tuple[_Answer, int, list[int]]] = deque()

    @property
    def pids(self) -> list[int]:
        return [j.pid for j in self._judges]

    def submit(self, dataset: int, positions: list[int], eager: bool = False) -> _Answer:
        """``eager``: sent now, to the judge that owes least, however much it owes (work to go on
        with while pytest is busy elsewhere, e.g. collecting)."""
        answer = _Answer(self)
        if eager and not self._unsent:
            min(self._judges, key=lambda j: len(j.owed)).send(answer, dataset, positions)
            return answer
        self._unsent.append((answer, dataset, positions))
        self._dispatch()
        return answer

    def _dispatch(self) -> None:
        unsent = self._unsent
        while unsent:
            judge = min(self._judges, key=lambda j: len(j.owed))
            if len(judge.owed) >= self.DEPTH:
                return
            answer, dataset, positions = unsent.popleft()
            judge.send(answer, dataset, positions)

    def wait(self, answer: _Answer) -> None:
        """Read answers as they come, from any judge, sending each judge more, until ``answer``'s."""
        while not answer.done:
            waiting = [fd for fd, j in self._by_fd.items() if j.owed]
            ready, _, _ = select.select(waiting, [], [])
            for fd in ready:
                self._by_fd[fd].read_one()
            self._dispatch()

    def shutdown(self) -> None:
        for judge in self._judges:
            judge.close()

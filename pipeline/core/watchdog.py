"""A time limit on a block of Python code, in any thread, at about a microsecond per use.

``time_limit(seconds)`` runs its block with a deadline: past it, a watchdog thread (one per process,
started on first use, polling every ``POLL_SECONDS``) raises ``TimeLimitExceeded`` inside the block
with CPython's ``PyThreadState_SetAsyncExc``. This is what stops a chat template that loops without
end: a template compiles to Python code, and no hook of jinja's sandbox sees a loop that calls
nothing (``{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}``). The exception arrives at the
next bytecode, so one long C call (a huge string repeat) is not cut short: its size is bounded by
the caller's own checks. A use costs a dict entry, a lock on the way out and a clock read (measured in
``bench/bench_input_limits.py``); no thread or signal is created per use.

The exception is raised only while the block is registered (under the lock), and one that was
raised but not yet delivered when the block ends is withdrawn, so it never escapes elsewhere.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

__all__ = ["TimeLimitExceeded", "time_limit", "POLL_SECONDS"]

POLL_SECONDS = 0.05


class TimeLimitExceeded(BaseException):
    """Raised inside a ``time_limit`` block past its deadline (a BaseException: no ``except Exception``
    in the code being stopped swallows it)."""


def _raise_in(tid: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(TimeLimitExceeded))


def _withdraw(tid: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)  # NULL: clears a pending one


class _Entry:
    __slots__ = ("deadline", "fired")

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.fired = False


class _Watchdog:
    def __init__(self):
        self.lock = threading.Lock()
        self.running: dict[int, _Entry] = {}  # thread id -> the block it runs (one block per thread at a time)
        self.pid = os.getpid()
        self.thread: threading.Thread | None = None

    def ensure_started(self) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._watch, name="tokfidelity-watchdog", daemon=True)
            self.thread.start()

    def _watch(self) -> None:
        while True:
            time.sleep(POLL_SECONDS)
            now = time.monotonic()
            late = [(tid, entry) for tid, entry in list(self.running.items()) if now > entry.deadline]  # list(): atomic
            for tid, entry in late:
                with self.lock:  # a block leaves under this lock: still registered here means still running
                    if self.running.get(tid) is entry and not entry.fired:
                        entry.fired = True
                        _raise_in(tid)


_watchdog = _Watchdog()


def _after_fork() -> None:  # the child has no watchdog thread, and the lock may be held by a thread it lost
    global _watchdog
    _watchdog = _Watchdog()


os.register_at_fork(after_in_child=_after_fork)


class time_limit:
    """``with time_limit(seconds):`` run the block; raise ``TimeLimitExceeded`` in it once ``seconds`` have passed."""

    __slots__ = ("entry", "dog", "tid")

    def __init__(self, seconds: float):
        self.entry = _Entry(time.monotonic() + seconds)

    def __enter__(self) -> None:
        self.dog = dog = _watchdog
        if dog.thread is None:
            with dog.lock:
                dog.ensure_started()
        self.tid = threading.get_ident()
        dog.running[self.tid] = self.entry  # one dict store: atomic, no lock needed

    def __exit__(self, *exc) -> None:
        dog, tid, entry = self.dog, self.tid, self.entry
        with dog.lock:
            if dog.running.get(tid) is entry:
                del dog.running[tid]
        if entry.fired:  # raised, but maybe not delivered yet: withdraw it (delivered already: it is propagating)
            _withdraw(tid)

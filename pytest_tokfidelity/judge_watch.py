"""Whether forked judges are alive and moving: a liveness check and a per-sample deadline.

Each judging process writes, when it takes a request and again before each sample it judges, the
request's number and the time (CLOCK_MONOTONIC, one clock for every process) into its own slot of
a page it shares with pytest (an anonymous shared ``mmap``, inherited over the fork): one
``pack_into``, no system call. While pytest waits for an answer that has not come, ``Watch.check``
looks at every judge once a ``TICK``:

* a judge the kernel shows stopped (state ``T``: SIGSTOP, or SIGTSTP sent to it alone) at two checks
  in a row is stuck: it will not answer until someone continues it;
* a judge still on one sample after ``deadline`` seconds is stuck, once pytest itself has waited that
  long (waiting counted in steps of at most two ticks: a pytest stopped with its judges, by Ctrl-Z then
  ``fg``, does not find them all late).

A stuck judge is killed and replaced like a dead one (judges.py says what then fails).
"""

from __future__ import annotations

import mmap
import struct
import time
from collections.abc import Callable

__all__ = ["JudgeStuck", "Progress", "Watch", "TICK", "DEFAULT_DEADLINE"]

TICK = 1.0  # seconds between two checks of the judges while pytest waits for an answer
DEFAULT_DEADLINE = 120.0  # seconds a judge may spend on one sample (--tokfidelity-sample-timeout)
_SLOT = struct.Struct("<QQd")  # (the request a judge is on, 0 when idle; its current sample's position; when it began)


class JudgeStuck(RuntimeError):
    """Judging processes that stopped, or overran the per-sample deadline. ``affected``: the
    (dataset, positions) of the requests they held, and of the one pytest was waiting for;
    ``judging``: the (dataset, position) of the sample each was on."""

    def __init__(self, message: str, pids: list[int], affected: list[tuple[int, list[int]]], judging: list[tuple[int, int]] = ()):
        super().__init__(message)
        self.pids = pids
        self.affected = affected
        self.judging = list(judging)


class Progress:
    """One slot per judge in memory shared with the judging processes."""

    def __init__(self, judges: int):
        self._map = mmap.mmap(-1, max(1, judges) * _SLOT.size)  # MAP_SHARED: the forks write into it

    def marker(self, slot: int, number: int) -> Callable[[int], None]:
        """In a judge: what it calls with each sample's position before judging it (request ``number``)."""
        pack, shared, offset, clock = _SLOT.pack_into, self._map, slot * _SLOT.size, time.monotonic
        return lambda position: pack(shared, offset, number, position, clock())

    def idle(self, slot: int) -> None:
        _SLOT.pack_into(self._map, slot * _SLOT.size, 0, 0, 0.0)

    def read(self, slot: int) -> tuple[int, int, float]:
        return _SLOT.unpack_from(self._map, slot * _SLOT.size)

    def close(self) -> None:
        self._map.close()


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of a process (R, S, D, T, t, Z...), None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None


class Watch:
    """The checks made while pytest waits for one answer (``start`` at each wait)."""

    def __init__(self, pids: list[int], progress: Progress, deadline: float | None):
        self.pids = pids
        self.progress = progress
        self.deadline = deadline
        self.start()

    def start(self) -> None:
        self._last = time.monotonic()
        self._next = self._last + TICK
        self._waited = 0.0
        self._stopped: set[int] = set()  # judges seen stopped at the last check

    def check(self, owed: dict) -> list[tuple[int, int | None, int, str]] | None:
        """None between ticks; else the stuck judges as (pid, the owed request it holds or None, the
        position of the sample it is on, why)."""
        now = time.monotonic()
        self._waited += min(now - self._last, 2 * TICK)
        self._last = now
        if now < self._next:
            return None
        self._next = now + TICK
        stuck = []
        for slot, pid in enumerate(self.pids):
            number, position, began = self.progress.read(slot)
            held = number if number in owed else None
            if process_state(pid) == "T":
                if pid in self._stopped:
                    stuck.append((pid, held, position, f"judging process {pid} is stopped (state T, as after SIGSTOP)"))
                self._stopped.add(pid)
                continue
            self._stopped.discard(pid)
            deadline = self.deadline
            if deadline and held is not None and self._waited >= deadline and now - began >= deadline:
                stuck.append((pid, held, position, f"judging process {pid} has been on one sample for {now - began:.0f} s"))
        return stuck

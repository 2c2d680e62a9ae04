"""The forked judging pool (pytest_tokfidelity/judge_pools.py): each answer, whole, reaches its own
request; judges take requests as they are free, so that a judge held up on one does not hold up the
rest; a judge that dies is reported, never waited for. And ForkedCall, the one-off forked process."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from pytest_tokfidelity.judge_pools import MAX_POSITIONS, ForkedCall, ForkedJudges, JudgeDied, JudgeStuck
from pytest_tokfidelity.judge_watch import TICK

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="judging processes are forked on Linux only")


def _task(dataset: int, positions: list[int], began=None):
    if positions[0] == 0:  # the first chunk holds its judge up
        time.sleep(1.5)
    if dataset == 1:  # an answer far bigger than a pipe's buffer
        return os.getpid(), positions, b"x" * 3_000_000
    return os.getpid(), positions


def test_a_held_up_judge_holds_up_only_its_own_request_and_answers_reach_their_requests():
    pool = ForkedJudges(2, _task)
    try:
        answers = [pool.submit(0, [i, i + 100]) for i in range(20)]
        results = [a.result() for a in answers]
    finally:
        pool.shutdown()
    assert [positions for _, positions in results] == [[i, i + 100] for i in range(20)]
    held_up = results[0][0]
    assert set(pool.pids) == {pid for pid, _ in results}
    # judges take requests as they are free: while one sleeps on the first, the other takes all the rest
    assert sum(pid == held_up for pid, _ in results) == 1


def test_requests_of_any_size_up_to_the_limit_and_big_answers_come_back_whole():
    pool = ForkedJudges(2, _task)
    try:
        sizes = [1, 2, 31, 32, 59, MAX_POSITIONS]
        answers = [pool.submit(1, list(range(7, 7 + n))) for n in sizes]
        many = [pool.submit(2, [i + 1]) for i in range(300)]  # more than may wait in the request pipe
        results = [a.result() for a in answers]
        assert [r[1] for r in (a.result() for a in many)] == [[i + 1] for i in range(300)]
        with pytest.raises(ValueError):
            pool.submit(0, list(range(MAX_POSITIONS + 1)))
        with pytest.raises(ValueError):
            pool.submit(0, [])
    finally:
        pool.shutdown()
    assert [r[1] for r in results] == [list(range(7, 7 + n)) for n in sizes]
    assert all(r[2] == b"x" * 3_000_000 for r in results)


def test_a_judge_that_dies_is_reported_by_the_answer_it_owed():
    pool = ForkedJudges(1, _task)
    try:
        answer = pool.submit(0, [5])
        assert answer.result()[1] == [5]
        os.kill(pool.pids[0], 9)
        with pytest.raises(JudgeDied):
            pool.submit(0, [6]).result()
    finally:
        pool.shutdown()


def test_a_request_a_dead_judge_took_is_reported_while_the_other_judge_goes_on():
    pool = ForkedJudges(2, _task)
    try:
        held = pool.submit(0, [0])  # one judge sleeps on it
        time.sleep(0.5)
        assert pool.submit(0, [1]).result()[1] == [1]  # the other answers
        taken = pool.submit(0, [2]).result()[0]
        sleeper = next(pid for pid in pool.pids if pid != taken)
        os.kill(sleeper, 9)
        with pytest.raises(JudgeDied):
            held.result()
    finally:
        pool.shutdown()


def _index_like(n: int):
    return os.getpid(), b"i" * n


def _slow(dataset: int, positions: list[int], began):
    for p in positions:  # each sample takes `dataset` tenths of a second; position 99 never ends
        began(p)
        time.sleep(600 if p == 99 else dataset / 10)
    return os.getpid(), positions


def _stopped_or_stuck(pool: ForkedJudges, answer, limit: float) -> tuple[JudgeStuck, float]:
    started = time.monotonic()
    with pytest.raises(JudgeStuck) as caught:
        answer.result()
    took = time.monotonic() - started
    assert took < limit, took
    return caught.value, took


def test_a_stopped_judge_is_found_and_named_with_what_it_held_and_what_was_waited_for():
    pool = ForkedJudges(1, _slow, deadline=None)  # no deadline: the liveness check alone
    try:
        held = pool.submit(3, [1, 2])  # 0.3 s a sample
        waited = pool.submit(0, [7])  # queued behind it
        time.sleep(0.1)
        os.kill(pool.pids[0], signal.SIGSTOP)
        stuck, _ = _stopped_or_stuck(pool, waited, limit=3 * TICK + 2)
        assert stuck.pids == pool.pids
        assert f"judging process {pool.pids[0]} is stopped" in str(stuck)
        assert stuck.affected == [(0, [7]), (3, [1, 2])]  # the one waited for, then the one it held
        assert stuck.judging == [(3, 1)]
    finally:
        pool.shutdown()  # kills the stopped judge too
    with pytest.raises(ChildProcessError):
        os.waitpid(pool.pids[0], os.WNOHANG)


def test_a_judge_continued_in_time_is_not_stuck_and_a_slow_sample_under_the_deadline_is_waited_for():
    pool = ForkedJudges(1, _slow, deadline=2.5)
    try:
        answer = pool.submit(15, [1, 2, 3])  # three samples of 1.5 s: 4.5 s in all, each under the deadline
        time.sleep(0.2)
        os.kill(pool.pids[0], signal.SIGSTOP)
        time.sleep(0.5 * TICK)  # seen stopped at most once
        os.kill(pool.pids[0], signal.SIGCONT)
        assert answer.result()[1] == [1, 2, 3]
    finally:
        pool.shutdown()


def test_a_judge_past_the_deadline_on_one_sample_is_stuck():
    pool = ForkedJudges(2, _slow, deadline=2.0)
    try:
        fine = pool.submit(1, [1])
        stuck_on = pool.submit(0, [5, 99, 6])  # position 99 never ends
        assert fine.result()[1] == [1]
        stuck, took = _stopped_or_stuck(pool, stuck_on, limit=2.0 + 3 * TICK + 2)
        assert took >= 2.0
        assert "has been on one sample for" in str(stuck) and len(stuck.pids) == 1
        assert stuck.affected == [(0, [5, 99, 6])]
        assert stuck.judging == [(0, 99)]  # the sample it was on
    finally:
        pool.shutdown()


def test_a_forked_call_answers_from_another_process_and_whole():
    call = ForkedCall(lambda: _index_like(3_000_000))  # far bigger than a pipe's buffer
    pid, data = call.result()
    assert pid == call.pid != os.getpid()
    assert data == b"i" * 3_000_000
    assert call.result() == (pid, data)  # asked again: the same answer, nothing read twice
    with pytest.raises(ChildProcessError):
        os.waitpid(call.pid, os.WNOHANG)  # reaped


def test_a_forked_call_that_fails_or_is_cancelled_answers_none_and_leaves_no_process():
    assert ForkedCall(lambda: 1 / 0).result() is None  # the caller then does the work itself
    slow = ForkedCall(lambda: time.sleep(30))
    started = time.perf_counter()
    slow.cancel()
    slow.cancel()  # idempotent
    assert time.perf_counter() - started < 5
    assert slow.result() is None
    with pytest.raises(ChildProcessError):
        os.waitpid(slow.pid, os.WNOHANG)


def test_a_small_run_forks_only_the_judges_its_chunks_need():
    """A pasted node id (a pool started by its test, the selection known) or a 20-sample dataset (warm-up knows
    every sample) starts one judging process; a dataset too big to know at warm-up starts every judge."""
    from types import SimpleNamespace

    from pytest_tokfidelity.judges import CHUNK, WARM, LoneOrder, Prefetcher

    def prefetcher(*selected):
        return Prefetcher([SimpleNamespace(selected=list(s)) for s in selected], LoneOrder(), judges=4, may_fork=True)

    assert prefetcher([7])._pool_size() == 1  # one node id
    assert prefetcher(range(CHUNK + 1))._pool_size() == 2
    assert prefetcher(range(10), range(10 * CHUNK))._pool_size() == 4
    assert prefetcher([], [3])._pool_size() == 4  # a dataset whose selection is not known yet: every judge
    small = prefetcher([])
    small.expected = 20  # set by warm_up when it was given every sample case
    assert small._pool_size() == 1
    small.chunk = 5  # warm_up shares a small run out: 20 samples over 4 judges
    assert small._pool_size() == 4
    assert WARM >= 20


class _Cycle:
    def __init__(self):
        self.me = self


_made: list = []


def _cyclic_task(dataset: int, positions: list[int], began=None):
    """Makes reference cycles past the collector's threshold, and says what a judge sees while judging:
    whether Python collects on its own, and which cycles made for earlier requests are still alive."""
    import gc
    import weakref

    alive = [i for i, ref in enumerate(_made) if ref() is not None]
    for _ in range(gc.get_threshold()[0] * 3):
        cycle = _Cycle()
        _made.append(weakref.ref(cycle))
        del cycle
    return gc.isenabled(), alive, len(_made)


def test_a_judge_collects_between_requests_not_while_judging():
    pool = ForkedJudges(1, _cyclic_task)
    try:
        first = pool.submit(0, [1]).result()
        second = pool.submit(0, [2]).result()
    finally:
        pool.shutdown()
    assert first[0] is False and second[0] is False  # no collection walks the chunk being judged
    made_by_first = first[2]
    # the first request's cycles, past the threshold, were freed after its answer, before the second request
    assert made_by_first > 0 and not [i for i in second[1] if i < made_by_first]

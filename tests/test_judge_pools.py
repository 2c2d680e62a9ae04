"""The forked judging pool (pytest_tokfidelity/judge_pools.py): answers in order, whole, and work
sent to the judge that owes least, so that a judge held up on one chunk does not hold up the rest."""

from __future__ import annotations

import os
import sys
import time

import pytest

from pytest_tokfidelity.judge_pools import ForkedCall, ForkedJudges, JudgeDied

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="judging processes are forked on Linux only")


def _task(dataset: int, positions: list[int]):
    if positions[0] == 0:  # the first chunk holds its judge up
        time.sleep(1.5)
    if dataset == 1:  # an answer far bigger than a pipe's buffer
        return os.getpid(), positions, b"x" * 3_000_000
    return os.getpid(), positions


def test_a_held_up_judge_gets_no_more_than_it_can_owe_and_answers_stay_in_order():
    pool = ForkedJudges(2, _task)
    try:
        answers = [pool.submit(0, [i, i + 100]) for i in range(20)]
        results = [a.result() for a in answers]
    finally:
        pool.shutdown()
    assert [positions for _, positions in results] == [[i, i + 100] for i in range(20)]
    held_up = results[0][0]
    assert set(pool.pids) == {pid for pid, _ in results}
    # round-robin would have given the held-up judge 10 chunks; it is sent more only as it answers,
    # so it gets the 3 it could owe (chunks 0, 2 and 4) and the other judge all the rest
    assert ForkedJudges.DEPTH == 3
    assert sum(pid == held_up for pid, _ in results) == 3


def test_eager_chunks_are_sent_at_once_and_big_answers_come_back_whole():
    pool = ForkedJudges(2, _task)
    try:
        eager = [pool.submit(1, [i + 1], eager=True) for i in range(8)]  # more than DEPTH per judge
        assert sum(len(j.owed) for j in pool._judges) == 8
        results = [a.result() for a in eager]
    finally:
        pool.shutdown()
    assert [r[1] for r in results] == [[i + 1] for i in range(8)]
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


def _index_like(n: int):
    return os.getpid(), b"i" * n


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

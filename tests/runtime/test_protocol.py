"""Results are tagged: the dispatcher accepts only the answer to the question it asked."""

from __future__ import annotations

import multiprocessing
import os
import time

from distlint.runtime.outcome import Verdict
from distlint.runtime.protocol import RankResult, RunTest, Status, next_seq
from distlint.runtime.resolve import PoolConfig
from distlint.runtime.worker_pool import PoolState, WorkerPool, _Rank


class FakeProcess:
    """Stands in for a live worker: a sentinel that never fires."""

    def __init__(self) -> None:
        self.sentinel, self._keep = os.pipe()
        self.exitcode = None
        self.pid = None

    def is_alive(self) -> bool:
        return True


def fake_pool(world_size=2):
    config = PoolConfig("gloo", "gloo", world_size, False, "cpu", 5.0, None)
    pool = WorkerPool(config, "spawn")
    workers = []
    for rank in range(world_size):
        ours, theirs = multiprocessing.Pipe()
        pool._ranks.append(_Rank(rank, FakeProcess(), ours, "/nonexistent", "/nonexistent"))
        workers.append(theirs)
    pool.state = PoolState.READY
    return pool, workers


def answer(conn, seq, test_id, rank, status=Status.PASSED, detail=""):
    conn.send(RankResult(seq=seq, test_id=test_id, rank=rank, status=status, detail=detail))


def test_late_answers_to_earlier_tests_are_ignored():
    pool, workers = fake_pool()
    earlier = next_seq()
    # Both ranks still have an answer to an earlier test in flight: a skip and a failure.
    answer(workers[0], earlier, "m.C.test_earlier", 0, Status.SKIPPED, "stale skip")
    answer(workers[1], earlier, "m.C.test_earlier", 1, Status.FAILED, "stale failure")
    now = next_seq()
    answer(workers[0], now, "m.C.test_now", 0)
    answer(workers[1], now, "m.C.test_now", 1)

    got = pool._gather(
        lambda rank, msg: isinstance(msg, RankResult) and msg.seq == now and msg.rank == rank,
        time.monotonic() + 5,
    )
    assert {rank: msg.seq for rank, msg in got.replies.items()} == {0: now, 1: now}
    assert pool.stale_messages == 2 and not got.timed_out


def test_run_test_waits_for_its_own_seq_and_times_out_without_it():
    pool, workers = fake_pool()
    stale = next_seq()
    answer(workers[0], stale, "m.C.test_x", 0)  # right test id, wrong seq
    answer(workers[1], stale, "m.C.test_x", 1)
    outcome = pool.run_test(None, "test_x", "m.C.test_x", timeout_s=0.3)
    sent = [w.recv() for w in workers]
    assert all(isinstance(m, RunTest) and m.seq > stale for m in sent)
    assert outcome.verdict is Verdict.ERROR
    assert "timed out after 0.3 s; ranks 0, 1 did not finish" in outcome.message
    assert pool.stale_messages == 2


def test_answer_from_the_wrong_rank_is_not_accepted():
    pool, workers = fake_pool()
    seq = next_seq()
    answer(workers[0], seq, "m.C.t", 1)  # claims to be rank 1 on rank 0's pipe
    got = pool._gather(
        lambda rank, msg: isinstance(msg, RankResult) and msg.seq == seq and msg.rank == rank,
        time.monotonic() + 0.2,
    )
    assert got.replies == {} and got.timed_out and pool.stale_messages == 1

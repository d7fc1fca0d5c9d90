"""The fault contract (issue 4), one test per item, on gloo with world size 2.

Each test runs a class from cases/faults.py in this process, exactly as a test
runner would, and checks the reported outcomes and where each rank ran (the
case tests record their pid per rank in $DISTLINT_CASE_LOG).
"""

from __future__ import annotations

from .cases.caselog import read
from .support import load_case, run_classes

faults = load_case("faults")


def pids_of(log, test):
    return {entry["rank"]: entry["pid"] for entry in read(log) if entry["test"] == test}


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_failure_on_one_rank_reports_its_traceback_and_the_next_test_runs_on_a_healthy_pool(case_log):
    outcomes = run_classes(faults.FailThenPass)

    failed = outcomes["FailThenPass.test_a_fails_on_rank1"]
    assert failed.kind == "fail"
    assert "rank 1 failed" in failed.message
    assert "rank 1 disagrees" in failed.message and "test_a_fails_on_rank1" in failed.message
    assert "rank 0 was still running and was stopped" in failed.message
    # Rank 0 was waiting in all_reduce for rank 1: that process is gone, not stuck.
    stuck = pids_of(case_log, "test_a_fails_on_rank1")
    assert not any(alive(pid) for pid in stuck.values())
    # No poison pill: the next test runs, on new ranks, and passes.
    assert outcomes["FailThenPass.test_b_next_passes"].kind == "pass"
    assert set(pids_of(case_log, "test_b_next_passes").values()).isdisjoint(stuck.values())


def test_hung_rank_fails_after_the_timeout_with_its_stack_and_later_tests_run(case_log, monkeypatch):
    # The class says 60 s; the environment variable wins (else this takes minutes).
    monkeypatch.setenv("DISTLINT_TEST_TIMEOUT", "3")
    outcomes = run_classes(faults.Hangs)

    sleeping = outcomes["Hangs.test_a_sleeps_on_rank0"]
    assert sleeping.kind == "error"
    assert "timed out after 3 s; rank 0 did not finish" in sleeping.message
    assert "in test_a_sleeps_on_rank0" in sleeping.message  # rank 0's Python stack
    assert 3 <= sleeping.seconds < 3 + 5

    lonely = outcomes["Hangs.test_b_collective_peer_never_joins"]
    assert lonely.kind == "error"
    assert "timed out after 3 s; rank 0 did not finish" in lonely.message
    assert "in all_reduce" in lonely.message and "in test_b_collective_peer_never_joins" in lonely.message

    assert outcomes["Hangs.test_c_next_passes"].kind == "pass"
    hung = list(pids_of(case_log, "test_a_sleeps_on_rank0").values())
    assert not any(alive(pid) for pid in hung)


def test_dead_rank_fails_the_test_at_once_naming_rank_and_cause(case_log):
    outcomes = run_classes(faults.Deaths)  # the class timeout is 30 s

    exited = outcomes["Deaths.test_a_exit_code"]
    assert exited.kind == "error"
    assert "rank 1 died during" in exited.message and "exited with code 3" in exited.message
    killed = outcomes["Deaths.test_b_sigkill"]
    assert killed.kind == "error"
    assert "rank 0 died during" in killed.message and "was killed by SIGKILL" in killed.message
    segfault = outcomes["Deaths.test_c_segfault"]
    assert segfault.kind == "error"
    assert "rank 1 died during" in segfault.message and "was killed by SIGSEGV" in segfault.message
    assert "in test_c_segfault" in segfault.message  # faulthandler's stack of the crash
    for died in (exited, killed, segfault):
        assert died.seconds < 10, "a death must be noticed at once, not after the 30 s timeout"
    assert outcomes["Deaths.test_d_next_passes"].kind == "pass"


def test_skips_on_one_or_all_ranks_and_every_result_belongs_to_its_own_test(case_log):
    outcomes = run_classes(faults.Skips)

    assert outcomes["Skips.test_a_skip_on_rank0_only"].kind == "skip"
    assert outcomes["Skips.test_a_skip_on_rank0_only"].message == "only rank 0 skips"
    # A worker's sys.exit(<registry code>) is a skip with the registry's message.
    assert outcomes["Skips.test_b_skip_code_on_all_ranks"].kind == "skip"
    assert outcomes["Skips.test_b_skip_code_on_all_ranks"].message == "Need at least 2 CUDA devices"
    # A failure on another rank beats a skip.
    mixed = outcomes["Skips.test_c_skip_and_failure"]
    assert mixed.kind == "fail" and "rank 1 fails while rank 0 skips" in mixed.message
    # Rank 0 was left in a collective its skipping peer never joined: still a skip,
    # decided within the grace period, and the pool is replaced.
    lonely = outcomes["Skips.test_d_skip_while_peer_in_collective"]
    assert lonely.kind == "skip" and lonely.message == "Skipped due to odd world size."
    assert lonely.seconds < 10
    # The next tests read their own results, not an earlier test's.
    own = outcomes["Skips.test_e_own_result"]
    assert own.kind == "fail"
    assert "test_e's own failure on rank 0" in own.message and "test_e's own failure on rank 1" in own.message
    assert outcomes["Skips.test_f_passes"].kind == "pass"


def test_destroying_the_shared_pg_fails_that_test_by_name_and_the_next_runs_on_a_fresh_pool(case_log):
    outcomes = run_classes(faults.DestroysPG)

    broke = outcomes["DestroysPG.test_a_destroys_shared_pg"]
    assert broke.kind == "error"
    assert "test_a_destroys_shared_pg destroyed or replaced the shared process group" in broke.message
    assert outcomes["DestroysPG.test_b_next_passes"].kind == "pass"
    before = set(pids_of(case_log, "test_a_destroys_shared_pg").values())
    after = set(pids_of(case_log, "test_b_next_passes").values())
    assert before and after and before.isdisjoint(after)


def test_teardown_is_bounded_and_escalates_to_sigkill(case_log, monkeypatch):
    import time

    monkeypatch.setenv("DISTLINT_TEST_TIMEOUT", "2")
    started = time.monotonic()
    outcomes = run_classes(faults.StubbornTeardown)
    elapsed = time.monotonic() - started

    assert outcomes["StubbornTeardown.test_passes"].kind == "pass"
    teardown = [o for name, o in outcomes.items() if name.startswith("tearDownClass")]
    assert len(teardown) == 1 and teardown[0].kind == "error"
    assert "did not finish tearDownClass within 2 s" in teardown[0].message
    # 2 s for tearDownClass, SIGTERM ignored for 2 s, then SIGKILL: bounded, not 120 s.
    assert elapsed < 20
    ranks = pids_of(case_log, "test_passes")
    assert len(ranks) == 2 and not any(alive(pid) for pid in ranks.values())

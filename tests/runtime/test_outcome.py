"""decide_outcome: the one function that turns every rank's story into one verdict."""

from __future__ import annotations

from distlint.runtime.outcome import Observation, Verdict, decide_outcome
from distlint.runtime.protocol import RankResult, Status

TEST = "mod.Class.test_x"


def result(rank, status=Status.PASSED, detail="", pg_intact=True):
    return RankResult(
        seq=7, test_id=TEST, rank=rank, status=status, detail=detail, pg_intact=pg_intact
    )


def decide(results, **kwargs):
    return decide_outcome(Observation(test_id=TEST, world_size=2, results=results, **kwargs))


def test_all_ranks_pass():
    outcome = decide({0: result(0), 1: result(1)})
    assert (outcome.verdict, outcome.pool_reusable) == (Verdict.PASS, True)


def test_an_assertion_on_one_rank_is_a_failure_with_its_traceback():
    outcome = decide(
        {0: result(0), 1: result(1, Status.FAILED, "Traceback ...\nAssertionError: 1 != 2")}
    )
    assert outcome.verdict is Verdict.FAIL
    assert "rank 1 failed:" in outcome.message and "AssertionError: 1 != 2" in outcome.message
    assert not outcome.pool_reusable


def test_an_exception_is_an_error():
    outcome = decide({0: result(0, Status.ERRORED, "RuntimeError: boom"), 1: result(1)})
    assert outcome.verdict is Verdict.ERROR and "rank 0 errored" in outcome.message


def test_skip_on_one_rank_skips_the_test_with_the_lowest_ranks_message():
    outcome = decide({0: result(0), 1: result(1, Status.SKIPPED, "Need at least 2 CUDA devices")})
    assert (outcome.verdict, outcome.message, outcome.pool_reusable) == (
        Verdict.SKIP,
        "Need at least 2 CUDA devices",
        True,
    )
    both = decide({0: result(0, Status.SKIPPED, "first"), 1: result(1, Status.SKIPPED, "second")})
    assert (both.verdict, both.message) == (Verdict.SKIP, "first")


def test_a_failure_beats_a_skip():
    outcome = decide(
        {0: result(0, Status.SKIPPED, "skip"), 1: result(1, Status.FAILED, "AssertionError")}
    )
    assert outcome.verdict is Verdict.FAIL


def test_skip_with_a_rank_cut_short_still_skips_but_replaces_the_pool():
    outcome = decide({1: result(1, Status.SKIPPED, "odd")}, stopped=[0])
    assert (outcome.verdict, outcome.pool_reusable) == (Verdict.SKIP, False)


def test_a_death_is_an_error_naming_rank_cause_and_stack():
    outcome = decide(
        {0: result(0)}, deaths={1: "was killed by SIGSEGV"}, death_stacks={1: 'File "t.py", line 3'}
    )
    assert outcome.verdict is Verdict.ERROR
    assert "rank 1 died during mod.Class.test_x: was killed by SIGSEGV" in outcome.message
    assert 'File "t.py", line 3' in outcome.message


def test_a_death_with_a_skip_code_is_a_skip():
    outcome = decide({0: result(0)}, death_skips={1: "Need at least 1 CUDA device"})
    assert (outcome.verdict, outcome.message, outcome.pool_reusable) == (
        Verdict.SKIP,
        "Need at least 1 CUDA device",
        False,
    )


def test_a_timeout_lists_the_hung_ranks_with_their_stacks():
    outcome = decide(
        {1: result(1)}, timed_out_after_s=3.0, hung_stacks={0: 'File "t.py", line 9 in test_x'}
    )
    assert outcome.verdict is Verdict.ERROR
    assert "timed out after 3 s; rank 0 did not finish" in outcome.message
    assert "line 9 in test_x" in outcome.message


def test_a_destroyed_pg_is_an_error_naming_the_test():
    outcome = decide({0: result(0, pg_intact=False), 1: result(1, pg_intact=False)})
    assert outcome.verdict is Verdict.ERROR and not outcome.pool_reusable
    assert (
        "mod.Class.test_x destroyed or replaced the shared process group on ranks 0, 1"
        in outcome.message
    )


def test_a_missing_result_is_never_a_pass():
    outcome = decide({0: result(0)})
    assert outcome.verdict is Verdict.ERROR and "rank 1 sent no result" in outcome.message

"""ReusedWorkersTest: a fresh PG per test on ranks spawned once (cases/reused_workers_case.py)."""

from __future__ import annotations

import warnings

import pytest

from distlint.runtime import rank_state

from .cases.caselog import read
from .support import load_case, run_classes

case = load_case("reused_workers_case")


@pytest.fixture(autouse=True)
def _scoped(run_scope):
    """Every test here checks for leaks through ``run_scope``."""


def _outcomes():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcomes = run_classes(case.FreshGroupPerTest)
    restored = [w for w in caught if issubclass(w.category, rank_state.RestoredStateWarning)]
    return {name.split(".")[1]: o for name, o in outcomes.items()}, restored


def test_each_test_creates_its_own_pg_on_ranks_spawned_once(case_log, run_scope):
    outcomes, restored = _outcomes()
    kinds = {name: outcome.kind for name, outcome in outcomes.items()}
    assert kinds == {
        "test_a_destroys_its_pg": "pass",
        "test_b_leaves_its_pg_and_a_group": "pass",
        "test_c_sets_pg_environment_first": "pass",
        "test_d_expects_its_collective_to_time_out": "pass",
        "test_e_fails_on_rank1": "fail",
        "test_f_after_a_failure": "pass",
        "test_g_skipped": "skip",
        "test_h_slow_rank_reads_the_store_after_rank0_is_done": "pass",
    }
    assert "rank 1 fails on purpose" in outcomes["test_e_fails_on_rank1"].message
    # What a test sets before creating its PG is expected of it: put back, not warned about.
    assert restored == []

    log = read(case_log)
    pids = {}
    for entry in log:
        pids.setdefault(entry["test"], {})[entry["rank"]] = entry["pid"]
    assert all(len(ranks) == 2 for ranks in pids.values())
    # One pool served a..e; the failure in e replaced it for f.
    first = pids["test_a_destroys_its_pg"]
    for test in ("test_b_leaves_its_pg_and_a_group", "test_c_sets_pg_environment_first"):
        assert pids[test] == first
    assert pids["test_e_fails_on_rank1"] == first
    assert set(pids["test_f_after_a_failure"].values()).isdisjoint(first.values())
    # Every test had a store file of its own, the same on every rank.
    files = {}
    for entry in log:
        files.setdefault(entry["test"], set()).add(entry["file_name"])
    assert all(len(names) == 1 for names in files.values())
    assert len({next(iter(names)) for names in files.values()}) == len(files)
    run_scope.assert_nothing_left()


def test_a_group_that_cannot_be_destroyed_replaces_the_ranks_but_keeps_the_verdict():
    from distlint.runtime.outcome import Observation, decide_outcome
    from distlint.runtime.protocol import RankResult, Status

    def result(rank, reusable):
        return RankResult(seq=1, test_id="t", rank=rank, status=Status.PASSED, reusable=reusable)

    kept = decide_outcome(
        Observation(test_id="t", world_size=2, results={0: result(0, True), 1: result(1, True)})
    )
    replaced = decide_outcome(
        Observation(test_id="t", world_size=2, results={0: result(0, True), 1: result(1, False)})
    )
    assert (kept.verdict.value, kept.pool_reusable) == ("pass", True)
    assert (replaced.verdict.value, replaced.pool_reusable) == ("pass", False)


def test_under_torchrun_the_class_is_skipped_and_says_why(monkeypatch):
    """A torchrun job has one PG for its whole life: a fresh PG per test cannot be given there."""
    import unittest

    from distlint.runtime import reused_workers
    from distlint.runtime.role import Role

    monkeypatch.setattr(reused_workers, "current_role", lambda: Role.INLINE)
    try:
        case.FreshGroupPerTest.setUpClass()
    except unittest.SkipTest as skip:
        assert "creates a process group per test on reused ranks" in str(skip)
        assert "torchrun" in str(skip)
    else:
        raise AssertionError("setUpClass ran under torchrun")

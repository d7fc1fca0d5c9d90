"""Continuous classes look to test code like torch's MultiProcContinuousTest, and share pools."""

from __future__ import annotations

import os

import pytest

from distlint.runtime import continuous, pool_registry
from distlint.runtime.resolve import plan_for_class

from .cases.caselog import read
from .support import load_case, run_classes

surface = load_case("surface")


def entries(log, cls=None, test=None):
    return [
        e
        for e in read(log)
        if (cls is None or e["cls"] == cls) and (test is None or e["test"] == test)
    ]


def test_rank_world_pg_and_fixtures_as_torch_tests_expect(case_log):
    outcomes = run_classes(surface.Lifecycle)
    assert {k: v.kind for k, v in outcomes.items()} == {
        "Lifecycle.test_world": "pass",
        "Lifecycle.test_same_seed_on_every_rank": "pass",
    }
    world = entries(case_log, test="test_world")
    assert sorted(e["rank"] for e in world if "prepared" in e) == [0, 1]
    for e in (e for e in world if "prepared" in e):
        assert e["prepared"] == f"setUp on {e['rank']}"  # setUp ran on the rank
        assert e["world_size"] == 2  # world_size declared as a property
        assert e["class_sum"] == 2.0  # setUpClass ran on the ranks, with a collective
        assert e["pg_is_default"] is True
        assert (e["dist_rank"], e["dist_world"], e["env_rank"]) == (e["rank"], 2, str(e["rank"]))
        assert (e["backend"], e["backend_str"], e["device_type"], e["main_rank"]) == (
            "gloo",
            "gloo",
            "cpu",
            -1,
        )
    teardowns = [e for e in world if e.get("phase") == "tearDown"]
    assert sorted(e["rank"] for e in teardowns) == [0, 1]  # tearDown ran on every rank
    # tearDownClass ran on every rank when the class ended.
    for rank in (0, 1):
        with open(f"{case_log}.teardown.{rank}") as handle:
            assert handle.read() == "2.0"


def test_classes_with_the_same_config_share_one_pool(case_log):
    outcomes = run_classes(surface.SharedA, surface.SharedB)
    assert [o.kind for o in outcomes.values()] == ["pass", "pass"]
    pids_a = {e["rank"]: e["pid"] for e in entries(case_log, cls="SharedA")}
    pids_b = {e["rank"]: e["pid"] for e in entries(case_log, cls="SharedB")}
    assert len(pids_a) == 2 and pids_a == pids_b
    assert os.getpid() not in pids_a.values()  # bodies never run in the dispatcher


def test_subclass_of_a_concrete_class_runs_on_its_own_correct_pool(case_log, run_scope):
    outcomes = run_classes(surface.Base, surface.SubBigger, surface.SubSame)

    # Base's last test killed one of its ranks; the subclasses do not care.
    assert outcomes["Base.test_z_crash_rank1"].kind == "error"
    assert "exited with code 5" in outcomes["Base.test_z_crash_rank1"].message
    for name in ("Base.test_where", "SubBigger.test_where", "SubSame.test_where"):
        assert outcomes[name].kind == "pass", outcomes[name].message
    assert outcomes["SubBigger.test_z_crash_rank1"].kind == "pass"
    assert outcomes["SubSame.test_z_crash_rank1"].kind == "pass"

    bigger = entries(case_log, cls="SubBigger", test="test_where")
    assert sorted(e["rank"] for e in bigger) == [0, 1, 2]
    assert {e["world_size"] for e in bigger} == {3} and {e["sum"] for e in bigger} == {3.0}
    same = entries(case_log, cls="SubSame", test="test_where")
    assert sorted(e["rank"] for e in same) == [0, 1] and {e["sum"] for e in same} == {2.0}
    base_ranks = {e["rank"]: e["pid"] for e in entries(case_log, cls="Base", test="test_where")}
    assert base_ranks and set(base_ranks.values()).isdisjoint(
        e["pid"] for e in same
    )  # a new pool, not Base's
    run_scope.assert_ranks_gone(base_ranks)  # the pool whose rank crashed, its survivor included
    run_scope.assert_nothing_left()


def test_decorators_skip_in_the_dispatcher_or_on_the_rank_with_registry_messages(case_log):
    started_before = pool_registry.stats()["pools_started"]
    outcomes = run_classes(surface.Decorated)
    kinds = {k.split(".")[1]: (v.kind, v.message) for k, v in outcomes.items()}

    assert kinds["test_needs_gpu"] == ("skip", "Need at least 1 CUDA device")
    assert kinds["test_gpu_per_rank"] == ("skip", "CUDA is not available.")
    assert kinds["test_needs_nccl"] == ("skip", "c10d not compiled with NCCL support")
    assert kinds["test_gloo_even"] == ("pass", "")
    assert kinds["test_three_ranks"] == ("pass", "")
    assert kinds["test_worker_side_skip_code"] == ("skip", "Need at least 4 CUDA devices")

    ran = {e["test"] for e in entries(case_log)}
    # Skips decided in the dispatcher never reached a rank.
    assert ran.isdisjoint({"test_needs_gpu", "test_gpu_per_rank", "test_needs_nccl"})
    assert not [e for e in entries(case_log) if e.get("ran")]
    three = entries(case_log, test="test_three_ranks")
    assert sorted(e["rank"] for e in three) == [0, 1, 2] and {e["sum"] for e in three} == {3.0}
    assert (
        pool_registry.stats()["pools_started"] - started_before <= 2
    )  # world size 2 and 3, nothing per test


def test_a_class_with_its_own_opts_gets_its_own_pool(case_log):
    plan = plan_for_class(surface.NoGlooOptions)
    assert plan.config.options_owner is not None
    assert plan_for_class(surface.SharedA).config.options_owner is None
    outcomes = run_classes(surface.SharedA, surface.NoGlooOptions)
    assert [o.kind for o in outcomes.values()] == ["pass", "pass"], outcomes
    shared = {e["pid"] for e in entries(case_log, cls="SharedA")}
    own = {e["pid"] for e in entries(case_log, cls="NoGlooOptions")}
    assert len(own) == 2 and shared.isdisjoint(own)


def test_gloo_options_reach_self_pg_and_the_default_group_stays(case_log):
    """torch's init_process_group builds gloo without the class's options (threads, devices);
    self.pg is a ProcessGroupGloo built from them, as the per-test tests built theirs."""
    outcomes = run_classes(surface.GlooThreadsOptions)
    assert [o.kind for o in outcomes.values()] == ["pass"], outcomes
    logged = entries(case_log, cls="GlooThreadsOptions")
    assert sorted(e["rank"] for e in logged) == [0, 1]
    for entry in logged:
        assert (entry["threads"], entry["is_world"], entry["total"]) == (3, False, 4.0)
        assert entry["world_threads"] != 3  # what init_process_group made of the options


def test_ranks_that_cannot_build_the_pg_fail_or_skip_every_test_without_hanging(
    case_log, run_scope, monkeypatch
):
    # A pool may take 300 s to start here, so that waiting it out would fail the hang guard below.
    monkeypatch.setattr(pool_registry, "MIN_STARTUP_TIMEOUT_S", 300.0)
    outcomes = run_classes(surface.OptsRaise, surface.OptsRaiseOnOneRank, surface.OptsSkip)
    lonely = outcomes["OptsRaiseOnOneRank.test_one"]
    assert lonely.kind == "error" and "RuntimeError: rank 1 has no options" in lonely.message
    # Hang guard: rank 0, left waiting in the rendezvous, got the grace period, not the start-up timeout.
    assert lonely.seconds < 150
    for name in ("OptsRaise.test_one", "OptsRaise.test_two"):
        assert outcomes[name].kind == "error"
        assert "could not start" in outcomes[name].message
        assert "RuntimeError: options cannot be built here" in outcomes[name].message
    assert (outcomes["OptsSkip.test_one"].kind, outcomes["OptsSkip.test_one"].message) == (
        "skip",
        "Test skipped because no GPU peer access",
    )
    assert entries(case_log) == []  # no test body ran anywhere
    run_scope.assert_nothing_left()  # every rank that could not join, and the one left waiting, is gone


def test_unittest_skip_and_expected_failure_keep_their_meaning(case_log):
    outcomes = run_classes(surface.UnittestMarkers)
    assert (
        outcomes["UnittestMarkers.test_skipped"].kind,
        outcomes["UnittestMarkers.test_skipped"].message,
    ) == (
        "skip",
        "not today",
    )
    expected = outcomes["UnittestMarkers.test_expected_failure"]
    assert expected.kind == "expected_failure" and "known bug on rank 1" in expected.message
    assert outcomes["UnittestMarkers.test_unexpected_success"].kind == "unexpected_success"
    assert "test_skipped" not in {e["test"] for e in entries(case_log)}  # decided here, never sent


def test_tests_compare_as_on_torchs_testcase_and_slow_tests_stay_skipped(case_log, monkeypatch):
    """Migrated tests were written for torch's TestCase: the same assertEqual (a float 1e-16 off
    passes, a DTensor with other placements fails), its helpers, and its disabled/slow-test check,
    made before any rank is asked."""
    from torch.testing._internal import common_utils

    monkeypatch.setattr(common_utils, "TEST_WITH_SLOW", False)
    # What PyTorch's CI imports with --import-disabled-tests (the class name matches by prefix,
    # so an entry for the per-test class also disables its continuous counterpart).
    monkeypatch.setattr(
        common_utils,
        "disabled_tests_dict",
        {
            "test_disabled (__main__.TorchComparisons)": (
                "https://github.com/pytorch/pytorch/issues/1",
                [],
            )
        },
    )
    outcomes = run_classes(surface.TorchComparisons)
    assert outcomes["TorchComparisons.test_float_within_tolerance"].kind == "pass", outcomes
    placements = outcomes["TorchComparisons.test_dtensor_placements_differ"]
    assert placements.kind == "fail" and "placements do not match" in placements.message, placements
    slow = outcomes["TorchComparisons.test_slow"]  # torch's slowTest skips on the ranks
    assert slow.kind == "skip" and "PYTORCH_TEST_WITH_SLOW" in slow.message
    disabled = outcomes["TorchComparisons.test_disabled"]
    assert disabled.kind == "skip" and "issues/1" in disabled.message
    ran = {e["test"] for e in entries(case_log)}
    assert (
        "test_float_within_tolerance" in ran and "test_disabled" not in ran
    )  # decided here, never sent


def test_worker_env_is_set_before_the_pg_and_keys_the_pool(case_log):
    """``worker_env``: the ranks start with it (a worker adopts its environment before it builds
    the PG), and the pool is its own."""
    assert "TORCH_GLOO_LAZY_INIT" not in os.environ
    outcomes = run_classes(surface.SharedA, surface.WithWorkerEnv)
    assert [o.kind for o in outcomes.values()] == ["pass", "pass"], outcomes
    declared = entries(case_log, cls="WithWorkerEnv")
    assert sorted(e["rank"] for e in declared) == [0, 1]
    assert {(e["lazy"], e["mark"]) for e in declared} == {("1", "declared")}
    shared = {e["pid"] for e in entries(case_log, cls="SharedA")}
    assert shared.isdisjoint(e["pid"] for e in declared)
    assert "TORCH_GLOO_LAZY_INIT" not in os.environ  # the dispatcher's own environment is untouched


def test_worker_env_must_map_strings_to_strings():
    class Bad(continuous.MultiProcContinuousTest):
        worker_env = {"TORCH_GLOO_LAZY_INIT": 1}

    from distlint.runtime.resolve import declared_environment

    with pytest.raises(ValueError, match=r"Bad.worker_env must map str to str"):
        declared_environment(Bad)

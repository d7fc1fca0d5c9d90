"""Resolving a class's declarations into a pool config, a skip, and a start method."""

from __future__ import annotations

import unittest
from datetime import timedelta

import pytest

import distlint.runtime
from distlint.runtime import MultiProcContinuousTest, environment, start_method
from distlint.runtime.resolve import PG_TIMEOUT_MARGIN_S, plan_for_class, timeout_seconds
from distlint.runtime.worker_pool import PoolStartError, PoolState


def make(backend=..., **attrs):
    namespace = dict(attrs)
    if backend is not ...:
        namespace["backend_str"] = classmethod(lambda cls: backend)
    return type("Probe", (MultiProcContinuousTest,), namespace)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(environment, "cuda_device_count", lambda: 0)


@pytest.fixture
def two_gpus_with_nccl(monkeypatch):
    monkeypatch.setattr(environment, "cuda_device_count", lambda: 2)
    real = environment.backend_available
    monkeypatch.setattr(environment, "backend_available", lambda name: name == "nccl" or real(name))


def test_the_misspelled_name_is_a_deprecated_alias_of_the_same_class():
    with pytest.warns(
        DeprecationWarning,
        match="MultiProcContinousTest is a deprecated alias.*use MultiProcContinuousTest",
    ):
        from distlint.runtime import MultiProcContinousTest  # distlint: ignore[DL302]
    assert MultiProcContinousTest is MultiProcContinuousTest
    with pytest.warns(DeprecationWarning):
        # The misspelled alias is what this test is about.
        alias = distlint.runtime.MultiProcContinousTest  # distlint: ignore[DL302]
        assert alias is MultiProcContinuousTest
    # Documented, not advertised: star imports and __all__ leave it out.
    assert "MultiProcContinousTest" not in distlint.runtime.__all__
    assert "MultiProcContinousTest" not in vars(distlint.runtime)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        _ = distlint.runtime.NoSuchName


def test_gloo_defaults_to_two_cpu_ranks(no_gpu):
    config = plan_for_class(make("gloo")).config
    assert (config.backend, config.world_size, config.bind_cuda, config.device_type) == (
        "gloo",
        2,
        False,
        "cpu",
    )


def test_world_size_as_class_attribute_or_property(no_gpu):
    assert plan_for_class(make("gloo", world_size=3)).config.world_size == 3
    prop = make("gloo", world_size=property(lambda self: 4))
    assert plan_for_class(prop).config.world_size == 4
    with pytest.raises(ValueError, match="world_size must be a positive int"):
        plan_for_class(make("gloo", world_size=-1))


def test_a_world_size_of_zero_skips_the_class(no_gpu):
    """``min(4, torch.cuda.device_count())`` without GPUs: torch's per-test class spawns no rank
    and passes having tested nothing; the continuous class says it could not run."""
    plan = plan_for_class(make("gloo", world_size=property(lambda self: 0)))
    assert plan.config is None and "world_size is 0 on this machine" in plan.skip.message
    assert plan.skip.exit_code == 73  # torch's small_worldsize code


def test_none_backend_is_gloo_without_cuda(no_gpu):
    config = plan_for_class(make(None)).config
    assert (config.backend, config.backend_name, config.world_size) == ("gloo", "gloo", 2)


def test_none_backend_is_nccl_when_every_rank_gets_a_gpu(two_gpus_with_nccl):
    config = plan_for_class(make(None)).config
    assert (config.backend, config.backend_name, config.world_size, config.bind_cuda) == (
        None,
        "nccl",
        2,
        True,
    )
    assert config.device_type == "cuda"
    # Three ranks cannot each have a GPU: gloo.
    assert plan_for_class(make(None, world_size=3)).config.backend == "gloo"


def test_nccl_defaults_to_the_gpu_count_and_skips_when_short(two_gpus_with_nccl):
    config = plan_for_class(make("nccl")).config
    assert (config.backend, config.world_size, config.bind_cuda) == ("nccl", 2, True)
    plan = plan_for_class(make("nccl", world_size=4))
    assert plan.config is None and plan.skip.message == "Need at least 4 CUDA devices"


def test_nccl_without_nccl_or_gpus_is_a_registry_skip(monkeypatch):
    monkeypatch.setattr(environment, "backend_available", lambda name: name != "nccl")
    assert plan_for_class(make("nccl")).skip.exit_code == 76
    monkeypatch.setattr(environment, "backend_available", lambda name: True)
    monkeypatch.setattr(environment, "cuda_device_count", lambda: 0)
    assert plan_for_class(make("nccl")).skip.message == "CUDA is not available."


def test_unavailable_backend_skips(monkeypatch):
    monkeypatch.setattr(environment, "backend_available", lambda name: False)
    plan = plan_for_class(make("mpi"))
    assert plan.skip.exit_code == 72


def test_timeout_from_class_or_environment(monkeypatch):
    monkeypatch.delenv("DISTLINT_TEST_TIMEOUT", raising=False)
    cls = make("gloo", timeout=timedelta(seconds=7))
    assert timeout_seconds(cls) == 7.0
    assert plan_for_class(cls).config.pg_timeout_s == 7.0 + PG_TIMEOUT_MARGIN_S
    monkeypatch.setenv("DISTLINT_TEST_TIMEOUT", "2.5")
    assert timeout_seconds(cls) == 2.5
    monkeypatch.setenv("DISTLINT_TEST_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DISTLINT_TEST_TIMEOUT='soon' is not a number"):
        timeout_seconds(cls)
    monkeypatch.setenv("DISTLINT_TEST_TIMEOUT", "-1")
    with pytest.raises(ValueError, match="must be positive"):
        timeout_seconds(cls)


def test_setupclass_skips_before_any_process_starts(monkeypatch):
    from distlint.runtime import pool_registry

    monkeypatch.setattr(environment, "backend_available", lambda name: name != "nccl")
    cls = make("nccl")
    before = pool_registry.stats()["pools_started"]
    with pytest.raises(unittest.SkipTest, match="c10d not compiled with NCCL support"):
        cls.setUpClass()
    assert pool_registry.stats()["pools_started"] == before


def test_start_method_choice_and_override(monkeypatch):
    monkeypatch.delenv("DISTLINT_START_METHOD", raising=False)
    monkeypatch.setattr(environment, "cuda_build_version", lambda: None)
    monkeypatch.setattr(environment, "cuda_initialized_here", lambda: False)
    monkeypatch.setattr(start_method, "_forkserver_failed", False)
    assert start_method.choose_start_method() == "forkserver"
    monkeypatch.setattr(environment, "cuda_build_version", lambda: (12, 8))
    assert start_method.choose_start_method() == "spawn"
    assert "12.8" in start_method.forkserver_unsafe_reason()
    monkeypatch.setattr(environment, "cuda_build_version", lambda: (12, 6))
    monkeypatch.setattr(environment, "cuda_initialized_here", lambda: True)
    assert start_method.choose_start_method() == "spawn"
    monkeypatch.setattr(environment, "cuda_initialized_here", lambda: False)
    monkeypatch.setattr(start_method, "python_version", lambda: (3, 14))
    assert start_method.choose_start_method() == "spawn"
    monkeypatch.setenv("DISTLINT_START_METHOD", "forkserver")
    assert start_method.choose_start_method() == "forkserver"
    monkeypatch.setenv("DISTLINT_START_METHOD", "fork")
    with pytest.raises(ValueError, match="expected 'spawn' or 'forkserver'"):
        start_method.choose_start_method()


def test_a_failed_fork_server_falls_back_to_spawn(monkeypatch):
    monkeypatch.delenv("DISTLINT_START_METHOD", raising=False)
    monkeypatch.setattr(start_method, "_forkserver_failed", False)
    monkeypatch.setattr(environment, "cuda_build_version", lambda: None)
    monkeypatch.setattr(environment, "cuda_initialized_here", lambda: False)
    start_method.record_forkserver_failure()
    assert start_method.choose_start_method() == "spawn"


class FakePool:
    """Stands in for WorkerPool: the fork server fails to start, spawn works."""

    started: list = []

    def __init__(self, config, method):
        self.method = method
        self.state = PoolState.NEW

    def start(self, timeout_s, preload=()):
        FakePool.started.append(self.method)
        if self.method == "forkserver":
            raise PoolStartError("fork server died", retry_with_spawn=self.retry)
        self.state = PoolState.READY

    def close(self, graceful=True):
        self.state = PoolState.CLOSED


@pytest.fixture
def fake_pools(monkeypatch):
    import collections

    from distlint.runtime import pool_registry

    monkeypatch.setattr(pool_registry, "WorkerPool", FakePool)
    monkeypatch.setattr(pool_registry, "_pools", collections.OrderedDict())
    monkeypatch.setattr(start_method, "_forkserver_failed", False)
    monkeypatch.setattr(start_method, "forkserver_unsafe_reason", lambda: None)
    monkeypatch.delenv("DISTLINT_START_METHOD", raising=False)
    FakePool.started = []
    return pool_registry


def test_a_fork_server_that_fails_to_start_falls_back_to_spawn_for_good(fake_pools, monkeypatch):
    monkeypatch.setattr(FakePool, "retry", True, raising=False)
    pool = fake_pools._start_pool("a pool config", 1.0)
    assert FakePool.started == ["forkserver", "spawn"] and pool.method == "spawn"
    assert start_method.choose_start_method() == "spawn"  # remembered for later pools


def test_no_fallback_when_the_ranks_themselves_failed_or_the_user_chose(fake_pools, monkeypatch):
    monkeypatch.setattr(FakePool, "retry", False, raising=False)
    with pytest.raises(PoolStartError):
        fake_pools._start_pool("a pool config", 1.0)
    assert FakePool.started == ["forkserver"]
    monkeypatch.setattr(FakePool, "retry", True, raising=False)
    monkeypatch.setenv("DISTLINT_START_METHOD", "forkserver")
    with pytest.raises(PoolStartError):
        fake_pools._start_pool("a pool config", 1.0)
    assert FakePool.started == ["forkserver", "forkserver"]

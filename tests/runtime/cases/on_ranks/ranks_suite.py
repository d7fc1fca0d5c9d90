"""``@on_ranks`` tests covering the fault contract, run by tests/runtime/test_on_ranks.py under plain
``python -m pytest`` (this file is not collected by the suite itself).

Every rank appends one JSON line (test, rank, pid) to $DISTLINT_CASE_LOG, so the outer test can
tell which pool ran what.
"""

import json
import os
import time

import pytest
import torch
import torch.distributed as dist

from distlint.runtime import on_ranks


def record(test, rank, **fields):
    path = os.environ.get("DISTLINT_CASE_LOG")
    if path:
        with open(path, "a") as handle:
            handle.write(json.dumps(dict(test=test, rank=rank, pid=os.getpid(), **fields)) + "\n")


@on_ranks(2, backend="gloo")
def test_all_reduce(rank, world_size):
    record("test_all_reduce", rank, ppid=os.getppid())
    t = torch.ones(1) * (rank + 1)
    dist.all_reduce(t)
    assert t.item() == 3 and world_size == 2


@on_ranks(2, backend="gloo")
def test_leaks_process_state(rank):
    # Nothing restores these: the ranks put them back after the test (and warn, naming it).
    torch.set_default_dtype(torch.float64)
    os.environ["DISTLINT_ON_RANKS_LEAK"] = "1"


@on_ranks(2, backend="gloo")
def test_gets_a_fresh_process_state(rank):
    assert torch.get_default_dtype() == torch.float32
    assert "DISTLINT_ON_RANKS_LEAK" not in os.environ


@on_ranks(4, backend="gloo")
def test_world_of_four(rank, world_size, pg, device):
    record("test_world_of_four", rank)
    t = torch.tensor([float(rank)], device=device)
    dist.all_reduce(t, group=pg)
    assert (world_size, dist.get_world_size(pg), device.type, t.item()) == (4, 4, "cpu", 6.0)


@on_ranks(2, backend="gloo")
@pytest.mark.parametrize("n", [1, 3])
def test_parametrized(rank, n):
    record(f"test_parametrized[{n}]", rank)
    t = torch.full((n,), float(rank))
    dist.all_reduce(t)
    assert t.tolist() == [1.0] * n


@on_ranks(2, backend="gloo")
def test_fixtures_by_value(rank, shared_config, tmp_path):
    record("test_fixtures_by_value", rank)
    assert shared_config["greeting"] == "hello from conftest"
    assert os.getpid() != shared_config["pytest_pid"]  # a rank, not the pytest process
    (tmp_path / f"rank{rank}").write_text(shared_config["greeting"])
    dist.barrier()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank0", "rank1"]


@on_ranks(2, backend="gloo")
def test_fails_on_rank_1(rank):
    record("test_fails_on_rank_1", rank)
    value = rank * 10
    assert value == 0


@on_ranks(2, backend="gloo")
def test_after_failure(rank):
    record("test_after_failure", rank)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == 2


@on_ranks(2, backend="gloo", timeout=3)
def test_hangs_on_rank_0(rank):
    record("test_hangs_on_rank_0", rank)
    if rank == 0:
        time.sleep(120)  # past the timeout: every rank's stack, and a new pool
    dist.barrier()


@on_ranks(2, backend="gloo")
def test_after_hang(rank):
    record("test_after_hang", rank)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == 2


@on_ranks(2, backend="gloo")
def test_rank_1_dies(rank):
    record("test_rank_1_dies", rank)
    if rank == 1:
        os._exit(3)
    dist.barrier()  # waits for a peer that is gone: the test still ends at once


@on_ranks(2, backend="gloo")
def test_after_death(rank):
    record("test_after_death", rank)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == 2


@on_ranks(2, backend="gloo")
def test_skips(rank):
    record("test_skips", rank)
    pytest.skip("not on this machine")


class TestMethods:
    @on_ranks(2, backend="gloo")
    def test_method(self, rank, world_size):
        record("TestMethods.test_method", rank)
        t = torch.ones(1)
        dist.all_reduce(t)
        assert t.item() == world_size


@on_ranks(2, backend="gloo")
class TestDecoratedClass:
    def test_each_method_runs_on_the_ranks(self, rank):
        record("TestDecoratedClass.test_each_method_runs_on_the_ranks", rank)
        t = torch.tensor([float(rank)])
        dist.all_reduce(t)
        assert t.item() == 1


@on_ranks(2, backend="gloo")
def test_sleeps_for_ctrl_c(rank):
    # Run alone by the Ctrl-C test (-k): it signals pytest once both ranks are here.
    marker = os.environ.get("DISTLINT_CASE_MARKER")
    if not marker:
        pytest.skip("run by the Ctrl-C test only")
    # Written whole, then renamed: the test reads it as soon as it exists.
    with open(f"{marker}.{rank}.tmp", "w") as handle:
        handle.write(str(os.getpid()))
    os.replace(f"{marker}.{rank}.tmp", f"{marker}.{rank}")
    time.sleep(120)


def test_rank_outside_on_ranks(rank):
    pass  # never runs: asking for `rank` here is an error


@on_ranks(2, backend="gloo")
def test_fixture_that_does_not_pickle(rank, lock):
    pass  # never runs: the fixture cannot reach the ranks

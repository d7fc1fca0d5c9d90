"""Continuous classes that use the surface tests written for torch's class use."""

import os
import sys
import unittest
from datetime import timedelta

import torch
import torch.distributed as dist

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from caselog import record  # noqa: E402
from torch.testing._internal.common_utils import slowTest  # noqa: E402

from distlint.runtime import (  # noqa: E402
    TEST_SKIPS,
    MultiProcContinuousTest,
    require_world_size,
    requires_gloo,
    requires_nccl,
    skip_if_lt_x_gpu,
    skip_if_no_gpu,
    skip_if_odd_worldsize,
)


class Lifecycle(MultiProcContinuousTest):
    """Class fixtures and per-test fixtures run on the ranks; the world is visible everywhere."""

    timeout = timedelta(seconds=30)

    @classmethod
    def backend_str(cls):
        return "gloo"

    @property
    def world_size(self):
        return 2

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if cls.rank != cls.MAIN_PROCESS_RANK and cls.rank >= 0:
            t = torch.ones(1)
            dist.all_reduce(t)  # collectives are allowed in setUpClass on the ranks
            cls.class_sum = t.item()

    @classmethod
    def tearDownClass(cls):
        if cls.rank >= 0:
            marker = os.environ["DISTLINT_CASE_LOG"] + f".teardown.{cls.rank}"
            with open(marker, "w") as handle:
                handle.write(str(cls.class_sum))
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.prepared = f"setUp on {self.rank}"

    def tearDown(self):
        record(self, phase="tearDown")
        super().tearDown()

    def test_world(self):
        record(
            self,
            prepared=self.prepared,
            class_sum=self.class_sum,
            pg_is_default=self.pg is dist.group.WORLD,
            dist_rank=dist.get_rank(),
            dist_world=dist.get_world_size(),
            env_rank=os.environ["RANK"],
            backend=dist.get_backend(),
            backend_str=self.backend_str(),
            device_type=self.device_type(),
            main_rank=self.MAIN_PROCESS_RANK,
        )
        self.assertEqual(dist.get_rank(), self.rank)

    def test_same_seed_on_every_rank(self):
        mine = torch.rand(4)
        gathered = [torch.zeros(4) for _ in range(self.world_size)]
        dist.all_gather(gathered, mine)
        self.assertEqual(gathered[0], gathered[1])


class SharedA(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_where(self):
        record(self)


class SharedB(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_where(self):
        record(self)


class Base(MultiProcContinuousTest):
    world_size = 2

    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_where(self):
        t = torch.ones(1)
        dist.all_reduce(t)
        record(self, sum=t.item())

    def test_z_crash_rank1(self):
        if self.rank == 1 and type(self) is Base:
            os._exit(5)  # leaves Base's pool dead: subclasses must not care


class SubBigger(Base):
    world_size = 3


class SubSame(Base):
    pass


class Decorated(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "gloo"

    @skip_if_lt_x_gpu(1)
    def test_needs_gpu(self):
        record(self)

    @skip_if_no_gpu
    def test_gpu_per_rank(self):
        record(self)

    @requires_nccl()
    def test_needs_nccl(self):
        record(self)

    @requires_gloo()
    @skip_if_odd_worldsize
    def test_gloo_even(self):
        record(self)

    @require_world_size(3)
    def test_three_ranks(self):
        t = torch.ones(1)
        dist.all_reduce(t)
        record(self, sum=t.item())

    def test_worker_side_skip_code(self):
        # The same decorator called inside a rank, where the dispatcher could not
        # know: a plain function exiting with the registry's code.
        @skip_if_lt_x_gpu(4)
        def needs_four_gpus():
            record(self, ran=True)

        needs_four_gpus()


class NoGlooOptions(MultiProcContinuousTest):
    """opts() returning options gives the class its own pool."""

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def opts(cls, high_priority_stream=False):
        return dist.ProcessGroupGloo._Options()

    def test_where(self):
        record(self)


class GlooThreadsOptions(MultiProcContinuousTest):
    """gloo options reach self.pg (torch's init_process_group would drop them)."""

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def opts(cls):
        opts = dist.ProcessGroupGloo._Options()
        opts._threads = 3
        return opts

    def test_pg_has_the_options(self):
        tensor = torch.ones(1)
        self.pg.allreduce([tensor]).wait()
        dist.all_reduce(tensor)  # the default group is there too
        record(
            self,
            threads=self.pg.options._threads,
            is_world=self.pg is dist.group.WORLD,
            world_threads=dist.group.WORLD._get_backend(torch.device("cpu")).options._threads,
            total=tensor.item(),
        )


class OptsRaise(MultiProcContinuousTest):
    """opts() fails on the ranks: every test errors with that traceback, none hangs."""

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def opts(cls, high_priority_stream=False):
        raise RuntimeError("options cannot be built here")

    def test_one(self):
        record(self)

    def test_two(self):
        record(self)


class OptsRaiseOnOneRank(MultiProcContinuousTest):
    """Only rank 1 cannot build its options; rank 0 is left waiting in the rendezvous."""

    timeout = timedelta(seconds=60)

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def opts(cls, high_priority_stream=False):
        if os.environ.get("RANK") == "1":
            raise RuntimeError("rank 1 has no options")
        return dist.ProcessGroupGloo._Options()

    def test_one(self):
        record(self)


class OptsSkip(MultiProcContinuousTest):
    """opts() exits with a skip code (torch code does this): every test skips with its message."""

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def opts(cls, high_priority_stream=False):
        sys.exit(TEST_SKIPS["no_peer_access"].exit_code)

    def test_one(self):
        record(self)


class UnittestMarkers(MultiProcContinuousTest):
    """unittest's own decorators keep their meaning on a continuous class."""

    @classmethod
    def backend_str(cls):
        return "gloo"

    @unittest.skip("not today")
    def test_skipped(self):
        record(self)

    @unittest.expectedFailure
    def test_expected_failure(self):
        record(self)
        if self.rank == 1:
            self.fail("known bug on rank 1")

    @unittest.expectedFailure
    def test_unexpected_success(self):
        record(self)


class TorchComparisons(MultiProcContinuousTest):
    """What torch's TestCase gives the tests migrated from its per-test classes: its assertEqual
    (tolerances for Python floats, DTensor placements), its helpers, its slow-test marker."""

    world_size = 2

    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_float_within_tolerance(self):
        record(self)
        self.assertEqual(1.4220500840710912e-16, 0.0)  # unittest's == would fail this
        self.assertEqualIgnoreType(torch.ones(2, dtype=torch.int64), torch.ones(2))

    def test_dtensor_placements_differ(self):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor

        record(self)
        mesh = init_device_mesh("cpu", (self.world_size,))
        full = torch.arange(4.0)
        # The same values, other placements: torch's assertEqual fails (a value-only check passes).
        self.assertEqual(
            distribute_tensor(full, mesh, [Shard(0)]), distribute_tensor(full, mesh, [Replicate()])
        )

    @slowTest
    def test_slow(self):
        record(self)

    def test_disabled(self):  # listed in the disabled tests of the outer test
        record(self)


class WithWorkerEnv(MultiProcContinuousTest):
    """Declares the environment its ranks start with (what a per-test setUp set before spawning)."""

    worker_env = {"TORCH_GLOO_LAZY_INIT": "1", "DISTLINT_CASE_MARK": "declared"}

    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_where(self):
        record(
            self,
            lazy=os.environ.get("TORCH_GLOO_LAZY_INIT"),
            mark=os.environ.get("DISTLINT_CASE_MARK"),
        )

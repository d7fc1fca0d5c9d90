"""``FSDPContinuousTest``: torch's ``FSDPTestMixin`` helpers and ``FSDPTest``'s per-test steps
on distlint's continuous class.

What ``distlint migrate`` gives tests of ``FSDPTest`` (``--runtime distlint``). ``FSDPTest``
spawns ``DEVICE_COUNT`` ranks per test and, in each, inits the PG with torch's
``DISTRIBUTED_BACKEND``, then: barrier, ``torch._dynamo.reset()``, ``set_rng_seed()``, the
test, ``torch._dynamo.reset()``, barrier. Here the PG is the class's; every test still gets
the barriers, the dynamo resets and the seed (the runtime seeds every test like
``set_rng_seed``), and a machine with fewer accelerators than ranks skips the class with the
same "multi-gpu-N" skip ``FSDPTest`` exits with.

Imported only by test files that use it (it imports torch's FSDP test helpers).
"""

from __future__ import annotations

import os
import unittest
from typing import Any

import torch
import torch.distributed as dist
from torch.testing._internal.common_fsdp import DEVICE_COUNT, DISTRIBUTED_BACKEND, FSDPTestMixin

from .continuous import MultiProcContinuousTest
from .resolve import ClassPlan, declared_world_size
from .role import Role, current_role
from .skips import gpu_skip


class FSDPContinuousTest(FSDPTestMixin, MultiProcContinuousTest):
    """Many FSDP tests on one pool of ``DEVICE_COUNT`` ranks and one PG."""

    world_size = DEVICE_COUNT

    @classmethod
    def backend_str(cls) -> str:
        return DISTRIBUTED_BACKEND

    @classmethod
    def setUpClass(cls) -> None:
        if current_role() is not Role.WORKER:
            # FSDPTest.setUp sets this before spawning: NCCL's workCleanupLoop makes tests flaky.
            os.environ["TORCH_NCCL_DESYNC_DEBUG"] = "0"
        super().setUpClass()

    def _test_plan(self, body: Any) -> ClassPlan:
        # FSDPTest._run: fewer accelerators than ranks -> each test skips (even on CPU), with
        # the "multi-gpu-N" skip; decided here, before any rank starts.
        world_size = (
            declared_world_size(type(self)) or DEVICE_COUNT
        )  # a class attribute or a property
        if torch.accelerator.device_count() < world_size:
            raise unittest.SkipTest(gpu_skip(world_size).message)
        return super()._test_plan(body)

    @property
    def process_group(self) -> dist.ProcessGroup:
        return dist.distributed_c10d._get_default_group()

    def setUp(self) -> None:
        super().setUp()
        # FSDPTest._run: every rank has finished the previous test before this one starts.
        dist.barrier()
        torch._dynamo.reset()

    def tearDown(self) -> None:
        torch._dynamo.reset()
        dist.barrier()
        super().tearDown()

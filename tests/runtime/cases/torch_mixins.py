"""Torch's DTensor and FSDP test mixins on distlint's continuous class (gloo, CPU)."""

import io
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.tensor import _random as dtensor_random
from torch.testing._internal.distributed._tensor.common_dtensor import (
    NUM_DEVICES,
    DTensorTestMixin,
    LocalDTensorContinuousTestBase,
    create_local_tensor_test_class,
)

from distlint.runtime import MultiProcContinuousTest
from distlint.runtime.torch_dtensor import DTensorContinuousTest
from distlint.runtime.torch_fsdp import FSDPContinuousTest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from caselog import record  # noqa: E402


class MixinOnRuntime(DTensorTestMixin, MultiProcContinuousTest):
    """The shape a user writes by hand: torch's mixin first, world size from its module constant."""

    world_size = NUM_DEVICES

    def test_mesh_and_distribute(self):
        mesh = self.build_device_mesh()
        tensor = distribute_tensor(torch.arange(8.0), mesh, [Shard(0)])
        self.assertEqual(tensor.full_tensor(), torch.arange(8.0))
        record(self, device_type=self.device_type, mesh=mesh.size())


class DTensorHelpers(DTensorContinuousTest):
    def setUp(self):
        super().setUp()
        # The barrier a suite's setUp may add: setUp runs on the ranks, on the shared PG.
        dist.barrier()

    def test_helpers(self):
        self.init_manual_seed_for_rank()
        mesh = self.build_device_mesh()
        self._test_op(mesh, torch.add, torch.ones(4), torch.ones(4))
        seen = []
        self.run_subtests({"value": [1, 2]}, lambda value: seen.append(value))
        record(
            self,
            device_type=self.device_type,
            device_call=type(self).device_type(),
            subtests=seen,
            world=dist.get_world_size(),
        )

    def test_saved_dtensor_loads_with_weights_only(self):
        # The mesh pickles the device type it was built with: torch.load(weights_only=True)
        # takes a builtin str only, as torch's own DTensorTestBase gives.
        mesh = self.build_device_mesh()
        tensor = distribute_tensor(torch.arange(8.0), mesh, [Shard(0)])
        buffer = io.BytesIO()
        torch.save(tensor, buffer)
        buffer.seek(0)
        self.assertEqual(torch.load(buffer, weights_only=True), tensor)
        record(self, device_type_class=type(self.device_type).__name__)

    def test_random_op_leaves_a_tracker(self):
        # On CUDA meshes the first random DTensor op creates the tracker; CPU meshes have none,
        # so stand in for it.
        mesh = self.build_device_mesh()
        distribute_tensor(torch.empty(8, 8), mesh, [Replicate()]).uniform_()
        if dtensor_random._rng_tracker is None:
            dtensor_random._rng_tracker = object()
        record(self, tracker=dtensor_random._rng_tracker is not None)

    def test_random_op_tracker_starts_empty(self):
        # Runs after the test above (alphabetical order): its tracker must be gone, as in a fresh rank.
        record(self, tracker=dtensor_random._rng_tracker is not None)


LOCAL_RUNS = []  # (pid, local tensor mode): this class runs in the process that runs the test


class LocalSource(DTensorContinuousTest):
    def test_in_local_tensor_mode(self):
        mesh = self.build_device_mesh()
        tensor = distribute_tensor(torch.arange(8.0), mesh, [Shard(0)])
        self.assertEqual(tensor.full_tensor(), torch.arange(8.0))
        LOCAL_RUNS.append((os.getpid(), self.is_local_tensor_enabled))


# torch's own shape for a continuous class's local-tensor twin: every rank simulated in this process.
LocalSourceWithLocalTensor = create_local_tensor_test_class(
    LocalSource, base_class=LocalDTensorContinuousTestBase
)


class FSDPHelpers(FSDPContinuousTest):
    def test_skipped_on_cpu(self):
        record(self, ran=True)

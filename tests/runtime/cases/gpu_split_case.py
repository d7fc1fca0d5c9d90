"""Per-test NCCL classes under pytest-xdist with --distlint-fast-start: each worker on its own GPUs.

Run by scripts/gpu_check.sh (GPU machines only).  Every rank records which xdist
worker it belongs to, what CUDA_VISIBLE_DEVICES it got and the UUID of the GPU it
used; the script checks that no two workers used the same GPU.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from caselog import record  # noqa: E402


class GpuShare(MultiProcessTestCase):
    @property
    def world_size(self):
        # This worker's share of the GPUs (counted through NVML: no CUDA context here), at most 2.
        return max(1, min(2, torch.cuda.device_count()))

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def _all_reduce_on_own_gpu(self):
        torch.cuda.set_device(self.rank)
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("nccl", rank=self.rank, world_size=self.world_size, store=store)
        t = torch.ones(4, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        record(
            self,
            worker=os.environ.get("PYTEST_XDIST_WORKER", ""),
            visible=os.environ.get("CUDA_VISIBLE_DEVICES", ""),
            uuid=str(torch.cuda.get_device_properties(self.rank).uuid),
            ppid=os.getppid(),
        )
        self.assertEqual(t.tolist(), [float(self.world_size)] * 4)


for _index in range(4):
    setattr(GpuShare, f"test_{_index}", GpuShare._all_reduce_on_own_gpu)

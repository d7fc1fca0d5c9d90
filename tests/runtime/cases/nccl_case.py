"""NCCL continuous tests, world size 1 and 2.

On a machine without GPUs (or a CPU-only torch) every test here must be
*skipped* through the registry, decided before any worker starts.  On a GPU
machine (scripts/gpu_check.sh) they must pass, each rank on its own GPU.

Run directly: python tests/runtime/cases/nccl_case.py -v
"""

import os
import sys

import torch
import torch.distributed as dist

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
)  # the repo, when run as a script

from distlint.runtime import MultiProcContinuousTest, run_tests, skip_if_lt_x_gpu  # noqa: E402


class NcclCase(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "nccl"

    def test_rank_owns_its_gpu(self):
        self.assertEqual(self.device_type(), "cuda")
        self.assertEqual(torch.cuda.current_device(), self.rank)

    def test_all_reduce(self):
        t = torch.full((4,), float(self.rank + 1), device=f"cuda:{self.rank}")
        dist.all_reduce(t)
        expected = self.world_size * (self.world_size + 1) / 2
        self.assertEqual(t, torch.full((4,), expected, device=f"cuda:{self.rank}"))

    def test_barrier_and_broadcast(self):
        t = torch.arange(3, device=f"cuda:{self.rank}", dtype=torch.float32) + self.rank
        dist.broadcast(t, src=0)
        dist.barrier()
        self.assertEqual(t.cpu(), torch.arange(3, dtype=torch.float32))


class NcclWorldSize1(NcclCase):
    world_size = 1


@skip_if_lt_x_gpu(2)
class NcclWorldSize2(NcclCase):
    world_size = 2


if __name__ == "__main__":
    run_tests()

"""A small suite run as a whole process: python file.py, -m unittest, -m pytest, torchrun.

Its outcomes are fixed (5 pass, 1 fail, 1 skip) so every way of running it
can be compared with every other.
"""

import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from caselog import record  # noqa: E402

from distlint.runtime import MultiProcContinuousTest, run_tests  # noqa: E402


class CliCase(MultiProcContinuousTest):
    timeout = timedelta(seconds=20)

    @classmethod
    def backend_str(cls):
        return "gloo"

    def summed(self):
        t = torch.ones(2) * (self.rank + 1)
        dist.all_reduce(t)
        return t

    def test_passes_a(self):
        record(self)
        self.assertEqual(self.summed(), torch.full((2,), 3.0))

    def test_passes_b(self):
        record(self)
        self.assertEqual(dist.get_world_size(), 2)

    def test_fails_on_rank1(self):
        record(self)
        total = self.summed()  # both ranks finish the collective first
        if self.rank == 1:
            self.assertEqual(total.tolist(), [0.0, 0.0], "rank 1 expected zeros")

    def test_skips_on_rank0(self):
        record(self)
        if self.rank == 0:
            self.skipTest("rank 0 skips")

    def test_z_after_failure(self):
        record(self)
        self.assertEqual(self.summed(), torch.full((2,), 3.0))


class CliOther(MultiProcContinuousTest):
    @classmethod
    def backend_str(cls):
        return "gloo"

    def test_other_passes(self):
        record(self)
        t = torch.ones(1)
        dist.all_reduce(t)
        self.assertEqual(t.item(), 2.0)

    def test_world_size(self):
        record(self)
        self.assertEqual((self.world_size, dist.get_world_size()), (2, 2))


if __name__ == "__main__":
    run_tests()

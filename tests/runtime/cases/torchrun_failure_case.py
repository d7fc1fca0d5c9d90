"""Under torchrun, rank 1 fails an assertion while rank 0 waits for it in dist.barrier().

The class timeout is far longer than the outer test lets the run take: the
failure must cost seconds (rank 0's barrier is abandoned), and the test after
it must still run on both ranks.
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


class BarrierAfterFailure(MultiProcContinuousTest):
    timeout = timedelta(seconds=600)

    @classmethod
    def backend_str(cls):
        return "gloo"

    def summed(self):
        t = torch.ones(2) * (self.rank + 1)
        dist.all_reduce(t)
        return t.tolist()

    def test_a_passes(self):
        record(self)
        self.assertEqual(self.summed(), [3.0, 3.0])

    def test_b_rank1_fails_while_rank0_waits_in_barrier(self):
        record(self)
        if self.rank == 1:
            self.assertEqual(self.rank, 0, "rank 1 fails before the barrier")
        dist.barrier()  # rank 0 waits here for a peer that never comes

    def test_c_runs_after_the_failure(self):
        record(self)
        self.assertEqual(self.summed(), [3.0, 3.0])


if __name__ == "__main__":
    run_tests()

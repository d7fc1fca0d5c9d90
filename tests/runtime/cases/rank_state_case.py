"""A continuous class whose first test leaks process-wide state and whose second expects none.

Run per test, each test gets a fresh process and both pass; on the shared ranks of a
continuous class the second passes only if the ranks put back what the first changed.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist

from distlint.runtime import MultiProcContinuousTest, run_tests

#: The variable the leaking test sets and the next test expects absent.
PROBE = "DISTLINT_RANK_STATE_PROBE"


class LeakThenExpectFresh(MultiProcContinuousTest):
    timeout = timedelta(seconds=60)
    world_size = 2

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # On the ranks: what a fresh rank has (setUpClass's own changes would stay).
        cls.fresh_cwd = os.getcwd()
        cls.fresh_groups = len(dist.distributed_c10d._world.pg_map) if dist.is_initialized() else 0

    def test_a_leaks_process_wide_state(self):
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.set_default_device("cpu")
        os.environ[PROBE] = "leaked"
        os.chdir(tempfile.gettempdir())
        dist.new_group([0, 1])  # every rank creates it; nobody destroys it

    def test_b_sees_what_a_fresh_process_has(self):
        self.assertEqual(torch.get_default_dtype(), torch.float32)
        self.assertTrue(torch.is_grad_enabled())
        self.assertFalse(torch.are_deterministic_algorithms_enabled())
        self.assertIsNone(getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None))
        self.assertNotIn(PROBE, os.environ)
        self.assertEqual(os.getcwd(), self.fresh_cwd)
        self.assertEqual(len(dist.distributed_c10d._world.pg_map), self.fresh_groups)
        tensor = torch.ones(2)
        dist.all_reduce(tensor, group=self.pg)  # the class's shared group is still there
        self.assertEqual(tensor, torch.full((2,), 2.0))

    def test_c_puts_back_what_it_changes(self):
        dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            self.assertEqual(torch.ones(1).dtype, torch.float64)
        finally:
            torch.set_default_dtype(dtype)


if __name__ == "__main__":
    run_tests()

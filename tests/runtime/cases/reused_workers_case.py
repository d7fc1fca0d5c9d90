"""ReusedWorkersTest: tests that create, destroy and break their own PG, on ranks spawned once.

Each test is written as on torch's MultiProcessTestCase (its PG from ``self.file_name``); the
outer tests (``test_reused_workers.py``) check that the ranks were reused, that every test
started without a PG and with a fresh environment, and that a failing test's ranks were
replaced.
"""

import os
import sys
import time
import unittest
from datetime import timedelta

import torch
import torch.distributed as dist

from distlint.runtime import ReusedWorkersTest, run_tests

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)  # workers load this file by path; caselog sits next to it
from caselog import record  # noqa: E402

#: What test_c sets and later tests must not see.
PROBE = "TORCH_NCCL_DISTLINT_PROBE"


class FreshGroupPerTest(ReusedWorkersTest):
    timeout = timedelta(seconds=60)

    @property
    def world_size(self):
        return 2

    def tearDown(self):
        # What torch's CommonDistributedDataParallelTest does (per test it ran in the parent,
        # after every rank had exited): it must not pull the store from under a slower rank.
        try:
            os.remove(self.file_name)
        except OSError:
            pass
        super().tearDown()

    def _store(self):
        return dist.FileStore(self.file_name, self.world_size)

    def _fresh(self):
        """What a new per-test rank has: no PG, none of an earlier test's environment."""
        record(self, file_name=self.file_name)
        self.assertFalse(dist.is_initialized())
        self.assertNotIn(PROBE, os.environ)
        self.assertEqual(dist.get_debug_level(), dist.DebugLevel.OFF)

    def test_a_destroys_its_pg(self):
        self._fresh()
        dist.init_process_group("gloo", store=self._store(), rank=self.rank, world_size=2)
        tensor = torch.ones(2) * (self.rank + 1)
        dist.all_reduce(tensor)
        self.assertEqual(tensor.tolist(), [3.0, 3.0])
        dist.destroy_process_group()

    def test_b_leaves_its_pg_and_a_group(self):
        self._fresh()
        dist.init_process_group(
            "gloo", init_method=f"file://{self.file_name}", rank=self.rank, world_size=2
        )
        dist.new_group([0, 1])
        dist.barrier()

    def test_c_sets_pg_environment_first(self):
        self._fresh()
        os.environ[PROBE] = "1"
        os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
        dist.set_debug_level_from_env()
        dist.init_process_group(
            "gloo", store=self._store(), rank=self.rank, world_size=2, timeout=timedelta(seconds=20)
        )
        self.assertEqual(dist.get_debug_level(), dist.DebugLevel.DETAIL)
        dist.barrier()

    def test_d_expects_its_collective_to_time_out(self):
        self._fresh()
        store = self._store()
        # A long timeout to connect (a loaded machine), a short one for the collective.
        pg = dist.ProcessGroupGloo(store, self.rank, 2, timedelta(seconds=30))
        if self.rank == 0:
            opts = dist.AllreduceOptions()
            opts.timeout = timedelta(seconds=1)
            with self.assertRaisesRegex(RuntimeError, "[Tt]imed out|[Tt]imeout"):
                pg.allreduce([torch.ones(1)], opts).wait()
            store.set("rank-0-timed-out", "1")
        else:
            # Rank 1 keeps its end of the PG, never joining the collective, until rank 0 is done:
            # dropping it at once closed its sockets under rank 0 while rank 0 was still in gloo's
            # handshake ("Connection closed by peer"), and the PG's creation failed instead.
            store.wait(["rank-0-timed-out"], timedelta(seconds=30))

    def test_e_fails_on_rank1(self):
        self._fresh()
        dist.init_process_group("gloo", store=self._store(), rank=self.rank, world_size=2)
        dist.barrier()
        self.assertEqual(self.rank, 0, "rank 1 fails on purpose")

    def test_f_after_a_failure(self):
        self._fresh()
        dist.init_process_group("gloo", store=self._store(), rank=self.rank, world_size=2)
        dist.barrier()

    def test_h_slow_rank_reads_the_store_after_rank0_is_done(self):
        self._fresh()
        store = self._store()
        store.set_timeout(timedelta(seconds=3))
        if self.rank == 0:
            store.set("ready", "1")
            return
        time.sleep(0.5)
        self.assertEqual(store.get("ready"), b"1")

    @unittest.skipIf(True, "skipped in the dispatcher, no rank asked")
    def test_g_skipped(self):
        pass


if __name__ == "__main__":
    run_tests()

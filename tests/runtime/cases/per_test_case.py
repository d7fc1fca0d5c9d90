"""A PyTorch-style per-test suite: torch's own MultiProcessTestCase, fresh ranks and a fresh PG per test.

Written as files in PyTorch's test/distributed/ are (nothing in it knows about
distlint but the main block), with the tests that must stay per-test: they
abort, destroy and re-create the PG, set TORCH_NCCL_* / TORCH_DISTRIBUTED_DEBUG
in the dispatcher just before the ranks start, exit with a skip code, fail on
one rank.  Two tests prove that every test gets fresh processes: the first
changes everything a process carries (module globals, os.environ, dynamo
config, torch defaults, the default PG), the second fails if it sees any of it.

Every test records where it ran (caselog: rank, pid, parent pid); the outer
tests read outcomes from the JUnit XML report, the same under spawn
(DISTLINT_FAST_START=0) and under fast start.
"""

import multiprocessing
import os
import sys
import time

import torch
import torch._dynamo
import torch.distributed as dist
from torch.testing._internal.common_distributed import TEST_SKIPS, MultiProcessTestCase

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from caselog import record  # noqa: E402

from distlint.runtime import run_tests  # noqa: E402

# What test_a_changes_process_state changes; test_b_... fails if it sees any of it.
MODULE_STATE = {"touched": False}
LEFTOVER_ENV = "DISTLINT_CASE_LEFTOVER"
DEFAULT_CACHE_SIZE_LIMIT = torch._dynamo.config.cache_size_limit
# Set in the dispatcher by setUp, right before the ranks start, as suites do.
RANK_ENV = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3", "TORCH_DISTRIBUTED_DEBUG": "DETAIL"}


class PerTestCase(MultiProcessTestCase):
    @property
    def world_size(self):
        return 2

    def setUp(self):
        super().setUp()
        if self._testMethodName == "test_env_set_before_spawn_reaches_the_ranks":
            os.environ.update(RANK_ENV)
        self._spawn_processes()

    def tearDown(self):
        super().tearDown()
        for name in RANK_ENV:
            os.environ.pop(name, None)

    def _record(self, **fields):
        # A spawned rank's parent is the dispatcher; a fast-start rank's is the fork server.
        record(self, ppid=os.getppid(), dispatcher=multiprocessing.parent_process().pid, **fields)

    def _init_pg(self, prefix=""):
        # One FileStore per test: a second one on the same file races with the first one's cleanup.
        if getattr(self, "_store", None) is None:
            self._store = dist.FileStore(self.file_name, self.world_size)
        store = dist.PrefixStore(prefix, self._store) if prefix else self._store
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)

    def _all_reduce(self):
        t = torch.ones(2) * (self.rank + 1)
        dist.all_reduce(t)
        return t.tolist()

    def test_a_changes_process_state(self):
        self._record()
        self._init_pg()  # and leaves it initialised
        marker = os.environ.get("DISTLINT_CASE_MARKER")
        if marker:  # the outer test signals the dispatcher while the ranks are here
            with open(f"{marker}.{self.rank}.tmp", "w") as handle:
                handle.write(str(os.getpid()))
            os.replace(f"{marker}.{self.rank}.tmp", f"{marker}.{self.rank}")
            time.sleep(120)
        MODULE_STATE["touched"] = True
        os.environ[LEFTOVER_ENV] = "1"
        torch._dynamo.config.cache_size_limit = DEFAULT_CACHE_SIZE_LIMIT + 1
        torch.set_default_dtype(torch.float64)
        self.assertEqual(self._all_reduce(), [3.0, 3.0])

    def test_b_sees_fresh_process_state(self):
        self._record()
        leftovers = {
            "module global": MODULE_STATE["touched"],
            "os.environ": LEFTOVER_ENV in os.environ,
            "dynamo config": torch._dynamo.config.cache_size_limit != DEFAULT_CACHE_SIZE_LIMIT,
            "default dtype": torch.get_default_dtype() != torch.float32,
            "default PG": dist.is_initialized(),
        }
        self.assertEqual([name for name, left in leftovers.items() if left], [])

    def test_env_set_before_spawn_reaches_the_ranks(self):
        self._record()
        self.assertEqual({name: os.environ.get(name) for name in RANK_ENV}, RANK_ENV)
        self.assertEqual(dist.get_debug_level(), dist.DebugLevel.DETAIL)
        self._init_pg()
        self.assertEqual(self._all_reduce(), [3.0, 3.0])

    def test_destroy_and_recreate_the_pg(self):
        self._record()
        self._init_pg("first/")
        self.assertEqual(self._all_reduce(), [3.0, 3.0])
        dist.destroy_process_group()
        self.assertFalse(dist.is_initialized())
        self._init_pg("second/")
        self.assertEqual(self._all_reduce(), [3.0, 3.0])

    def test_abort_the_pg_and_start_another(self):
        self._record()
        self._init_pg("first/")
        self.assertEqual(self._all_reduce(), [3.0, 3.0])
        dist.distributed_c10d._abort_process_group()
        self.assertFalse(dist.is_initialized())
        self._init_pg("second/")
        self.assertEqual(self._all_reduce(), [3.0, 3.0])

    def test_exits_with_a_skip_code(self):
        self._record()
        sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)

    def test_fails_on_rank_1(self):
        self._record()
        self._init_pg()
        total = self._all_reduce()  # both ranks finish the collective first
        if self.rank == 1:
            self.assertEqual(total, [0.0, 0.0], "rank 1 disagrees")


if __name__ == "__main__":
    run_tests()

"""Per-test tests whose ranks leave right after the PG is up, with fast start's forked ranks (which
leave with ``os._exit`` at once). gloo's ``init_process_group`` returns on a rank once its own pairs
are connected; a rank that leaves then can close its sockets under a peer still finishing the
handshake ("Connection closed by peer"): the peer exits with an error and torch fails the test.

* ``SkipAfterInit``: every rank exits with torch's skip code, PG still up, as ``@with_comms`` +
  ``@skip_if_lt_x_gpu`` do in PyTorch's DTensor files. All four tests must skip.
* ``PassAfterInit``: the ranks pass with no collective that connects every pair, as tests that
  only check how a PG was built, or broadcast from one rank, do; torch destroys a rank's PG the
  moment its test returns. All must pass. ``test_a_passing_rank_stays_while_a_peer_works`` shows
  the wait itself, without the handshake's timing: rank 1 finds rank 0, whose test passed a
  second ago, still there. A rank that a test ends with ``os._exit`` counts itself in as done on
  its way, so its peers need not wait for it (``test_b_a_rank_ending_with_os_exit_is_counted_done``).
"""

import os
import sys
import time

import torch.distributed as dist
from torch.distributed.distributed_c10d import _get_default_store
from torch.testing._internal.common_distributed import TEST_SKIPS, MultiProcessTestCase

from distlint.runtime.peer_wait import EXIT_KEY


def _state(pid: int) -> str:
    """The process's state letter (``Z``: exited, not yet reaped); raises when it is gone."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


class _FourGlooRanks(MultiProcessTestCase):
    @property
    def world_size(self) -> int:
        return 4

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def _init(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
        return store


class SkipAfterInit(_FourGlooRanks):
    def _skip_after_init(self):
        self._init()
        sys.exit(TEST_SKIPS["multi-gpu-4"].exit_code)

    def test_a(self):
        self._skip_after_init()

    def test_b(self):
        self._skip_after_init()

    def test_c(self):
        self._skip_after_init()

    def test_d(self):
        self._skip_after_init()


class PassAfterInit(_FourGlooRanks):
    def test_a_passing_rank_stays_while_a_peer_works(self):
        store = self._init()
        if self.rank == 0:
            store.set("rank-0-pid", str(os.getpid()))
            return
        pid = int(store.get("rank-0-pid"))
        time.sleep(1.0)
        self.assertNotEqual(_state(pid), "Z")

    def test_b_a_rank_ending_with_os_exit_is_counted_done(self):
        self._init()
        dist.barrier()
        if self.rank != 0:
            os._exit(0)
        store, deadline = _get_default_store(), time.monotonic() + 30
        while store.add(EXIT_KEY, 0) < self.world_size - 1:
            self.assertLess(time.monotonic(), deadline, "the ranks that left are not counted")
            time.sleep(0.01)

    def test_init_only_b(self):
        self._init()

    def test_init_only_c(self):
        self._init()

    def test_init_only_d(self):
        self._init()

    def test_init_only_e(self):
        self._init()

    def test_init_only_f(self):
        self._init()

    def test_init_only_g(self):
        self._init()

    def test_init_only_h(self):
        self._init()

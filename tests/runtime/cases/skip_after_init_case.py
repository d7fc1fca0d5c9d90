"""Per-test tests that skip right after the PG is up, as ``@with_comms`` + ``@skip_if_lt_x_gpu``
do in PyTorch's DTensor files: every rank builds the gloo PG, then exits with torch's skip code at
once, PG still up. A rank that leaves at once can close its sockets under a peer still finishing
gloo's handshake ("Connection closed by peer"): the peer exits with an error and torch fails the
test instead of skipping it.
"""

import sys

import torch.distributed as dist
from torch.testing._internal.common_distributed import TEST_SKIPS, MultiProcessTestCase


class SkipAfterInit(MultiProcessTestCase):
    @property
    def world_size(self) -> int:
        return 4

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def _skip_after_init(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
        sys.exit(TEST_SKIPS["multi-gpu-4"].exit_code)

    def test_a(self):
        self._skip_after_init()

    def test_b(self):
        self._skip_after_init()

    def test_c(self):
        self._skip_after_init()

    def test_d(self):
        self._skip_after_init()

"""Continuous classes that misbehave on purpose: the fault contract's cases.

Loaded by the outer tests (tests/runtime/test_faults.py), never collected by
pytest itself (the file name does not start with test_).
"""

import ctypes
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)  # workers load this file by path; caselog sits next to it

from caselog import record  # noqa: E402

from distlint.runtime import TEST_SKIPS, MultiProcContinuousTest, RegistrySkip, skip_for_name  # noqa: E402


class GlooCase(MultiProcContinuousTest):
    timeout = timedelta(seconds=30)

    @classmethod
    def backend_str(cls):
        return "gloo"

    def all_reduce_ones(self):
        t = torch.ones(2)
        dist.all_reduce(t)
        return t


class FailThenPass(GlooCase):
    def test_a_fails_on_rank1(self):
        record(self)
        if self.rank == 1:
            self.assertEqual("rank1-value", "expected-value", "rank 1 disagrees")
        self.all_reduce_ones()  # rank 0 waits here for a peer that already failed

    def test_b_next_passes(self):
        record(self)
        self.assertEqual(self.all_reduce_ones(), torch.full((2,), 2.0))


class Hangs(GlooCase):
    timeout = timedelta(seconds=60)  # the outer test sets DISTLINT_TEST_TIMEOUT=6

    def test_a_sleeps_on_rank0(self):
        record(self)
        if self.rank == 0:
            time.sleep(60)

    def test_b_collective_peer_never_joins(self):
        record(self)
        if self.rank == 0:
            self.all_reduce_ones()

    def test_c_next_passes(self):
        record(self)
        self.assertEqual(self.all_reduce_ones(), torch.full((2,), 2.0))


class Deaths(GlooCase):
    def test_a_exit_code(self):
        record(self)
        if self.rank == 1:
            os._exit(3)
        self.all_reduce_ones()

    def test_b_sigkill(self):
        record(self)
        if self.rank == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(20)

    def test_c_segfault(self):
        record(self)
        if self.rank == 1:
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        self.all_reduce_ones()

    def test_d_next_passes(self):
        record(self)
        self.assertEqual(self.all_reduce_ones(), torch.full((2,), 2.0))


class Skips(GlooCase):
    def test_a_skip_on_rank0_only(self):
        record(self)
        if self.rank == 0:
            self.skipTest("only rank 0 skips")

    def test_b_skip_code_on_all_ranks(self):
        record(self)
        sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)

    def test_c_skip_and_failure(self):
        record(self)
        if self.rank == 0:
            raise RegistrySkip(skip_for_name("no_cuda"))
        self.fail("rank 1 fails while rank 0 skips")

    def test_d_skip_while_peer_in_collective(self):
        record(self)
        if self.rank == 1:
            sys.exit(TEST_SKIPS["odd_worldsize"].exit_code)
        self.all_reduce_ones()  # never completes: rank 1 left

    def test_e_own_result(self):
        record(self)
        self.fail(f"test_e's own failure on rank {self.rank}")

    def test_f_passes(self):
        record(self)
        self.assertEqual(self.all_reduce_ones(), torch.full((2,), 2.0))


class DestroysPG(GlooCase):
    def test_a_destroys_shared_pg(self):
        record(self)
        dist.destroy_process_group()

    def test_b_next_passes(self):
        record(self)
        self.assertIs(dist.group.WORLD, self.pg)
        self.assertEqual(self.all_reduce_ones(), torch.full((2,), 2.0))


class StubbornTeardown(GlooCase):
    """tearDownClass hangs on the ranks and ignores SIGTERM: only SIGKILL ends them."""

    timeout = timedelta(seconds=60)  # the outer test sets DISTLINT_TEST_TIMEOUT=5

    @classmethod
    def tearDownClass(cls):
        if cls.rank >= 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(120)
        super().tearDownClass()

    def test_passes(self):
        record(self)

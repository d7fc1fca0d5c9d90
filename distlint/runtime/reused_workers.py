"""ReusedWorkersTest: per-test process groups on ranks spawned once per class.

For tests that cannot share one process group but do not need fresh processes: they destroy
or abort their PG, set ``TORCH_NCCL_*`` or debug levels before creating it, pass their own
timeout or options, create several groups, or expect a collective to fail. Each test body runs
as written on a rank of torch's ``MultiProcessTestCase``: ``self.rank``, ``self.world_size``
and ``self.file_name`` (a store file of its own), and it creates its own PG. What the pool
adds is that the ranks are spawned once (with the fork server, in milliseconds), and after each
test every rank destroys the groups the test left and gets back the process-wide state it had
(:mod:`distlint.runtime.rank_state`: environment, debug level, default dtype...). A rank that
died, hung, failed, or could not put away its groups is replaced before the next test.

Not for tests that kill a rank or expect a rank to exit (they stay per test), and not under
torchrun (each torchrun process is one rank of one job; such a class is skipped there).

    class ProcessGroupGlooTest(ReusedWorkersTest):
        @property
        def world_size(self):
            return 2

        def test_timeout(self):
            store = dist.FileStore(self.file_name, self.world_size)
            pg = dist.ProcessGroupGloo(store, self.rank, self.world_size, timeout=timedelta(seconds=1))
            ...
"""

from __future__ import annotations

import unittest
from datetime import timedelta
from typing import ClassVar

from .continuous import MultiProcContinuousTest
from .resolve import DEFAULT_FRESH_PG_WORLD_SIZE
from .role import Role, current_role


class ReusedWorkersTest(MultiProcContinuousTest):
    """A TestCase whose tests each create their own process group, on ranks the class reuses."""

    # How resolve.py recognises this class without importing it (markers.FRESH_PG_ATTR).
    _distlint_fresh_pg: ClassVar[bool] = True
    #: torch's MultiProcessTestCase default (DEFAULT_WORLD_SIZE) when the class sets none.
    world_size: int = DEFAULT_FRESH_PG_WORLD_SIZE
    #: torch's per-test default (common_distributed's TIMEOUT_DEFAULT); $DISTLINT_TEST_TIMEOUT overrides.
    timeout: timedelta = timedelta(seconds=300)
    #: The test's store file on a rank (set before ``setUp``), as torch's per-test ranks get it.
    file_name: str = ""
    #: As on torch's MultiProcessTestCase; the rank destroys what a test leaves either way.
    destroy_pg_upon_exit: ClassVar[bool] = True

    @classmethod
    def backend_str(cls) -> str | None:
        """None: the ranks hold no PG; each test picks its backend when it creates its own."""
        return None

    @classmethod
    def setUpClass(cls) -> None:
        if current_role() is Role.INLINE:
            raise unittest.SkipTest(
                f"{cls.__qualname__} creates a process group per test on reused ranks, "
                "which a torchrun job (one PG for its whole life) cannot give it"
            )
        super().setUpClass()

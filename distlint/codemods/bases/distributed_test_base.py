"""``DistributedTestBase`` (and ``DynamoDistributedMultiProcTestCase``, one of them): per-test
workers; a test gets its PG from ``self.create_pg(device)``, whose device picks the backend.

Its tests move to ``MultiProcContinuousTest`` like those of ``MultiProcessTestCase``:
``pg = self.create_pg("cpu")`` becomes ``pg = self.pg`` and the class carries the backend
(``backend_str()``) the device chose. ``DistributedTestBase`` keeps MultiProcessTestCase's
world size; ``DynamoDistributedMultiProcTestCase`` has one rank per accelerator, which is what
both continuous bases start when a class declares none.
"""

from __future__ import annotations

from distlint.codemods.bases.multi_process_test_case import DEFAULT_WORLD_SIZE, TARGETS
from distlint.codemods.bases.spec import PerTestBase

BASE = PerTestBase(
    name="DistributedTestBase",
    targets=TARGETS,
    default_world_size={"distlint": DEFAULT_WORLD_SIZE, "torch": DEFAULT_WORLD_SIZE},
)
DYNAMO_BASE = PerTestBase(
    name="DynamoDistributedMultiProcTestCase",
    targets=TARGETS,
    default_world_size={},
)

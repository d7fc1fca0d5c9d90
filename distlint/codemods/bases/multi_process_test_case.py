"""``MultiProcessTestCase``: per-test workers spawned by ``setUp``; each test creates its own PG.

Its tests move to a class deriving from ``MultiProcContinuousTest`` (``distlint.runtime``'s
or torch's), which starts the workers and the PG once per class, from class-level facts.
"""

from __future__ import annotations

from distlint.analysis.pg.class_eligibility import MULTI_PROCESS_TEST_CASE
from distlint.codemods.bases.spec import PerTestBase, Target
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_DISTRIBUTED_TESTING

CONTINUOUS_BASE = "MultiProcContinuousTest"
#: The continuous base per ``--runtime`` (also the targets of DistributedTestBase).
TARGETS = {"distlint": Target(DISTLINT_RUNTIME, CONTINUOUS_BASE),
           "torch": Target(TORCH_DISTRIBUTED_TESTING, CONTINUOUS_BASE)}
#: MultiProcessTestCase's world size for a class that sets none.
DEFAULT_WORLD_SIZE = Target(TORCH_DISTRIBUTED_TESTING, "DEFAULT_WORLD_SIZE")

BASE = PerTestBase(
    name=MULTI_PROCESS_TEST_CASE,
    targets=TARGETS,
    default_world_size={"distlint": DEFAULT_WORLD_SIZE, "torch": DEFAULT_WORLD_SIZE},
)

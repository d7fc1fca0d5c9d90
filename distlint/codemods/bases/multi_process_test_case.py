"""``MultiProcessTestCase``: per-test workers spawned by ``setUp``; each test creates its own PG.

Its tests move to a class deriving from ``MultiProcContinuousTest`` (``distlint.runtime``'s
or torch's), which starts the workers and the PG once per class, from class-level facts.
"""

from __future__ import annotations

import json

import libcst as cst

from distlint.analysis.pg.class_eligibility import MULTI_PROCESS_TEST_CASE
from distlint.codemods.bases.spec import PerTestBase, Target
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_DISTRIBUTED_TESTING

CONTINUOUS_BASE = "MultiProcContinuousTest"
#: The continuous base per ``--runtime`` (also the targets of DistributedTestBase).
TARGETS = {
    "distlint": Target(DISTLINT_RUNTIME, CONTINUOUS_BASE),
    "torch": Target(TORCH_DISTRIBUTED_TESTING, CONTINUOUS_BASE),
}
#: MultiProcessTestCase's world size for a class that sets none.
DEFAULT_WORLD_SIZE = Target(TORCH_DISTRIBUTED_TESTING, "DEFAULT_WORLD_SIZE")

BASE = PerTestBase(
    name=MULTI_PROCESS_TEST_CASE,
    targets=TARGETS,
    default_world_size={"distlint": DEFAULT_WORLD_SIZE, "torch": DEFAULT_WORLD_SIZE},
)


#: The class attribute ``distlint.runtime.MultiProcContinuousTest`` reads the ranks' environment from.
WORKER_ENV = "worker_env"


def environment_statements(environment: dict[str, str], runtime: str) -> list[cst.BaseStatement]:
    """What a continuous class needs so its ranks start with the environment the per-test ``setUp``
    set before spawning: ``worker_env`` with distlint's runtime; with torch's, which spawns the ranks
    in the first test's ``setUp``, ``setUpClass`` sets the variables and a class cleanup puts them
    back (cleanups run last in, first out, so a subclass's and its base's nest; the caller imports
    ``os`` and ``unittest.mock``)."""
    if not environment:
        return []
    literal = (
        "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in environment.items()) + "}"
    )
    if runtime == "distlint":
        return [cst.parse_statement(f"{WORKER_ENV} = {literal}\n")]
    setup = cst.parse_statement(
        "@classmethod\n"
        "def setUpClass(cls):\n"
        "    # torch starts the ranks in the first test's setUp: they inherit this environment.\n"
        "    super().setUpClass()\n"
        f"    environment = unittest.mock.patch.dict(os.environ, {literal})\n"
        "    environment.start()\n"
        "    cls.addClassCleanup(environment.stop)\n"
    )
    return [setup]

"""``MultiProcessTestCase``: per-test workers spawned by ``setUp``; each test creates its own PG.

Its tests move to a class deriving from ``MultiProcContinuousTest`` (``distlint.runtime``'s
or torch's), which starts the workers and the PG once per class, from class-level facts.
"""

from __future__ import annotations

import json
from typing import Dict, List

import libcst as cst

from distlint.analysis.model import ClassAnalysis
from distlint.analysis.pg.class_eligibility import MULTI_PROCESS_TEST_CASE
from distlint.codemods.rewrite import classmethod_returning

#: The base class the continuous base replaces (matched on the last name component).
BASE_NAME = MULTI_PROCESS_TEST_CASE
#: Members MultiProcContinuousTest itself defines with a meaning of its own.
RESERVED_MEMBERS = frozenset({"pg", "rank", "timeout", "backend_str", "MAIN_PROCESS_RANK", "processes"})
#: Members the continuous runtime reads by itself (no test needs to name them).
RUNTIME_READS = ("world_size", "device_type")
#: The world size a class that sets none had: torch's ``DEFAULT_WORLD_SIZE`` (imported by the emitter).
DEFAULT_WORLD_SIZE = "DEFAULT_WORLD_SIZE"


def class_statements(analysis: ClassAnalysis, default_world_size: bool) -> List[cst.BaseStatement]:
    """``world_size`` / ``timeout`` / ``backend_str()`` of the class that derives from the continuous
    base: the PG its tests created, built once. ``default_world_size``: the class (and its bases)
    set no world size, so it had MultiProcessTestCase's default."""
    out: List[cst.BaseStatement] = []
    if default_world_size:
        out.append(cst.parse_statement(f"world_size = {DEFAULT_WORLD_SIZE}\n"))
    if analysis.timeout is not None:
        out.append(cst.SimpleStatementLine(body=[cst.Assign(
            targets=[cst.AssignTarget(cst.Name("timeout"))], value=analysis.timeout)]))
    assert analysis.backend is not None
    out.append(classmethod_returning("backend_str", cst.SimpleString(repr(analysis.backend).replace("'", '"'))))
    return out


#: The class attribute ``distlint.runtime.MultiProcContinuousTest`` reads the ranks' environment from.
WORKER_ENV = "worker_env"


def environment_statements(environment: Dict[str, str], runtime: str) -> List[cst.BaseStatement]:
    """What a continuous class needs so its ranks start with the environment the per-test ``setUp``
    set before spawning: ``worker_env`` with distlint's runtime; with torch's, which spawns the ranks
    in the first test's ``setUp``, ``setUpClass`` sets the variables and a class cleanup puts them
    back (cleanups run last in, first out, so a subclass's and its base's nest; the caller imports
    ``os`` and ``unittest.mock``)."""
    if not environment:
        return []
    literal = "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in environment.items()) + "}"
    if runtime == "distlint":
        return [cst.parse_statement(f"{WORKER_ENV} = {literal}\n")]
    setup = cst.parse_statement(
        "@classmethod\n"
        "def setUpClass(cls):\n"
        "    # torch starts the ranks in the first test's setUp: they inherit this environment.\n"
        "    super().setUpClass()\n"
        f"    environment = unittest.mock.patch.dict(os.environ, {literal})\n"
        "    environment.start()\n"
        "    cls.addClassCleanup(environment.stop)\n")
    return [setup]

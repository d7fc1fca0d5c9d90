"""``MultiProcessTestCase``: per-test workers spawned by ``setUp``; each test creates its own PG.

Its tests move to a class deriving from ``MultiProcContinuousTest`` (``distlint.runtime``'s
or torch's), which starts the workers and the PG once per class, from class-level facts.
"""

from __future__ import annotations

from typing import List

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

"""What a per-test base module declares: :class:`PerTestBase` (the plan, placement and emitter read it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import libcst as cst

from distlint.analysis.model import ClassAnalysis
from distlint.codemods.rewrite import classmethod_returning
from distlint.cst_utils import expression_of
from distlint.syntax.ast_nodes import Source

#: Members every continuous base (distlint's and torch's MultiProcContinuousTest) defines with a meaning of its own.
CONTINUOUS_RESERVED = frozenset(
    {"pg", "rank", "timeout", "backend_str", "MAIN_PROCESS_RANK", "processes"}
)
#: Members the continuous runtime reads by itself (no test needs to name them).
RUNTIME_READS = ("world_size", "device_type")


class Target(NamedTuple):
    """A name to import: ``from <module> import <name>``."""

    module: str
    name: str


@dataclass(frozen=True)
class PerTestBase:
    """One per-test base class and its continuous counterparts."""

    #: The torch class (last name component) whose tests move.
    name: str
    #: ``--runtime`` -> the continuous base the moved tests' class derives from.
    targets: Mapping[str, Target]
    #: ``--runtime`` -> the world size a class that sets none had, when the target does not
    #: already have it (imported by the emitter): ``world_size = <name>``.
    default_world_size: Mapping[str, Target]
    #: Members the continuous base defines with a meaning of its own (a class member by that
    #: name cannot move).
    reserved: frozenset[str] = CONTINUOUS_RESERVED
    #: Whether the tests' backend must be carried into ``backend_str()`` (the base does not pick it).
    needs_backend: bool = True
    #: ``--runtime`` -> ``base_class=`` for ``create_local_tensor_test_class`` of the continuous class.
    local_tensor_base: Mapping[str, Target] | None = None


def class_statements(
    base: PerTestBase,
    runtime: str,
    analysis: ClassAnalysis,
    default_world_size: bool,
    source: Source,
) -> list[cst.BaseStatement]:
    """``world_size`` / ``timeout`` / ``backend_str()`` of the class that derives from the continuous
    base: the PG its tests created, built once. ``default_world_size``: the class (and its bases)
    set no world size, so it had its base's; ``source``: the text the analysis read."""
    out: list[cst.BaseStatement] = []
    constant = base.default_world_size.get(runtime)
    if default_world_size and constant is not None:
        out.append(cst.parse_statement(f"world_size = {constant.name}\n"))
    if analysis.timeout is not None:
        out.append(
            cst.SimpleStatementLine(
                body=[
                    cst.Assign(
                        targets=[cst.AssignTarget(cst.Name("timeout"))],
                        value=expression_of(source.segment(analysis.timeout)),
                    )
                ]
            )
        )
    if analysis.backend is not None:
        out.append(
            classmethod_returning(
                "backend_str", cst.SimpleString(repr(analysis.backend).replace("'", '"'))
            )
        )
    else:
        assert not base.needs_backend, "the analysis requires a backend literal for this base"
    return out

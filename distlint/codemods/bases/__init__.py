"""What ``distlint migrate`` knows about each per-test base class: one module per base.

A base module says what is specific to that base (a :class:`~.spec.PerTestBase`): which
base class it replaces, the continuous base per ``--runtime``, the members its continuous
counterpart reserves, and the class-level statements the new class needs to build the
same PG (world size, timeout, backend). The plan (:mod:`distlint.codemods.plan`), the
placement (:mod:`distlint.codemods.placement`) and the emitter
(:mod:`distlint.codemods.migrate_continuous`) read them from here.
"""

from __future__ import annotations

from distlint.codemods.bases import (
    distributed_test_base,
    dtensor_test_base,
    fsdp,
    multi_process_test_case,
)
from distlint.codemods.bases.spec import PerTestBase

#: Every base whose tests ``distlint migrate`` moves, by class name.
BASES: dict[str, PerTestBase] = {
    base.name: base
    for base in (
        multi_process_test_case.BASE,
        distributed_test_base.BASE,
        distributed_test_base.DYNAMO_BASE,
        dtensor_test_base.BASE,
        fsdp.BASE,
    )
}


def base_named(name: str) -> PerTestBase:
    """The base a per-test class runs through (``ClassAnalysis.per_test_base``)."""
    return BASES.get(name, multi_process_test_case.BASE)

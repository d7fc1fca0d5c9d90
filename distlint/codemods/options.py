"""What ``distlint migrate`` is asked for: the runtime the migrated classes run on, the class
suffix, and the tests ``--verify`` keeps behind. A leaf of the codemod, shared by the command,
the one-file migration and the emitter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from distlint.analysis.pg.existing_continuous import DEFAULT_SUFFIX
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_DISTRIBUTED_TESTING

#: ``--runtime`` choices: the module that provides ``MultiProcContinuousTest``.
RUNTIME_MODULES: dict[str, str] = {
    "distlint": DISTLINT_RUNTIME,
    "torch": TORCH_DISTRIBUTED_TESTING,
}


@dataclass(frozen=True)
class MigrateOptions:
    runtime: str = "distlint"
    class_suffix: str = DEFAULT_SUFFIX
    #: ``Class.test`` -> ``(code, text)``: tests that stay although they could move (found by
    #: ``migrate --verify``); reported as left with that reason.
    hold: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: The tests that cannot share a PG run on reused workers with a fresh PG each (the distlint
    #: runtime's ReusedWorkersTest); False keeps them per test (``--no-reused-workers``).
    reused_workers: bool = True

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIME_MODULES:
            raise ValueError(
                f"unknown runtime {self.runtime!r} (choose from {', '.join(RUNTIME_MODULES)})"
            )
        if not self.class_suffix.isidentifier():
            raise ValueError(f"class suffix {self.class_suffix!r} is not a valid identifier part")

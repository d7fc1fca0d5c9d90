"""distlint.runtime: continuous distributed test classes on a shared worker pool.

The only part of distlint that imports torch (lazily: importing this package
costs little more than importing torch itself).

    from distlint.runtime import MultiProcContinuousTest, run_tests, skip_if_lt_x_gpu

    class AllReduceTest(MultiProcContinuousTest):
        @classmethod
        def backend_str(cls):
            return "gloo"

        def test_sum(self):
            t = torch.ones(2) * self.rank
            dist.all_reduce(t)
            self.assertEqual(t.tolist(), [1.0, 1.0])

    if __name__ == "__main__":
        run_tests()

``MultiProcContinousTest`` (torch's old misspelling, which rule DL302 flags)
still resolves to the same class, with a DeprecationWarning; it is not in
``__all__``.
"""

from __future__ import annotations

import warnings
from typing import Any

from .continuous import MultiProcContinuousTest, RankFailure
from .decorators import (
    require_world_size,
    requires_gloo,
    requires_nccl,
    requires_world_size,
    skip_if_lt_x_gpu,
    skip_if_no_gpu,
    skip_if_odd_worldsize,
)
from .launch import run_tests
from .skips import (
    TEST_SKIPS,
    RegistrySkip,
    SkipRegistry,
    TestSkip,
    register_skip,
    skip_for_code,
    skip_for_name,
)

__all__ = [
    "MultiProcContinuousTest",
    "RankFailure",
    "run_tests",
    "TEST_SKIPS",
    "TestSkip",
    "SkipRegistry",
    "RegistrySkip",
    "register_skip",
    "skip_for_name",
    "skip_for_code",
    "skip_if_lt_x_gpu",
    "requires_nccl",
    "requires_gloo",
    "skip_if_no_gpu",
    "skip_if_odd_worldsize",
    "require_world_size",
    "requires_world_size",
]

# Deprecated names -> the names to use instead.
_DEPRECATED_ALIASES = {"MultiProcContinousTest": "MultiProcContinuousTest"}


def __getattr__(name: str) -> Any:
    """Resolve a deprecated alias with a DeprecationWarning (PEP 562); anything else is missing."""
    replacement = _DEPRECATED_ALIASES.get(name)
    if replacement is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"distlint.runtime.{name} is a deprecated alias (torch's old misspelling); use {replacement}",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[replacement]

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

Plain pytest tests run on N ranks of a shared pool with ``@on_ranks`` (:mod:`on_ranks_dispatch`).

``MultiProcContinousTest`` (torch's old misspelling, which rule DL302 flags)
still resolves to the same class, with a DeprecationWarning; it is not in
``__all__``.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from . import early_start as _early_start

# Every public name is imported on first use (PEP 562), so that importing a
# submodule (the pytest plugin, loaded by every pytest run of an environment
# with distlint installed) does not import the whole runtime.
_PUBLIC = {
    "MultiProcContinuousTest": "continuous",
    "ReusedWorkersTest": "reused_workers",
    "RankFailure": "continuous",
    "run_tests": "launch",
    "on_ranks": "on_ranks_dispatch",
    "TEST_SKIPS": "skips",
    "TestSkip": "skips",
    "SkipRegistry": "skips",
    "RegistrySkip": "skips",
    "register_skip": "skips",
    "skip_for_name": "skips",
    "skip_for_code": "skips",
    "skip_if_lt_x_gpu": "decorators",
    "requires_nccl": "decorators",
    "requires_gloo": "decorators",
    "skip_if_no_gpu": "decorators",
    "skip_if_odd_worldsize": "decorators",
    "require_world_size": "decorators",
    "requires_world_size": "decorators",
}

__all__ = list(_PUBLIC)

# Deprecated names -> the names to use instead.
_DEPRECATED_ALIASES = {"MultiProcContinousTest": "MultiProcContinuousTest"}


def __getattr__(name: str) -> Any:
    """A public name, imported now; a deprecated alias with a DeprecationWarning; anything else is missing."""
    module = _PUBLIC.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # later lookups do not come back here
        return value
    replacement = _DEPRECATED_ALIASES.get(name)
    if replacement is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"distlint.runtime.{name} is a deprecated alias (torch's old misspelling); use {replacement}",
        DeprecationWarning,
        stacklevel=2,
    )
    return __getattr__(replacement)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


# A test file run as ``python test_x.py`` starts the fork server while it is still importing.
_early_start.from_main_module()

"""Which calls run a test module's tests: the ``run_tests`` convention and the generic runners.

Shared by the main-block analysis (:mod:`distlint.analysis.mainblock.facts`), its stdlib-``ast``
pre-screen (:mod:`distlint.screens.main_block`) and the fixes.
"""

from __future__ import annotations

from collections.abc import Iterable

from distlint.torch_names import DISTLINT_RUNTIME, TORCH_RUNNER_MODULE

#: Modules whose ``run_tests`` is always a runner, whatever the config says.
RUNNER_MODULES = (TORCH_RUNNER_MODULE, DISTLINT_RUNTIME)
#: Callables that run a module's tests without being the ``run_tests`` convention:
#: they make a main block valid (DL102) and are bad at import (DL104), but importing
#: them does not make a module "belong" to the convention (DL101): torchrec-style
#: suites import ``unittest`` and are run by pytest.
GENERIC_RUNNERS = ("unittest.main", "pytest.main")
#: Calls that mean "this file is not meant to be run directly" (PyTorch's helper raises).
RAISERS = ("raise_on_run_directly",)

#: Calls that run the tests when a main block makes them, but not at import (building a
#: runner object there runs nothing): ``unittest.TextTestRunner(...).run(suite)``.
GUARD_RUNNERS = ("unittest.TextTestRunner", "unittest.runner.TextTestRunner")


def convention_runners(config_runners: Iterable[str]) -> tuple[str, ...]:
    """Runners whose import makes a module part of the ``run_tests`` convention (DL101)."""
    return tuple(dict.fromkeys((*config_runners, *(f"{m}.run_tests" for m in RUNNER_MODULES))))


def all_runners(config_runners: Iterable[str]) -> tuple[str, ...]:
    """Every callable that runs the tests (DL102, DL104)."""
    return (*convention_runners(config_runners), *GENERIC_RUNNERS)

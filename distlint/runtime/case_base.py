"""The TestCase the continuous classes derive from: torch's own, where it can be imported.

Tests moved by ``distlint migrate`` were written for torch's ``common_utils.TestCase``
(``MultiProcessTestCase``, ``DTensorTestBase``, ``FSDPTest`` derive from it): its
``assertEqual`` compares Python floats with tolerances as it does tensors, unwraps DTensors
and checks their placements, compares numpy arrays; it has ``assertExpectedInline``,
``assertEqualIgnoreType``, ``precision``... A moved test must compare the same way, or its
outcome changes: ``assertEqual(1.4e-16, 0.0)`` passes there and fails with unittest's ``==``;
a DTensor with other placements than expected fails there and passes a value-only check.

Around each test, the ranks run the class's own ``setUp``/``tearDown`` but not torch's
TestCase ones, as neither torch's per-test ranks (the test's old home) nor torch's continuous
ranks do: its tearDown's leak checks and its sparse-invariant switch were never part of these
tests. Its disabled/slow-test check (``check_if_enable``) is kept, where torch's per-test
classes ran it: in the process that routes the test (the dispatcher, or each torchrun rank),
before any rank is asked, so a test PyTorch's CI disabled stays disabled. (On a pool's ranks it
would only repeat the answer, and its first call imports ``common_device_type``: seconds of a
short test timeout on a loaded machine.)

torch's TestCase needs numpy and expecttest (the ``runtime`` extra installs both). Without
them the classes fall back to unittest's TestCase with a tensor-aware ``assertEqual``
(:mod:`distlint.runtime.assertions`).
"""

from __future__ import annotations

import unittest
from typing import Any

from .assertions import TensorAssertionsMixin


def _import_torch_test_case() -> tuple[type | None, Any]:
    try:
        from torch.testing._internal import common_utils
    except Exception:  # noqa: BLE001 - numpy/expecttest missing, or a torch without the helpers
        return None, None
    return common_utils.TestCase, common_utils


TORCH_TEST_CASE, _common_utils = _import_torch_test_case()


def check_enabled(test: unittest.TestCase) -> None:
    """torch's check of disabled and slow tests (raises ``unittest.SkipTest``); nothing without it.

    Called only when one of its inputs is set (a disabled- or slow-tests list, as PyTorch's CI
    imports, or its rerun/skip-fast modes): otherwise it cannot skip, and its first call imports
    ``common_device_type`` (~2 s of CPU in every process that runs a test)."""
    cu = _common_utils
    if cu is not None and (
        cu.disabled_tests_dict or cu.slow_tests_dict or cu.RERUN_DISABLED_TESTS or cu.TEST_SKIP_FAST
    ):
        cu.check_if_enable(test)


if TORCH_TEST_CASE is not None:

    class TestCaseBase(TORCH_TEST_CASE):  # type: ignore[misc, valid-type]
        """torch's TestCase for the test bodies, without its per-test setUp/tearDown."""

        def setUp(self) -> None:
            unittest.TestCase.setUp(self)

        def tearDown(self) -> None:
            unittest.TestCase.tearDown(self)

else:

    class TestCaseBase(TensorAssertionsMixin, unittest.TestCase):  # type: ignore[no-redef]
        """unittest's TestCase with a tensor-aware ``assertEqual`` (torch's TestCase is missing)."""

"""The continuous classes' base: torch's TestCase, or (without numpy/expecttest) unittest's
with a tensor-aware assertEqual. Both checked here, in this process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import unittest

import pytest

torch = pytest.importorskip("torch")

from distlint.runtime.assertions import TensorAssertionsMixin  # noqa: E402


class _Fallback(TensorAssertionsMixin, unittest.TestCase):
    def runTest(self) -> None:  # noqa: N802 - unittest's name
        pass


@pytest.fixture
def fallback() -> _Fallback:
    return _Fallback()


def test_the_fallback_compares_tensors_and_their_containers_by_value(fallback):
    fallback.assertEqual(torch.ones(3), torch.ones(3))
    fallback.assertEqual(
        [torch.zeros(2), {"a": torch.ones(1)}], [torch.zeros(2), {"a": torch.ones(1)}]
    )
    fallback.assertEqual(torch.full((2,), 3.0), 3.0)  # a number against a tensor: broadcast
    fallback.assertEqual(torch.tensor([1.0, 2.0]), [1.0, 2.0])
    fallback.assertEqual(
        torch.tensor([1.0]), torch.tensor([1.0 + 1e-9])
    )  # within float32 tolerance
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        fallback.assertEqual(torch.ones(3), torch.zeros(3), msg="values differ")
    with pytest.raises(AssertionError):
        fallback.assertEqual(
            torch.ones(2, dtype=torch.int64), torch.ones(2)
        )  # exact_dtype by default
    fallback.assertEqual(torch.ones(2, dtype=torch.int64), torch.ones(2), exact_dtype=False)
    with pytest.raises(ValueError, match="both atol and rtol"):
        fallback.assertEqual(torch.ones(1), torch.ones(1), atol=1e-3)


def test_the_fallback_assert_not_equal_and_plain_values(fallback):
    fallback.assertNotEqual(torch.ones(2), torch.zeros(2))
    with pytest.raises(AssertionError):
        fallback.assertNotEqual(torch.ones(2), torch.ones(2))
    fallback.assertEqual("a", "a")  # anything else is unittest's
    with pytest.raises(AssertionError):
        fallback.assertEqual(1, 2)


def test_the_base_is_torchs_testcase_where_it_imports_else_the_fallback():
    """With torch's test helpers importable the class is a torch TestCase; make them unimportable
    (numpy or expecttest missing) and the same import gives the unittest fallback."""
    from torch.testing._internal.common_utils import TestCase

    from distlint.runtime import MultiProcContinuousTest

    assert issubclass(MultiProcContinuousTest, TestCase)
    probe = textwrap.dedent("""
        import sys
        sys.modules["torch.testing._internal.common_utils"] = None  # import fails, as without numpy
        from distlint.runtime import MultiProcContinuousTest
        from distlint.runtime.assertions import TensorAssertionsMixin
        print(issubclass(MultiProcContinuousTest, TensorAssertionsMixin))
    """)
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.strip().splitlines()[-1] == "True"

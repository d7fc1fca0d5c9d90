"""Tensor-aware ``assertEqual``, as tests written for torch's TestCase expect.

torch's own base class compares tensors (and sequences or dicts of them) by
value with dtype-based tolerances; plain ``unittest.TestCase.assertEqual`` on
two multi-element tensors raises "Boolean value of Tensor ... is ambiguous".
Tests moved onto MultiProcContinuousTest keep working through this mixin, built
on the public ``torch.testing.assert_close`` (never torch.testing._internal).
"""

from __future__ import annotations

import numbers
import sys
from typing import Any


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _contains_tensor(value: Any) -> bool:
    if _is_tensor(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(item) for item in value)
    if isinstance(value, dict):
        return any(_contains_tensor(item) for item in value.values())
    return False


def _as_tensor_like(value: Any, like: Any) -> Any:
    """Turn a number or (nested) list into a tensor shaped and typed like ``like``."""
    import torch

    converted = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    if converted.dim() == 0 and like.dim() > 0:
        converted = converted.expand_as(like)
    return converted


def tensors_equal_or_raise(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None,
    atol: float | None,
    exact_dtype: bool,
    msg: str | None,
    failure_exception: type,
) -> None:
    import torch

    check_dtype = exact_dtype
    if (
        _is_tensor(actual)
        and not _is_tensor(expected)
        and isinstance(expected, (numbers.Number, list, tuple))
    ):
        expected, check_dtype = _as_tensor_like(expected, actual), False
    elif (
        _is_tensor(expected)
        and not _is_tensor(actual)
        and isinstance(actual, (numbers.Number, list, tuple))
    ):
        actual, check_dtype = _as_tensor_like(actual, expected), False
    if (
        _is_tensor(actual)
        and _is_tensor(expected)
        and actual.dtype == expected.dtype
        and actual.shape == expected.shape
        and actual.device == expected.device
        and torch.equal(actual, expected)
    ):
        # Exactly equal: no need for assert_close, whose first call imports
        # torch.distributed.tensor (half a second per rank process).
        return
    try:
        torch.testing.assert_close(
            actual,
            expected,
            rtol=rtol,
            atol=atol,
            equal_nan=True,
            check_device=False,
            check_dtype=check_dtype,
        )
    except (AssertionError, TypeError, ValueError) as exc:
        text = str(exc) if not msg else f"{msg}\n{exc}"
        raise failure_exception(text) from None


class TensorAssertionsMixin:
    """``assertEqual`` / ``assertNotEqual`` that understand tensors; anything else is unittest's."""

    def assertEqual(  # noqa: N802 - unittest's name
        self,
        first: Any,
        second: Any,
        msg: str | None = None,
        *,
        atol: float | None = None,
        rtol: float | None = None,
        exact_dtype: bool = True,
    ) -> None:
        if (atol is None) != (rtol is None):
            raise ValueError("give both atol and rtol, or neither")
        if _contains_tensor(first) or _contains_tensor(second):
            tensors_equal_or_raise(
                first,
                second,
                rtol=rtol,
                atol=atol,
                exact_dtype=exact_dtype,
                msg=msg,
                failure_exception=self.failureException,  # type: ignore[attr-defined]
            )
            return
        super().assertEqual(first, second, msg=msg)  # type: ignore[misc]

    def assertNotEqual(self, first: Any, second: Any, msg: str | None = None) -> None:  # noqa: N802
        if _contains_tensor(first) or _contains_tensor(second):
            try:
                self.assertEqual(first, second)
            except self.failureException:  # type: ignore[attr-defined]
                return
            raise self.failureException(msg or f"{first!r} == {second!r}")  # type: ignore[attr-defined]
        super().assertNotEqual(first, second, msg=msg)  # type: ignore[misc]

"""Module-level class factories that read a class's tests: what the analysis and the codemod
recognise as following a per-test class (``distlint.codemods.factories`` builds the twins).

``instantiate_parametrized_tests(X)`` expands ``X``'s parametrized tests in place;
``XWithLocalTensor = create_local_tensor_test_class(X, skipped_tests=[...])`` builds a class
from ``X``'s own tests in local tensor mode. Such a call names ``X`` without keeping it per test:
the continuous class gets the same call. Any other use of a class at module level does
(:mod:`distlint.analysis.pg.references`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from distlint.analysis.names import dotted_name

INSTANTIATE = "instantiate_parametrized_tests"
LOCAL_TENSOR = "create_local_tensor_test_class"
LOCAL_TENSOR_SUFFIX = "WithLocalTensor"


@dataclass(frozen=True)
class FactoryCall:
    """One module-level factory statement and the class it reads."""

    statement: cst.SimpleStatementLine
    call: cst.Call
    #: ``X``: the class whose tests it reads.
    source: str
    #: ``INSTANTIATE`` or ``LOCAL_TENSOR``.
    kind: str

    def problem(self) -> str | None:
        """Why distlint cannot give the continuous class the same call, or None."""
        if self.kind == LOCAL_TENSOR and (
            len(self.call.args) > 2
            or any(
                a.keyword is not None and a.keyword.value == "base_class" for a in self.call.args
            )
        ):
            return f"{LOCAL_TENSOR}({self.source}) chooses its own base_class; migrate it by hand"
        return None


def factory_call(statement: cst.BaseStatement) -> FactoryCall | None:
    """``instantiate_parametrized_tests(X)`` or ``Y = create_local_tensor_test_class(X, ...)``."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        kind, call = INSTANTIATE, small.value
        if len(call.args) != 1:
            return None
    elif (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and isinstance(small.value, cst.Call)
    ):
        kind, call = LOCAL_TENSOR, small.value
    else:
        return None
    written = dotted_name(call.func) or ""
    if written.rsplit(".", 1)[-1] != kind or not call.args or call.args[0].keyword is not None:
        return None
    if not isinstance(call.args[0].value, cst.Name):
        return None
    return FactoryCall(statement, call, call.args[0].value.value, kind)


def local_tensor_name(class_name: str) -> str:
    """The class ``create_local_tensor_test_class`` builds (``__name__ + "WithLocalTensor"``)."""
    return class_name + LOCAL_TENSOR_SUFFIX

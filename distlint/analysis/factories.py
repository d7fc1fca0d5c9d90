"""Module-level class factories that read a class's tests: what the analysis and the codemod
recognise as following a per-test class (``distlint.codemods.factories`` builds the twins).

``instantiate_parametrized_tests(X)`` expands ``X``'s parametrized tests in place;
``XWithLocalTensor = create_local_tensor_test_class(X, skipped_tests=[...])`` builds a class
from ``X``'s own tests in local tensor mode. Such a call names ``X`` without keeping it per test:
the continuous class gets the same call. Any other use of a class at module level does
(:mod:`distlint.analysis.pg.references`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from distlint.syntax.ast_lines import SimpleLine, Unit
from distlint.syntax.ast_nodes import dotted_name

INSTANTIATE = "instantiate_parametrized_tests"
LOCAL_TENSOR = "create_local_tensor_test_class"
LOCAL_TENSOR_SUFFIX = "WithLocalTensor"


@dataclass(frozen=True)
class FactoryCall:
    """One module-level factory statement (its line) and the class it reads."""

    statement: SimpleLine
    call: ast.Call
    #: ``X``: the class whose tests it reads.
    source: str
    #: ``INSTANTIATE`` or ``LOCAL_TENSOR``.
    kind: str

    def problem(self) -> str | None:
        """Why distlint cannot give the continuous class the same call, or None."""
        if self.kind == LOCAL_TENSOR and (
            len(self.call.args) + len(self.call.keywords) > 2
            or any(k.arg == "base_class" for k in self.call.keywords)
        ):
            return f"{LOCAL_TENSOR}({self.source}) chooses its own base_class; migrate it by hand"
        return None


def factory_call(statement: Unit) -> FactoryCall | None:
    """``instantiate_parametrized_tests(X)`` or ``Y = create_local_tensor_test_class(X, ...)``."""
    if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, ast.Expr) and isinstance(small.value, ast.Call):
        kind, call = INSTANTIATE, small.value
        if len(call.args) + len(call.keywords) != 1:
            return None
    elif (
        isinstance(small, ast.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0], ast.Name)
        and isinstance(small.value, ast.Call)
    ):
        kind, call = LOCAL_TENSOR, small.value
    else:
        return None
    written = dotted_name(call.func) or ""
    first = _first_argument(call)
    if written.rsplit(".", 1)[-1] != kind or first is None or not isinstance(first, ast.Name):
        return None
    return FactoryCall(statement, call, first.id, kind)


def _first_argument(call: ast.Call) -> ast.expr | None:
    """The value of the first argument written when it has no keyword (``*X`` and ``**X``
    give ``X``, as libcst's ``Arg.value``), else None."""
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if not arguments:
        return None
    first = min(arguments, key=lambda a: (a.lineno, a.col_offset))
    if isinstance(first, ast.keyword):
        return first.value if first.arg is None else None
    return first.value if isinstance(first, ast.Starred) else first


def local_tensor_name(class_name: str) -> str:
    """The class ``create_local_tensor_test_class`` builds (``__name__ + "WithLocalTensor"``)."""
    return class_name + LOCAL_TENSOR_SUFFIX

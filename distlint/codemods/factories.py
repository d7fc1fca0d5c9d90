"""Module-level class factories that read a migrated class's tests, and their twins.

``instantiate_parametrized_tests(X)`` expands ``X``'s parametrized tests in place;
``XWithLocalTensor = create_local_tensor_test_class(X, skipped_tests=[...])`` builds a class
from ``X``'s own tests in local tensor mode. Moving tests out of ``X`` would silently drop
them from what such a call generates, so the call follows the tests: the continuous class
gets the same call (the local-tensor twin on torch's ``LocalDTensorContinuousTestBase``, as
torch's continuous DTensor files write it), and the original call stays while ``X`` does.
Other uses of a class at module level (``instantiate_device_type_tests(X, globals())``,
anything else) keep its tests where they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from distlint.analysis.names import dotted_name
from distlint.codemods.layout import call_layout

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


def twin(
    factory: FactoryCall, continuous: str, local_base: str | None, keep_leading: bool
) -> cst.SimpleStatementLine:
    """The same call for the continuous class (``local_base``: ``base_class=`` of a local-tensor twin)."""
    call = factory.call
    args: list[cst.Arg] = [call.args[0].with_changes(value=cst.Name(continuous)), *call.args[1:]]
    if factory.kind == LOCAL_TENSOR:
        assert local_base is not None
        args.append(
            cst.Arg(
                keyword=cst.Name("base_class"),
                value=cst.Name(local_base),
                equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""),
                ),
            )
        )
    # black's layout; one argument per line stays so (a trailing comma: black's "magic" one).
    exploded = isinstance(call.args[-1].comma, cst.Comma)
    new_call = call.with_changes(args=args)
    small = factory.statement.body[0]
    prefix = f"{local_tensor_name(continuous)} = " if isinstance(small, cst.Assign) else ""
    new_call = call_layout(prefix, new_call, exploded)
    if isinstance(small, cst.Assign):
        small = small.with_changes(
            targets=[small.targets[0].with_changes(target=cst.Name(local_tensor_name(continuous)))],
            value=new_call,
        )
    else:
        small = small.with_changes(value=new_call)
    statement = factory.statement.with_changes(body=[small])
    if not keep_leading:
        statement = statement.with_changes(leading_lines=[])
    return statement.deep_clone()

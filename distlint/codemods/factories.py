"""Module-level class factories that read a migrated class's tests, and their twins
(recognised in :mod:`distlint.analysis.factories`).

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

from distlint.analysis.factories import (
    INSTANTIATE,
    LOCAL_TENSOR,
    LOCAL_TENSOR_SUFFIX,
    FactoryCall,
    factory_call,
    local_tensor_name,
)
from distlint.codemods.layout import call_layout
from distlint.codemods.twins import Twins

# What the codemod recognises is the analysis' (one definition); twin() below is the codemod's.
__all__ = [
    "INSTANTIATE",
    "LOCAL_TENSOR",
    "LOCAL_TENSOR_SUFFIX",
    "FactoryLine",
    "factory_line",
    "local_tensor_name",
    "twin",
]


@dataclass(frozen=True)
class FactoryLine:
    """A factory call the analysis recognised (:class:`FactoryCall`), as the libcst line it is."""

    found: FactoryCall
    statement: cst.SimpleStatementLine

    @property
    def source(self) -> str:
        return self.found.source

    @property
    def kind(self) -> str:
        return self.found.kind

    @property
    def call(self) -> cst.Call:
        small = self.statement.body[0]
        assert isinstance(small, (cst.Expr, cst.Assign)) and isinstance(small.value, cst.Call)
        return small.value

    def problem(self) -> str | None:
        return self.found.problem()


def factory_line(statement: cst.BaseStatement, twins: Twins) -> FactoryLine | None:
    """The factory call a module-level libcst statement is, if it is one."""
    found = factory_call(twins.ast_of(statement))  # type: ignore[arg-type]
    if found is None:
        return None
    assert isinstance(statement, cst.SimpleStatementLine)
    return FactoryLine(found, statement)


def twin(
    factory: FactoryLine, continuous: str, local_base: str | None, keep_leading: bool
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

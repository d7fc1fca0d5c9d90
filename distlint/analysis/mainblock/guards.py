"""``if __name__ == "__main__":`` recognised in a libcst tree and, identically, in a stdlib ``ast`` tree.

The ``ast`` twins serve the pre-screen (:mod:`distlint.screens.main_block`); each must
accept exactly the code its libcst twin accepts, or the pre-screen would be unsound.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from distlint.screens.main_block import is_ast_any_main_guard, is_ast_main_guard  # noqa: F401 - the ast twins

if TYPE_CHECKING:
    from typing_extensions import TypeGuard  # typing's own from Python 3.10


def is_main_guard(node: cst.CSTNode) -> TypeGuard[cst.If]:
    """``if __name__ == "__main__":`` in either order and any quotes (parentheses allowed)."""
    return isinstance(node, cst.If) and _is_main_comparison(node.test)


def is_conditional_main_guard(node: cst.CSTNode) -> TypeGuard[cst.If]:
    """``if __name__ == "__main__" and CONDITION:`` (any order of the ``and`` operands).

    A main block that runs only when ``CONDITION`` holds is still the file's main block:
    DL101 must not add a second one (the tests would then run twice).
    """
    return (
        isinstance(node, cst.If)
        and isinstance(node.test, cst.BooleanOperation)
        and any(_is_main_comparison(operand) for operand in _conjuncts(node.test))
    )


def is_any_main_guard(node: cst.CSTNode) -> TypeGuard[cst.If]:
    return is_main_guard(node) or is_conditional_main_guard(node)


def _conjuncts(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def _is_main_comparison(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison):
        return False
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    left, right = test.left, test.comparisons[0].comparator
    return (_is_dunder_name(left) and _is_main_string(right)) or (
        _is_dunder_name(right) and _is_main_string(left)
    )


def _is_dunder_name(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "__name__"


def _is_main_string(node: cst.BaseExpression) -> bool:
    # ConcatenatedString is accepted too: stdlib ast cannot tell it apart, and the
    # pre-screen must agree with this function.
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return node.evaluated_value == "__main__"
    return False

"""The trailing PG teardown of a function body: what ``distlint migrate`` drops and DL201 allows.

A test (or a helper it calls last) may end by tearing its PG down
(``destroy_process_group()``, ``self.destroy_pg()``, inside ``if dist.is_initialized():``
or a ``try: ... finally:`` that exists only for it): on a shared PG that teardown goes,
and a destroy anywhere else is "destroys the PG early".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

import libcst as cst

from distlint.analysis.names import dotted_name
from distlint.analysis.walk import code_children, visit_read_only
from distlint.cst_utils import is_string_statement

#: Whether a call tears the PG down (the scan decides: it resolves names and subgroups).
IsDestroyCall = Callable[[cst.Call], bool]


def trailing_teardown(
    body: Sequence[cst.BaseStatement], is_destroy_call: IsDestroyCall
) -> tuple[list[cst.BaseStatement], set[int], set[int]]:
    """The trailing statements of ``body`` that only tear the PG down, and two id sets.

    Returns the statements; the ids of the simple statements doing the teardown (also
    inside a ``finally:`` or an ``if``); and the ids of the statements a helper call may sit
    in for the helper's own trailing teardown to count as the caller's: those, plus the
    last statement before the teardown (or the last of a ``try:`` whose finally tears down).
    """
    indices: list[int] = []
    for index in range(len(body) - 1, -1, -1):
        if not _is_teardown(body[index], is_destroy_call, allow_try=True):
            break
        indices.insert(0, index)
    teardown = [body[i] for i in indices]
    teardown_ids: set[int] = set()
    tail_ids: set[int] = set()
    for statement in teardown:
        teardown_ids |= _simple_statement_ids(statement)
        if isinstance(statement, cst.Try):
            tail_ids |= {id(s) for s in _suite(statement.body)[-1:]}
            teardown_ids -= _simple_statement_ids(statement.body)
            teardown_ids |= _simple_statement_ids(statement.finalbody)  # type: ignore[arg-type]
        if _one_line_teardown(statement):
            # ``if ...: destroy()`` or ``finally: destroy()`` on one line: no line of its own
            # holds the destroy, whose innermost statement is the ``if`` or ``try`` itself.
            teardown_ids.add(id(statement))
    first = indices[0] if indices else len(body)
    if first > 0:
        tail_ids.add(id(body[first - 1]))
    return teardown, teardown_ids, tail_ids | teardown_ids


def only_tears_down(function: cst.FunctionDef, is_destroy_call: IsDestroyCall) -> bool:
    """Whether every statement of ``function`` but its docstring is PG teardown."""
    body = [s for s in _suite(function.body) if not is_string_statement(s)]
    return bool(body) and all(_is_teardown(s, is_destroy_call, allow_try=True) for s in body)


def _is_teardown(
    statement: cst.BaseStatement, is_destroy_call: IsDestroyCall, allow_try: bool = False
) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return _only_destroy_calls(statement.body, is_destroy_call)
    if isinstance(statement, cst.Try) and allow_try:
        # try: <test> finally: destroy_process_group() -- the finally only tears down (and
        # the body is a block: ``try: x()`` on one line has no statements to unwrap it into)
        return (
            isinstance(statement.body, cst.IndentedBlock)
            and not statement.handlers
            and statement.orelse is None
            and statement.finalbody is not None
            and _suite_is_teardown(statement.finalbody.body, is_destroy_call)
        )
    if isinstance(statement, cst.If) and statement.orelse is None:
        # if dist.is_initialized(): dist.destroy_process_group()
        return _only_asks(statement.test) and _suite_is_teardown(statement.body, is_destroy_call)
    return False


#: What a teardown's ``if`` may call: questions about the PG and the rank, nothing that tests.
_QUESTIONS = frozenset({"is_initialized", "is_available", "get_rank", "get_world_size"})


def _only_asks(condition: cst.BaseExpression) -> bool:
    """Whether dropping ``condition`` with its teardown loses nothing: no call but a question
    about the PG (``if self._verify(t): destroy()`` asserts in its condition), no ``:=``."""
    stack: list[cst.CSTNode] = [condition]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.NamedExpr):
            return False
        if isinstance(node, cst.Call):
            written = dotted_name(node.func) or ""
            if written.rsplit(".", 1)[-1] not in _QUESTIONS:
                return False
        stack.extend(code_children(node))
    return True


def _one_line_teardown(statement: cst.BaseStatement) -> bool:
    """A teardown ``if`` whose body, or ``try`` whose ``finally``, is on its own line: the
    only calls whose innermost statement is that ``if`` or ``try`` are the teardown's (a
    teardown ``try``'s body is a block: :func:`_is_teardown`)."""
    if isinstance(statement, cst.If):
        return isinstance(statement.body, cst.SimpleStatementSuite)
    return (
        isinstance(statement, cst.Try)
        and statement.finalbody is not None
        and isinstance(statement.finalbody.body, cst.SimpleStatementSuite)
    )


def _suite_is_teardown(suite: cst.BaseSuite, is_destroy_call: IsDestroyCall) -> bool:
    if isinstance(suite, cst.SimpleStatementSuite):
        # ``if x: y`` on one line: its statements are the suite's own, not an indented block's
        # (an empty block read as "all teardown" would drop ``y``, an assertion as often as not).
        return _only_destroy_calls(suite.body, is_destroy_call)
    return all(_is_teardown(s, is_destroy_call) for s in _suite(suite))


def _only_destroy_calls(
    statements: Sequence[cst.BaseSmallStatement], is_destroy_call: IsDestroyCall
) -> bool:
    return all(
        isinstance(small, cst.Expr)
        and isinstance(small.value, cst.Call)
        and is_destroy_call(small.value)
        for small in statements
    )


def _simple_statement_ids(node: cst.CSTNode) -> set[int]:
    found: set[int] = set()

    class _Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, line: cst.SimpleStatementLine) -> None:
            found.add(id(line))

    visit_read_only(node, _Lines())
    return found


def _suite(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()

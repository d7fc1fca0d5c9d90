"""The trailing PG teardown of a function body: what ``distlint migrate`` drops and DL201 allows.

A test (or a helper it calls last) may end by tearing its PG down
(``destroy_process_group()``, ``self.destroy_pg()``, inside ``if dist.is_initialized():``
or a ``try: ... finally:`` that exists only for it): on a shared PG that teardown goes,
and a destroy anywhere else is "destroys the PG early".

Bodies are read as units (:mod:`distlint.syntax.ast_lines`): a :class:`SimpleLine` is one line
of simple statements; a block written on its header's line (``if x: y``) is no line of its
own (:func:`~distlint.syntax.ast_lines.is_one_line`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Callable, Union

from distlint.syntax.ast_lines import SimpleLine, Unit, is_one_line, is_string_line, units
from distlint.syntax.ast_nodes import children, dotted_name

#: Whether a call tears the PG down (the scan decides: it resolves names and subgroups).
IsDestroyCall = Callable[[ast.Call], bool]

_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def trailing_teardown(
    body: Sequence[Unit], is_destroy_call: IsDestroyCall
) -> tuple[list[Unit], set[int], set[int]]:
    """The trailing units of ``body`` that only tear the PG down, and two id sets.

    Returns the units; the ids of the lines doing the teardown (also inside a ``finally:``
    or an ``if``; the ``if`` or ``try`` itself when that block is on its header's line); and
    the ids of the units a helper call may sit in for the helper's own trailing teardown to
    count as the caller's: those, plus the last unit before the teardown (or the last of a
    ``try:`` whose finally tears down).
    """
    indices: list[int] = []
    for index in range(len(body) - 1, -1, -1):
        if not _is_teardown(body[index], is_destroy_call, allow_try=True):
            break
        indices.insert(0, index)
    teardown = [body[i] for i in indices]
    teardown_ids: set[int] = set()
    tail_ids: set[int] = set()
    for unit in teardown:
        if isinstance(unit, ast.Try):
            # The try's body is the test's work: only its last unit may call a helper whose
            # teardown counts; the lines doing the teardown are the finally's.
            tail_ids |= {id(u) for u in _block(unit, "body")[-1:]}
            teardown_ids |= _block_line_ids(unit, "finalbody")
        else:
            teardown_ids |= _line_ids(unit)
        if _one_line_teardown(unit):
            # ``if ...: destroy()`` or ``finally: destroy()`` on one line: no line of its own
            # holds the destroy, whose innermost statement is the ``if`` or ``try`` itself.
            teardown_ids.add(id(unit))
    first = indices[0] if indices else len(body)
    if first > 0:
        tail_ids.add(id(body[first - 1]))
    return teardown, teardown_ids, tail_ids | teardown_ids


def only_tears_down(function: _Function, is_destroy_call: IsDestroyCall) -> bool:
    """Whether every unit of ``function`` but its docstring (every string line) is PG teardown.

    A body on the ``def`` line (``def destroy_pg(self): destroy()``) has no units to read:
    not known to only tear down."""
    body = [u for u in _block(function, "body") if not is_string_line(u)]
    return bool(body) and all(_is_teardown(u, is_destroy_call, allow_try=True) for u in body)


def _is_teardown(unit: Unit, is_destroy_call: IsDestroyCall, allow_try: bool = False) -> bool:
    if isinstance(unit, SimpleLine):
        return _only_destroy_calls(unit.body, is_destroy_call)
    if isinstance(unit, ast.Try) and allow_try:
        # try: <test> finally: destroy_process_group() -- the finally only tears down (and
        # the body is a block: ``try: x()`` on one line has no statements to unwrap it into)
        return (
            not is_one_line(unit, "body")
            and not unit.handlers
            and not unit.orelse
            and bool(unit.finalbody)
            and _block_is_teardown(unit, "finalbody", is_destroy_call)
        )
    if isinstance(unit, ast.If) and not unit.orelse:
        # if dist.is_initialized(): dist.destroy_process_group()
        return _only_asks(unit.test) and _block_is_teardown(unit, "body", is_destroy_call)
    return False


#: What a teardown's ``if`` may call: questions about the PG and the rank, nothing that tests.
_QUESTIONS = frozenset({"is_initialized", "is_available", "get_rank", "get_world_size"})


def _only_asks(condition: ast.expr) -> bool:
    """Whether dropping ``condition`` with its teardown loses nothing: no call but a question
    about the PG (``if self._verify(t): destroy()`` asserts in its condition), no ``:=``."""
    stack: list[ast.AST] = [condition]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.NamedExpr):
            return False
        if isinstance(node, ast.Call):
            written = dotted_name(node.func) or ""
            if written.rsplit(".", 1)[-1] not in _QUESTIONS:
                return False
        stack.extend(children(node))
    return True


def _one_line_teardown(unit: Unit) -> bool:
    """A teardown ``if`` whose body, or ``try`` whose ``finally``, is on its header's line: the
    only calls whose innermost statement is that ``if`` or ``try`` are the teardown's (a
    teardown ``try``'s body is a block: :func:`_is_teardown`)."""
    if isinstance(unit, ast.If):
        return is_one_line(unit, "body")
    return isinstance(unit, ast.Try) and bool(unit.finalbody) and is_one_line(unit, "finalbody")


def _block_is_teardown(node: ast.AST, field: str, is_destroy_call: IsDestroyCall) -> bool:
    if is_one_line(node, field):
        # ``if x: y`` on one line: its statements are the line's own, not an indented block's
        # (an empty block read as "all teardown" would drop ``y``, an assertion as often as not).
        return _only_destroy_calls(getattr(node, field), is_destroy_call)
    return all(_is_teardown(u, is_destroy_call) for u in _block(node, field))


def _only_destroy_calls(statements: Sequence[ast.stmt], is_destroy_call: IsDestroyCall) -> bool:
    return all(
        isinstance(small, ast.Expr)
        and isinstance(small.value, ast.Call)
        and is_destroy_call(small.value)
        for small in statements
    )


def _line_ids(unit: Unit) -> set[int]:
    """The ids of ``unit`` if a line, else of every line inside it (blocks on their header's
    line hold no line: their statements' innermost statement is the compound one)."""
    if isinstance(unit, SimpleLine):
        return {id(unit)}
    found: set[int] = set()
    for field in ("body", "orelse", "finalbody"):
        found |= _block_line_ids(unit, field)
    for inner in (*getattr(unit, "handlers", ()), *getattr(unit, "cases", ())):
        found |= _block_line_ids(inner, "body")
    return found


def _block_line_ids(node: ast.AST, field: str) -> set[int]:
    found: set[int] = set()
    for unit in units(node, field):
        if not isinstance(unit, SimpleLine):
            found |= _line_ids(unit)
        elif not is_one_line(node, field):
            found.add(id(unit))
    return found


def _block(node: ast.AST, field: str) -> list[Unit]:
    """The units of an indented block; none for a block on its header's line."""
    return [] if is_one_line(node, field) else units(node, field)

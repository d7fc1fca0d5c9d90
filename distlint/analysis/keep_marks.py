"""``# distlint: keep-per-test``: a comment that keeps a test per test, whatever the analysis finds.

``distlint migrate --verify`` finds by running what no static analysis can (a test that ends
differently on shared ranks, a flaky one) and keeps those tests behind. With ``--write`` it
leaves this comment on each of them, on the line above the test (or above its decorators), with
what the runs showed after it; the analysis reads it back as the reason ``kept``, so DL201,
DL202 and every later ``distlint migrate`` (``--check`` in CI or pre-commit) keep the test where
the runs put it. Deleting the comment hands the test back to the analysis.

The stdlib ``ast`` keeps no comments: :func:`keep_mark` reads them from the source lines, the
ones libcst gave the ``def`` (its ``leading_lines``, ``lines_after_decorators`` and its
decorators' ``leading_lines``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from typing import Union

from distlint.syntax.ast_lines import (
    SimpleLine,
    Unit,
    else_units,
    first_line,
    is_empty_line,
    is_one_line,
    units,
)
from distlint.syntax.ast_nodes import Source

#: The comment, as written on the line above a test: ``# distlint: keep-per-test (why)``.
MARK = "distlint: keep-per-test"
_MARK = re.compile(r"#\s*distlint:\s*keep-per-test\b(?:\s*\((?P<why>.*)\))?")
#: What may precede a comment on a line of its own (libcst's simple whitespace).
_BLANK = " \t\f"

_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def keep_mark(test: _Function, parent: ast.AST, source: Source) -> str | None:
    """The mark's text on ``test`` (what follows it in parentheses, possibly empty), or None
    when the lines above the test and between its decorators and ``def`` carry no mark.
    ``parent``: the class (or other node) whose body holds ``test``."""
    for comment in _comments(test, parent, source):
        why = mark_text(comment)
        if why is not None:
            return why
    return None


def mark_text(comment: str) -> str | None:
    """What a ``# distlint: keep-per-test (why)`` comment (``#`` to the line's end) gives as
    the reason (possibly empty); None when ``comment`` is no mark."""
    match = _MARK.match(comment)
    return None if match is None else (match.group("why") or "").strip()


def _comments(test: _Function, parent: ast.AST, source: Source) -> Iterator[str]:
    """The comment lines libcst gives ``test``, in its order: above the def (or its first
    decorator), between the last decorator and the def, between the decorators."""
    decorators = test.decorator_list
    first = first_line(test)
    yield from _comment_lines(source, _leading(test, parent, source, first))
    if decorators:
        yield from _comment_lines(source, range(_end(decorators[-1]) + 1, test.lineno))
    for before, decorator in zip(decorators, decorators[1:]):
        yield from _comment_lines(source, range(_end(before) + 1, decorator.lineno))


def _leading(test: _Function, parent: ast.AST, source: Source, first: int) -> range:
    """The lines above ``test`` that libcst gives it: the blank and comment lines after the
    statement before it, but those the blocks ending there keep (their ``footer``: up to the
    last line indented at least as the outermost of them)."""
    body = [] if is_one_line(parent) else units(parent)
    index = next((i for i, unit in enumerate(body) if unit is test), 0)
    if index == 0:  # the block's first statement: every line after its header
        start = first
        while start > 1 and is_empty_line(source.line(start - 1)):
            start -= 1
        return range(start, first)
    previous = body[index - 1]
    start = _end(previous) + 1
    indent = _last_block_indent(previous, source)
    if indent is not None:
        for number in range(first - 1, start - 1, -1):
            if source.line(number).startswith(indent):
                return range(number + 1, first)
    return range(start, first)


def _last_block_indent(statement: Unit, source: Source) -> str | None:
    """The indentation of the last block of a compound statement, when it is an indented one."""
    node, field = _last_block(statement)
    if node is None or is_one_line(node, field):
        return None
    block = units(node, field)
    if not block:
        return None
    line = source.line(first_line(block[0]))
    return line[: len(line) - len(line.lstrip(_BLANK))]


def _last_block(statement: Unit) -> tuple[ast.AST | None, str]:
    """The node and field of the block a compound statement ends with."""
    if isinstance(statement, SimpleLine):
        return None, "body"
    if isinstance(statement, ast.If):
        orelse = else_units(statement)
        if isinstance(orelse, ast.If):
            return _last_block(orelse)
        return statement, "orelse" if orelse else "body"
    if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
        return statement, "orelse" if statement.orelse else "body"
    handlers = getattr(statement, "handlers", None)
    if handlers is not None:  # try / try*
        if getattr(statement, "finalbody", None):
            return statement, "finalbody"
        if getattr(statement, "orelse", None):
            return statement, "orelse"
        return handlers[-1], "body"
    cases = getattr(statement, "cases", None)
    if cases:  # match
        return cases[-1], "body"
    return statement, "body"


def _comment_lines(source: Source, numbers: Sequence[int]) -> Iterator[str]:
    for number in numbers:
        stripped = source.line(number).lstrip(_BLANK)
        if stripped.startswith("#"):
            yield stripped


def _end(node: ast.AST | SimpleLine) -> int:
    end = getattr(node, "end_lineno", None)
    return end if end is not None else getattr(node, "lineno")

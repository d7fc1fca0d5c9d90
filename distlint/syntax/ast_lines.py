"""Statements of a stdlib ``ast`` tree grouped the way source lines group them (and libcst does).

``ast`` gives every statement of ``a; b`` its own node and does not say whether a block was
written on its header's line (``if x: y``) or indented below it. The PG analysis decides on
lines (a teardown line is one that *only* destroys the PG; a one-line ``if x: y`` is no block
to unwrap), so after :func:`prepare` every body reads as *units*:

- :class:`SimpleLine`: the simple statements of one line (``a; b``), libcst's
  ``SimpleStatementLine`` (or, for a one-line block, its ``SimpleStatementSuite``);
- a compound statement (``if``, ``for``, ``try``, ``def``, ``class``...), as itself.

:func:`units` returns the same objects every time it is asked (facts hold them, and callers
compare them by identity). :func:`is_one_line` tells a one-line block from an indented one,
:func:`is_elif` an ``elif`` from an ``else:`` holding an ``if``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Union

from distlint.source import source_lines

__all__ = [
    "COMPOUND",
    "SimpleLine",
    "Unit",
    "prepare",
    "units",
    "is_one_line",
    "is_elif",
    "else_units",
    "small_statements",
    "is_string_line",
    "docstring_unit",
]

_BODY_FIELDS = ("body", "orelse", "finalbody")
_UNITS = "_distlint_units"
_ONE_LINE = "_distlint_one_line"
_ELIF = "_distlint_elif"
#: Compound statements (a unit of their own; the rest are simple statements, grouped by line).
COMPOUND: tuple[type, ...] = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    *(getattr(ast, name) for name in ("Match", "TryStar") if hasattr(ast, name)),
)


class SimpleLine:
    """The simple statements written on one line (``a = 1; b()``), in order."""

    __slots__ = ("body",)

    def __init__(self, body: list[ast.stmt]) -> None:
        self.body = body

    @property
    def lineno(self) -> int:
        return self.body[0].lineno

    @property
    def end_lineno(self) -> int:
        return self.body[-1].end_lineno or self.body[-1].lineno

    def __repr__(self) -> str:
        return f"SimpleLine({', '.join(type(s).__name__ for s in self.body)} @{self.lineno})"


#: A unit of a body: one line of simple statements, or one compound statement.
Unit = Union[SimpleLine, ast.stmt]


def prepare(tree: ast.AST, text: str) -> None:
    """Record, on every node with a body, its units and which of its blocks are one-line.

    Call once per tree, before :func:`units`; ``text`` is the source ``tree`` was parsed from.
    """
    lines = source_lines(text)
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        grouped: dict[str, list[Unit]] = {}
        one_line: set[str] = set()
        for field in _BODY_FIELDS:
            body = getattr(node, field, None)
            if not body or not isinstance(body, list) or not isinstance(body[0], ast.stmt):
                continue
            grouped[field] = _group(body, lines)
            if _starts_after_code(lines, body[0]):
                one_line.add(field)
            stack.extend(body)
        for handler in getattr(node, "handlers", ()):
            stack.append(handler)
        for case in getattr(node, "cases", ()):
            stack.append(case)
        if isinstance(node, ast.If) and node.orelse and len(node.orelse) == 1:
            nested = node.orelse[0]
            if isinstance(nested, ast.If):
                line = lines[nested.lineno - 1] if nested.lineno <= len(lines) else ""
                setattr(nested, _ELIF, line.lstrip().startswith("elif"))
        setattr(node, _UNITS, grouped)
        setattr(node, _ONE_LINE, one_line)


def prepare_spliced(original: ast.Module, spliced: ast.Module, text: str) -> None:
    """Prepare ``spliced``: ``original`` (prepared) with some top-level compound statements
    replaced by others, ``text`` its source. Only the new statements are prepared: the others
    keep their units, the very objects facts about them hold."""
    replaced = {id(old): new for old, new in zip(original.body, spliced.body) if old is not new}
    for new in replaced.values():
        prepare(new, text)
    grouped = {
        field: [replaced.get(id(unit), unit) for unit in group]
        for field, group in getattr(original, _UNITS).items()
    }
    setattr(spliced, _UNITS, grouped)
    setattr(spliced, _ONE_LINE, set(getattr(original, _ONE_LINE)))


def _group(body: list[ast.stmt], lines: Sequence[str]) -> list[Unit]:
    out: list[Unit] = []
    current: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, COMPOUND):
            if current:
                out.append(SimpleLine(current))
                current = []
            out.append(statement)
            continue
        if current and not _joined(lines, current[-1], statement):
            out.append(SimpleLine(current))
            current = []
        current.append(statement)
    if current:
        out.append(SimpleLine(current))
    return out


def _joined(lines: Sequence[str], before: ast.stmt, after: ast.stmt) -> bool:
    """Whether a ``;`` joins two simple statements (a backslash may put them on two lines)."""
    end_line = before.end_lineno or before.lineno
    if after.lineno == end_line:
        return True  # nothing but ``;`` can join two statements on one line
    if end_line > len(lines):
        return False
    gap = lines[end_line - 1].encode("utf-8")[before.end_col_offset or 0 :]
    return gap.strip().startswith(b";")


def _starts_after_code(lines: Sequence[str], statement: ast.stmt) -> bool:
    """Whether code precedes ``statement`` on its logical line (``if x: y``, also with a
    backslash before ``y``): a one-line block."""
    number = statement.lineno
    if number > len(lines):
        return False
    before = lines[number - 1].encode("utf-8")[: statement.col_offset]
    while not before.strip():
        # Only blanks before it: a block, unless the line before ends in a backslash.
        if number < 2 or not lines[number - 2].endswith("\\"):
            return False
        number -= 1
        before = lines[number - 1].encode("utf-8")[:-1]
    return True


def units(node: ast.AST, field: str = "body") -> list[Unit]:
    """The units of ``node``'s ``field`` block (``body``, ``orelse``, ``finalbody``): empty
    when it has none. An ``elif`` is the ``orelse`` of its ``if``: one unit, itself."""
    grouped = getattr(node, _UNITS, None)
    if grouped is None:
        raise RuntimeError("distlint.syntax.ast_lines.prepare() was not called on this tree")
    return grouped.get(field, [])


def is_one_line(node: ast.AST, field: str = "body") -> bool:
    """Whether ``node``'s ``field`` block is written on its header's line (``try: x()``)."""
    return field in getattr(node, _ONE_LINE, ())


def is_elif(node: ast.If) -> bool:
    """Whether ``node`` was written ``elif`` (the ``orelse`` of the ``if`` before it)."""
    return bool(getattr(node, _ELIF, False))


def else_units(node: ast.If) -> ast.If | list[Unit] | None:
    """libcst's ``If.orelse``: the ``elif`` (an ``ast.If``), the ``else:`` block's units, or None."""
    if not node.orelse:
        return None
    first = node.orelse[0]
    if len(node.orelse) == 1 and isinstance(first, ast.If) and is_elif(first):
        return first
    return units(node, "orelse")


def small_statements(unit: Unit) -> list[ast.stmt]:
    """The simple statements of a line; none for a compound statement."""
    return unit.body if isinstance(unit, SimpleLine) else []


def is_string_line(unit: Unit) -> bool:
    """A line that is only a string literal (a docstring when it comes first)."""
    if not isinstance(unit, SimpleLine) or len(unit.body) != 1:
        return False
    statement = unit.body[0]
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, (str, bytes))
    )


def docstring_unit(body: Sequence[Unit]) -> Unit | None:
    """The docstring of a module, class or function body: its first unit, if a string."""
    if body and is_string_line(body[0]):
        return body[0]
    return None


def first_line(unit: Unit | ast.stmt) -> int:
    """The line a statement starts on: its first decorator's, else its own first token's."""
    decorators = getattr(unit, "decorator_list", ())
    return min([unit.lineno, *(d.lineno for d in decorators)])


def is_empty_line(line: str) -> bool:
    """A line with nothing but whitespace or a comment (libcst's ``EmptyLine``)."""
    stripped = line.lstrip(" \t\f")
    return not stripped.rstrip("\r\n") or stripped.startswith("#")

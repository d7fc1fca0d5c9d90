"""Small stdlib-``ast`` helpers the PG analysis shares: children in source order, dotted names,
source text. Imports nothing of libcst.

libcst visits a node's children in the order they are written; ``ast.iter_child_nodes``
follows ``_fields`` (a def's decorators after its body, a call's keywords after all its
positional arguments) and also yields operators and ``Load``/``Store`` markers. The walks
record events in visit order (the first creation of a test is the one reported), so
:func:`children` gives libcst's order and only nodes that can hold code.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterator
from typing import Callable

from distlint.syntax.ast_names import full_name

__all__ = ["arguments_as_written", "children", "walk", "statements_below", "dotted_name", "Source"]

#: One line with its ending (``\r\n``, ``\r`` or ``\n``: what the tokenizer counts).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


#: Fields that hold no code (operators, load/store contexts, type comments): never walked.
_INERT_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "type_ignores"})
#: Per node type: the fields that may hold code, in ``_fields`` order.
_CODE_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields_in_order(node: ast.AST) -> list[ast.AST]:
    kind = type(node)
    names = _CODE_FIELDS.get(kind)
    if names is None:
        names = _CODE_FIELDS[kind] = tuple(f for f in kind._fields if f not in _INERT_FIELDS)
    out: list[ast.AST] = []
    for name in names:
        value = getattr(node, name, None)
        if value is None:
            continue
        if value.__class__ is list:
            # Lists hold nodes, but ``global``'s names are strings and a dict's ``**x`` key None.
            out.extend(v for v in value if isinstance(v, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def _function(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    out: list[ast.AST] = [*node.decorator_list, node.args]
    if node.returns is not None:
        out.append(node.returns)
    return out + list(node.body)


def _class(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.ClassDef)
    return [*node.decorator_list, *node.bases, *node.keywords, *node.body]


def _call(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.Call)
    return [node.func, *arguments_as_written(node)]


def arguments_as_written(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """``call``'s arguments in the order written (libcst's ``Call.args``): ``ast`` lists the
    positional ones (``*x`` included) before the keywords (``**x`` included), though a keyword
    may come before a ``*x``."""
    if not call.keywords or not call.args:
        return [*call.args, *call.keywords]
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    arguments.sort(key=lambda a: (a.lineno, a.col_offset))
    return arguments


def _dict(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.Dict)
    out: list[ast.AST] = []
    for key, value in zip(node.keys, node.values):
        if key is not None:
            out.append(key)
        out.append(value)
    return out


def _if_exp(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.IfExp)
    return [node.body, node.test, node.orelse]


def _arguments(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.arguments)
    out: list[ast.AST] = []
    positional = [*node.posonlyargs, *node.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(node.defaults))
    defaults += node.defaults
    for parameter, default in zip(positional, defaults):
        out.append(parameter)
        if default is not None:
            out.append(default)
    if node.vararg is not None:
        out.append(node.vararg)
    for parameter, kw_default in zip(node.kwonlyargs, node.kw_defaults):
        out.append(parameter)
        if kw_default is not None:
            out.append(kw_default)
    if node.kwarg is not None:
        out.append(node.kwarg)
    return out


_SPECIAL: dict[type, Callable[[ast.AST], list[ast.AST]]] = {
    ast.FunctionDef: _function,
    ast.AsyncFunctionDef: _function,
    ast.ClassDef: _class,
    ast.Call: _call,
    ast.Dict: _dict,
    ast.IfExp: _if_exp,
    ast.arguments: _arguments,
}


#: Nodes that never have children worth walking.
_LEAVES = frozenset(
    {ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal}
)


def children(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` that may hold code, in source order (libcst's visit order)."""
    kind = type(node)
    if kind in _LEAVES:
        return []
    special = _SPECIAL.get(kind)
    return special(node) if special is not None else _fields_in_order(node)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and every node below it, depth first in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))


#: What a block holds: statements, or the handlers and cases that hold statements.
_BLOCK_ITEMS: tuple[type, ...] = tuple(
    getattr(ast, name) for name in ("stmt", "excepthandler", "match_case") if hasattr(ast, name)
)


def statements_below(node: ast.AST) -> Iterator[ast.AST]:
    """Every statement below ``node`` at any depth, with the ``except`` handlers and ``case``
    blocks that hold them, breadth first in ``ast.walk``'s order; no expression is walked (none
    holds a statement, and they are most of a module's nodes). A statement's ancestors are
    statements, handlers and cases alone, so its depth and its order among its peers are those
    ``ast.walk`` gives."""
    pending: deque[ast.AST] = deque([node])
    while pending:
        current = pending.popleft()
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, list) and value and isinstance(value[0], _BLOCK_ITEMS):
                yield from value
                pending.extend(value)


def dotted_name(node: ast.AST | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (or a Call's func), else None (libcst's
    ``get_full_name_for_node``, as :func:`distlint.analysis.names.dotted_name` uses it)."""
    if node is None:
        return None
    if isinstance(node, ast.Call):
        node = node.func
    return full_name(node)


class Source:
    """The text of a module, for quoting its nodes as written."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Lines as the tokenizer counts them: ``str.splitlines`` also splits at form feeds.
        self.lines = _LINE.findall(text)
        self._encoded: dict[int, bytes] = {}

    def _line(self, number: int) -> bytes:
        encoded = self._encoded.get(number)
        if encoded is None:
            encoded = self._encoded[number] = self.lines[number - 1].encode("utf-8")
        return encoded

    def segment(self, node: ast.AST) -> str:
        """The text of ``node`` as written (``ast.get_source_segment`` without re-splitting)."""
        start, end = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        first, last = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        if start == end:
            return self._line(start)[first:last].decode("utf-8")
        parts = [self._line(start)[first:]]
        parts += [self._line(n) for n in range(start + 1, end)]
        parts.append(self._line(end)[:last])
        return b"".join(parts).decode("utf-8")

    def line(self, number: int) -> str:
        """Line ``number`` (1-based) without its newline."""
        return self.lines[number - 1].rstrip("\r\n") if 0 < number <= len(self.lines) else ""

    # -- positions as libcst gives them (1-based lines, 0-based columns in characters) -------
    def column(self, line: int, byte_offset: int) -> int:
        """The character column of a byte offset (``ast`` counts UTF-8 bytes, libcst characters)."""
        encoded = self._line(line)
        return len(encoded[:byte_offset].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """``(line, column, end line, end column)`` of an expression or statement."""
        start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return (
            start,
            self.column(start, node.col_offset),  # type: ignore[attr-defined]
            end,
            self.column(end, node.end_col_offset or 0),  # type: ignore[attr-defined]
        )

    def decorator_span(self, expression: ast.expr) -> tuple[int, int, int, int]:
        """The span of a decorator from its ``@`` (libcst's ``Decorator``) to its expression's end."""
        start, column, end, end_column = self.span(expression)
        line = self.line(start)
        at = line.rfind("@", 0, column)
        return (start, at if at >= 0 else column, end, end_column)

    def name_span(
        self, definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> tuple[int, int, int, int]:
        """The span of a def's or class's name (``ast`` keeps no node for it)."""
        line = self.line(definition.lineno)
        keyword = "class" if isinstance(definition, ast.ClassDef) else "def"
        at = line.find(keyword, self.column(definition.lineno, definition.col_offset))
        at = line.find(definition.name, at + len(keyword)) if at >= 0 else -1
        if at < 0:  # the name on a continuation line: report the def itself
            return self.span(definition)
        return (definition.lineno, at, definition.lineno, at + len(definition.name))

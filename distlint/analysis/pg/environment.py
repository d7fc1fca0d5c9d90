"""Which environment variables a statement or call writes (the PG scan's environment events).

Only the variable names are read here; whether one affects a PG is
:func:`~distlint.analysis.pg.creation.is_pg_env_key`'s call, made by the scan.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Optional

from distlint.analysis.pg.creation import method_name, string_literal
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import arguments_as_written

#: ``(key, node)``: the variable written (None when not a literal) and the node writing it.
Written = tuple[Optional[str], ast.AST]


def is_os_environ(names: AstNames, node: ast.AST) -> bool:
    return "os.environ" in names.names_of(node)


def environ_subscripts(names: AstNames, targets: Sequence[ast.expr]) -> list[Written]:
    """``os.environ[KEY]`` among the targets of an assignment, ``+=`` or ``del``."""
    written: list[Written] = []
    for target in targets:
        if isinstance(target, ast.Subscript) and is_os_environ(names, target.value):
            written.append((string_literal(_first_index(target)), target))
    return written


def _first_index(subscript: ast.Subscript) -> ast.expr:
    """The first of the subscript's comma-separated indices (libcst's first ``SubscriptElement``):
    ``"A"`` of ``x["A", "B"]``, but all of ``x[("A", "B")]``.

    ``ast`` has one tuple for both; a bare one starts where its first element does or ends where
    its last does (positions exclude an element's own parentheses, so ``x[("A"), ("B")]`` reads
    as parenthesized: no key, where libcst read ``"A"``)."""
    index = subscript.slice
    if isinstance(index, ast.Tuple) and index.elts:
        first, last = index.elts[0], index.elts[-1]
        if _start(first) == _start(index) or _end(last) == _end(index):
            return first
    return index


def _start(node: ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _end(node: ast.expr) -> tuple[int | None, int | None]:
    return node.end_lineno, node.end_col_offset


def environment_call_keys(names: AstNames, call: ast.Call) -> list[str | None] | None:
    """The variables ``call`` writes, or None when it is not an environment call.

    ``os.environ.update/setdefault/pop``, ``os.putenv/unsetenv``, ``patch.dict(os.environ, ...)``,
    ``monkeypatch.setenv/delenv``. A key that is not a literal reads as None.
    """
    func = call.func
    keys: list[str | None] = []
    if isinstance(func, ast.Attribute) and is_os_environ(names, func.value):
        passed = _passed(call)
        if func.attr == "update":
            keys += _written_keys(passed)
        elif func.attr in ("setdefault", "pop", "__setitem__", "__delitem__") and passed:
            keys.append(string_literal(passed[0][1]))
        return keys
    if not call.args and not call.keywords:
        return None  # each remaining form writes what its arguments say
    # (Asked of every call of every test: the arguments are listed only past that check.)
    resolved = names.names_of(call)
    passed = _passed(call)
    if resolved & {"os.putenv", "os.unsetenv"} and passed:
        keys.append(string_literal(passed[0][1]))
    elif resolved & {"unittest.mock.patch.dict", "mock.patch.dict"} and passed:
        target = passed[0][1]
        if is_os_environ(names, target) or string_literal(target) == "os.environ":
            keys += _written_keys(passed[1:], ignored=("values", "clear"))
    elif (
        method_name(call) in ("setenv", "delenv")
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "monkeypatch"
        and passed
    ):
        keys.append(string_literal(passed[0][1]))
    else:
        return None
    return keys


#: One argument as written: its keyword (None for positional, ``*`` and ``**`` ones) and the
#: expression passed (after the ``*`` or ``**``).
_Passed = tuple[Optional[str], ast.expr]


def _passed(call: ast.Call) -> list[_Passed]:
    """``call``'s arguments in the order they are written (keywords may precede a ``*args``)."""
    return [
        (a.arg, a.value)
        if isinstance(a, ast.keyword)
        else (None, a.value if isinstance(a, ast.Starred) else a)
        for a in arguments_as_written(call)
    ]


def _written_keys(passed: Sequence[_Passed], ignored: Sequence[str] = ()) -> list[str | None]:
    """The keys of ``KEY=value`` arguments and of dict literals passed (``**{...}`` too)."""
    keys: list[str | None] = []
    for keyword, value in passed:
        if keyword is not None and keyword not in ignored:
            keys.append(keyword)
        elif isinstance(value, ast.Dict):
            keys += _dict_keys(value)
    return keys


def _dict_keys(node: ast.Dict) -> list[str | None]:
    return [string_literal(key) for key in node.keys if key is not None]

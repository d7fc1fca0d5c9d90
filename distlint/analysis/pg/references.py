"""Where a module names its per-test classes outside their own setUp/tearDown: a class that other
code uses by name cannot be replaced by a continuous class without changing that code, so its
tests stay per test (``Reason.MODULE_REFERENCE``; the DL2xx rules say so, and ``distlint
migrate`` leaves them, from this one search).

Not a use: the class's own ``setUp``/``tearDown`` (``super(X, self)`` stays where it is), a
method's ``super(X, self)`` (it becomes ``super()`` when the method moves), ``x.X`` (an attribute,
not the class), and the factory calls that follow the tests (:mod:`distlint.analysis.factories`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence

from distlint.analysis.factories import factory_call
from distlint.analysis.model import ModuleReference
from distlint.source import source_lines
from distlint.syntax.ast_lines import SimpleLine, Unit, is_one_line, units
from distlint.syntax.ast_nodes import children

#: Methods that stay in the per-test class whatever moves: what they name is no use elsewhere.
HOOKS = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass", "__init__"})


def module_references(
    module: ast.Module, classes: set[str], text: str | None = None
) -> list[ModuleReference]:
    """The uses of ``classes`` (per-test class names) in ``module`` (``ast_lines.prepare``
    already called on it). ``text``: its source, when known: a statement whose lines spell none
    of ``classes`` is not walked, and a name counts only as written (as libcst read it: an
    identifier Python normalises to a class name, a full-width letter, is none) and is
    placed where written when ``ast`` holds it as a string (a def's name, a parameter...)."""
    found: list[ModuleReference] = []
    if not classes:
        return found
    lines = source_lines(text) if text is not None else None
    for statement in units(module):
        if isinstance(statement, ast.ClassDef) and statement.name in classes:
            nodes = [*statement.decorator_list, *_not_hooks(statement)]
            where = "inside a class body"
        elif isinstance(statement, ast.ClassDef):
            nodes, where = [statement], f"in class {statement.name}"
        else:
            factory = factory_call(statement)
            if factory is not None and factory.source in classes:
                continue  # follows the tests: not a use that keeps them
            nodes, where = [statement], "at module level"
        if not _names_a_class(statement, classes, lines):
            continue
        found += [ModuleReference(n.id, n, where) for n in _names_in(nodes, classes, lines)]
    return found


def _names_a_class(statement: Unit, classes: set[str], lines: list[str] | None) -> bool:
    """Whether a ``Name`` node of ``statement`` names one of ``classes`` where the search
    looks. The libcst search walked only such statements (it asked the ``ast`` tree first),
    so the identifiers it also counted (a def's name, a parameter, an import...: no ``Name``
    in ``ast``) count only in a statement that has such a name too."""
    statements = statement.body if isinstance(statement, SimpleLine) else [statement]
    return any(n in classes for s in statements for n in _searched_names(s, classes, lines))


def _not_hooks(cls: ast.ClassDef) -> Iterable[Unit]:
    for statement in () if is_one_line(cls) else units(cls):
        if not (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name in HOOKS
        ):
            yield statement


def _names_in(
    nodes: Sequence[ast.AST | SimpleLine], wanted: set[str], lines: list[str] | None
) -> list[ast.Name]:
    """The names of ``wanted`` in ``nodes``, in the order libcst visits them: ``x.ClassName``
    is an attribute, not a reference, and neither is ``super(ClassName, self)``'s first
    argument (it becomes ``super()`` when the member moves, or the class is refused for it:
    codemods.members.needs_fixed_class)."""
    found: list[ast.Name] = []
    for node in nodes:
        roots = node.body if isinstance(node, SimpleLine) else [node]
        for root in roots:
            found += (n for n in _walk(root, wanted, lines) if _written(n, lines))
    return found


def _walk(node: ast.AST, wanted: set[str], lines: list[str] | None) -> Iterator[ast.Name]:
    """The ``Name`` nodes of ``wanted`` below ``node`` (itself included), in source order, but
    the first argument of a ``super(...)`` call; with the identifiers libcst holds as ``Name``
    nodes where ``ast`` holds strings (a def's or class's name, a parameter, a keyword
    argument, an import, ``except ... as x``, ``global x``, a match capture) as ``Name``
    nodes made for the purpose, placed where the identifier is written."""
    stack: list[ast.AST | ast.Name] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name):
            if current.id in wanted:
                yield current
            continue
        below: list[ast.AST] = children(current)
        if (
            isinstance(current, ast.Call)
            and isinstance(current.func, ast.Name)
            and current.func.id == "super"
            and len(below) > 1
        ):
            below = below[2:]  # neither ``super`` nor its first argument
        stack.extend(reversed(_with_identifiers(current, below, wanted, lines)))


def _ast_kinds(*names: str) -> tuple[type, ...]:
    """The ``ast`` node classes of these names that this Python has (``match`` came in 3.10)."""
    return tuple(getattr(ast, name) for name in names if hasattr(ast, name))


_MATCH_STAR = _ast_kinds("MatchStar")
_MATCH_MAPPING = _ast_kinds("MatchMapping")
_MATCH_CLASS = _ast_kinds("MatchClass")
#: Nodes whose ``name`` follows an ``as``: ``except E as x``, ``case P as x``.
_NAMED_AFTER_AS = (ast.ExceptHandler, *_ast_kinds("MatchAs"))


def _with_identifiers(
    node: ast.AST, below: list[ast.AST], wanted: set[str], lines: list[str] | None
) -> list[ast.AST]:
    """``below`` (the children of ``node``) with ``node``'s own identifiers of ``wanted`` as
    ``Name`` nodes, in libcst's order."""
    identifiers = [(n, as_) for n, as_ in _identifiers(node) if n in wanted]
    if not identifiers:
        return below
    made: list[ast.AST] = [_made_name(node, n, as_, lines) for n, as_ in identifiers]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        count = len(node.decorator_list)  # libcst: decorators, name, the rest
        return [*below[:count], *made, *below[count:]]
    if (
        isinstance(node, _NAMED_AFTER_AS)
        and below
        and below[0] is getattr(node, "type", getattr(node, "pattern", None))
    ):
        return [below[0], *made, *below[1:]]  # ``except E as x``, ``case P as x``
    if isinstance(node, _MATCH_MAPPING + _MATCH_CLASS):
        return [*below, *made]
    return [*made, *below]


def _identifiers(node: ast.AST) -> list[tuple[str, bool]]:
    """The identifiers of ``node`` that libcst holds as ``Name`` nodes (the first part of a
    dotted one: libcst reads no attribute's own name), each with whether ``as`` precedes it."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(node.name, False)]
    if isinstance(node, ast.arg):
        return [(node.arg, False)]
    if isinstance(node, ast.keyword):
        return [] if node.arg is None else [(node.arg, False)]
    if isinstance(node, ast.alias):
        found = [] if node.name == "*" else [(node.name.split(".", 1)[0], False)]
        return found + ([(node.asname, True)] if node.asname else [])
    if isinstance(node, ast.ImportFrom):
        return [(node.module.split(".", 1)[0], False)] if node.module else []
    if isinstance(node, _NAMED_AFTER_AS):
        name = getattr(node, "name", None)
        return [(name, True)] if name else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(name, False) for name in node.names]
    if isinstance(node, _MATCH_STAR):
        name = getattr(node, "name", None)
        return [(name, False)] if name else []
    if isinstance(node, _MATCH_MAPPING):
        return [(node.rest, False)] if node.rest else []  # type: ignore[attr-defined]
    if isinstance(node, _MATCH_CLASS):
        return [(name, False) for name in node.kwd_attrs]  # type: ignore[attr-defined]
    return []


def _made_name(owner: ast.AST, name: str, after_as: bool, lines: list[str] | None) -> ast.Name:
    """A ``Name`` for identifier ``name`` of ``owner``, where it is written (the first match in
    the owner's lines, after its ``def``/``class`` keyword or an ``as``); at the owner's start
    when the text is unknown."""
    lineno: int = getattr(owner, "lineno", 1)
    column: int = getattr(owner, "col_offset", 0)
    if lines is not None:
        found = _find(owner, name, after_as, lines, lineno, column)
        if found is not None:
            lineno, column = found
    made = ast.Name(id=name, ctx=ast.Store())
    made.lineno, made.col_offset = lineno, column
    made.end_lineno, made.end_col_offset = lineno, column + len(name.encode("utf-8"))
    return made


def _find(
    owner: ast.AST, name: str, after_as: bool, lines: list[str], lineno: int, column: int
) -> tuple[int, int] | None:
    """Line and byte column of ``name`` as written in ``owner``'s lines, or None."""
    keyword = ""
    if isinstance(owner, ast.ClassDef):
        keyword = r"\bclass\s+"
    elif isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
        keyword = r"\bdef\s+"
    elif after_as:
        keyword = r"\bas\s+"
    pattern = re.compile(rf"{keyword}(?<![\w.])({re.escape(name)})(?!\w)")
    last = min(getattr(owner, "end_lineno", None) or lineno, len(lines))
    for number in range(lineno, last + 1):
        encoded = lines[number - 1].encode("utf-8")
        start = column if number == lineno else 0
        text = encoded[start:].decode("utf-8", "replace")
        match = pattern.search(text)
        if match is not None:
            return number, start + len(text[: match.start(1)].encode("utf-8"))
    return None


def _written(name: ast.Name, lines: list[str] | None) -> bool:
    """Whether ``name`` is written as its ``id`` (``ast`` normalises identifiers, libcst does
    not): always on an ASCII line."""
    if lines is None or not 0 < name.lineno <= len(lines):
        return True
    line = lines[name.lineno - 1]
    if line.isascii():
        return True
    encoded = line.encode("utf-8")
    return encoded[name.col_offset : name.end_col_offset].decode("utf-8", "replace") == name.id


def _may_spell_any(node: ast.AST, lines: list[str], names: set[str]) -> bool:
    """Whether the lines of ``node`` (a statement's decorators included) spell one of ``names``:
    the search matches a ``Name`` as written, so lines without that text hold none."""
    decorators = getattr(node, "decorator_list", ())
    lineno: int = getattr(node, "lineno")
    first = min([lineno, *(d.lineno for d in decorators)])
    last = getattr(node, "end_lineno", None) or lineno
    segment = "\n".join(lines[first - 1 : last])
    return any(name in segment for name in names)


def _searched_names(
    statement: ast.stmt, classes: set[str], lines: list[str] | None
) -> Iterable[str]:
    """The names in ``statement`` where the search looks (a per-test class's own body but its
    hooks); with ``lines``, the parts whose lines spell no class are not walked (a class's own
    ``class`` line always spells it: its body statements are tested one by one)."""
    roots: list[ast.AST] = [statement]
    if isinstance(statement, ast.ClassDef) and statement.name in classes:
        roots = [
            *statement.decorator_list,
            *(
                s
                for s in statement.body
                if not (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in HOOKS)
            ),
        ]
    if lines is not None:
        roots = [root for root in roots if _may_spell_any(root, lines, classes)]
    skipped: set[int] = set()
    for root in roots:
        for node in ast.walk(root):  # breadth first: a call before its arguments
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "super"
                and node.args
            ):
                skipped.add(id(node.args[0]))
            elif isinstance(node, ast.Name) and id(node) not in skipped:
                yield node.id

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
from collections.abc import Iterable, Sequence

import libcst as cst

from distlint.analysis.factories import factory_call
from distlint.analysis.model import ModuleReference
from distlint.analysis.walk import visit_read_only
from distlint.source import source_lines

#: Methods that stay in the per-test class whatever moves: what they name is no use elsewhere.
HOOKS = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass", "__init__"})


def module_references(
    module: cst.Module,
    classes: set[str],
    tree: ast.Module | None = None,
    text: str | None = None,
) -> list[ModuleReference]:
    """The uses of ``classes`` (per-test class names) in ``module``. ``tree``: the stdlib ``ast``
    tree of a text with the module's top-level statements; with it, libcst visits only the
    statements whose ``ast`` names one of ``classes`` where this search would look. ``text``:
    that tree's source, when known: a statement whose lines spell none of ``classes`` is not
    walked at all."""
    found: list[ModuleReference] = []
    if not classes:
        return found
    named = None
    if tree is not None:
        lines = source_lines(text) if text is not None else None
        named = _named_per_statement(tree, module, classes, lines)
    for index, statement in enumerate(module.body):
        if named is not None and not named[index] & classes:
            continue
        if isinstance(statement, cst.ClassDef) and statement.name.value in classes:
            nodes = [*statement.decorators, *_not_hooks(statement)]
            where = "inside a class body"
        elif isinstance(statement, cst.ClassDef):
            nodes, where = [statement], f"in class {statement.name.value}"
        else:
            factory = factory_call(statement)
            if factory is not None and factory.source in classes:
                continue  # follows the tests: not a use that keeps them
            nodes, where = [statement], "at module level"
        found += [ModuleReference(n.value, n, where) for n in _names_in(nodes, classes)]
    return found


def _not_hooks(cls: cst.ClassDef) -> Iterable[cst.BaseStatement]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for statement in body:
        if not (isinstance(statement, cst.FunctionDef) and statement.name.value in HOOKS):
            yield statement


def _names_in(nodes: Sequence[cst.CSTNode], wanted: set[str]) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in wanted:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            visit_read_only(node.value, self)  # ``x.ClassName`` is an attribute, not a reference
            return False

        def visit_Call(self, node: cst.Call) -> bool:
            if isinstance(node.func, cst.Name) and node.func.value == "super" and node.args:
                # ``super(ClassName, self)``: becomes ``super()`` when the member moves (or the
                # class is refused for it: codemods.members.needs_fixed_class).
                for arg in node.args[1:]:
                    visit_read_only(arg, self)
                return False
            return True

    for node in nodes:
        visit_read_only(node, _Find())
    return found


def _named_per_statement(
    tree: ast.Module, module: cst.Module, classes: set[str], lines: list[str] | None
) -> list[frozenset[str]] | None:
    """For each top-level statement of ``module``, the names of ``classes`` its ``ast`` holds where
    :func:`module_references` looks (not in a per-test class's hooks, not as ``super()``'s first
    argument); None when the trees do not line up (``ast`` splits ``a; b``: counted).
    ``lines``: the tree's source lines, to skip the statements that cannot name a class."""
    found: list[frozenset[str]] = []
    cursor = 0
    for statement in module.body:
        width = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        nodes = tree.body[cursor : cursor + width]
        cursor += width
        found.append(
            frozenset(
                n for node in nodes for n in _searched_names(node, classes, lines) if n in classes
            )
        )
    return found if cursor == len(tree.body) else None


def _may_spell_any(node: ast.AST, lines: list[str], names: set[str]) -> bool:
    """Whether the lines of ``node`` (a statement's decorators included) spell one of ``names``:
    the libcst search matches a ``Name`` as written (an identifier Python would normalise to one
    of them, a full-width letter, is not one), so lines without that text hold none."""
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

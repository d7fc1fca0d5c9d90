"""What a block of code does when it runs, read cheaply from libcst nodes (the DL1xx analysis).

:func:`scan_code` collects a block's calls, imports, simple aliases and definitions without
entering ``def``/``class``/``lambda`` bodies (they do not run); :func:`iter_statements` walks
statements only; :func:`binds_names` says whether moving a statement could hide a name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Callable

import libcst as cst

from distlint.analysis.names import dotted_name
from distlint.analysis.walk import code_children


class BodyScan:
    """What a block of code does when it runs: its calls, imports, definitions.

    The bodies of ``def``, ``class`` and ``lambda`` do not run, so they are not entered
    (the definitions themselves are recorded). A statement ``stop_at`` accepts (a nested
    main guard, whose code does not run at import) is recorded and not entered.
    """

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.imports: list[cst.Import | cst.ImportFrom] = []
        self.aliases: list[tuple[str, str]] = []
        self.functions: list[cst.FunctionDef] = []
        self.classes: list[cst.ClassDef] = []
        self.nested_guards: list[cst.If] = []
        #: Every assignment (``globals()[name] = ...`` generates tests).
        self.assigns: list[cst.Assign] = []
        #: Loops (a loop that makes classes generates tests).
        self.loops: list[cst.For | cst.While] = []


def scan_code(
    nodes: Iterable[cst.CSTNode], stop_at: Callable[[cst.CSTNode], bool] | None = None
) -> BodyScan:
    # ``type(node) is X``, not ``isinstance``: these are concrete libcst classes (no
    # subclasses), and libcst's ABC-based isinstance is the hottest call of the scan.
    scan = BodyScan()
    stack = list(reversed(list(nodes)))
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef:
            scan.functions.append(node)  # type: ignore[arg-type]
            continue
        if kind is cst.ClassDef:
            scan.classes.append(node)  # type: ignore[arg-type]
            continue
        if kind is cst.Lambda:
            continue
        if kind is cst.If and stop_at is not None and stop_at(node):
            scan.nested_guards.append(node)  # type: ignore[arg-type]
            continue
        if kind is cst.Call:
            scan.calls.append(node)  # type: ignore[arg-type]
        elif kind is cst.Import or kind is cst.ImportFrom:
            scan.imports.append(node)  # type: ignore[arg-type]
            continue
        elif kind is cst.Assign:
            scan.assigns.append(node)  # type: ignore[arg-type]
            _record_alias(node, scan.aliases)  # type: ignore[arg-type]
        elif kind is cst.For or kind is cst.While:
            scan.loops.append(node)  # type: ignore[arg-type]
        stack.extend(reversed(code_children(node)))
    return scan


def _record_alias(node: cst.Assign, aliases: list[tuple[str, str]]) -> None:
    if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
        value = (
            dotted_name(node.value) if isinstance(node.value, (cst.Name, cst.Attribute)) else None
        )
        if value is not None:
            aliases.append((node.targets[0].target.value, value))


def directly_raises(block: cst.BaseSuite) -> bool:
    """A ``raise`` among the block's own statements (not one hidden in a branch)."""
    for statement in block.body:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
        if any(isinstance(small, cst.Raise) for small in smalls):
            return True
    return False


def _inner_statements(node: cst.CSTNode) -> list[cst.CSTNode]:
    inner: list[cst.CSTNode] = []
    for attribute in ("body", "orelse", "finalbody"):
        child = getattr(node, attribute, None)
        if isinstance(child, cst.IndentedBlock):
            inner.extend(child.body)
        elif isinstance(child, (cst.If, cst.Else, cst.Finally)):
            inner.append(child)
    for attribute in ("handlers", "cases"):
        inner.extend(getattr(node, attribute, None) or ())
    return inner


def iter_statements(statements: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Every statement in ``statements`` and, recursively, in their blocks (``def`` and
    ``class`` bodies included; ``else``/``except``/``finally`` clauses are yielded too)."""
    stack = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, cst.SimpleStatementLine):
            stack.extend(reversed(_inner_statements(node)))


class _Binder(cst.CSTVisitor):
    binds = False

    def _mark(self) -> bool:
        self.binds = True
        return False

    def visit_Assign(self, node: cst.Assign) -> bool:
        return self._mark()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        return self._mark()

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        return self._mark()

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        return self._mark()

    def visit_Import(self, node: cst.Import) -> bool:
        return self._mark()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return self._mark()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._mark()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._mark()

    def visit_Global(self, node: cst.Global) -> bool:
        return self._mark()

    def visit_For(self, node: cst.For) -> bool:
        return self._mark()

    def visit_AsName(self, node: cst.AsName) -> bool:  # with ... as x, except E as x
        return self._mark()

    def visit_Del(self, node: cst.Del) -> bool:
        return self._mark()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def binds_names(statement: cst.CSTNode) -> bool:
    """Whether moving ``statement`` under the guard could hide a name other code uses."""
    binder = _Binder()
    statement.visit(binder)
    return binder.binds

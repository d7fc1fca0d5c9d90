"""A test class's body as units the migrator can place, and which members code uses.

A *unit* is one statement of a class body: a method, a property (getter and setter
are separate units with the same name), a class attribute line, a nested class. The
migrator decides per unit whether it stays in the per-test class, moves to the
continuous class, or goes to a mixin both derive from; it decides that from which
*names* (``self.<name>``) the code on each side uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst

from distlint.analysis.pg.references import HOOKS  # they stay with the per-test class
from distlint.analysis.walk import code_children, kind_test, visit_read_only
from distlint.codemods.rewrite import zero_arg_super
from distlint.cst_utils import docstring_statement

#: unittest collects every method whose name starts with this (``testFoo`` too).
TEST_PREFIX = "test"
#: Names through which code reaches its class's members.
_SELF_NAMES = frozenset({"self", "cls"})
#: Calls whose string argument names an attribute (``getattr(self, "device")``).
_REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})


@dataclass
class Unit:
    """One statement of a class body and the member names it defines."""

    statement: cst.BaseStatement
    names: tuple[str, ...]
    kind: (
        str  # "docstring" | "test" | "hook" | "method" | "attribute" | "class" | "noise" | "other"
    )

    @property
    def name(self) -> str:
        return self.names[0] if self.names else ""


@dataclass
class ClassBody:
    node: cst.ClassDef
    units: list[Unit] = field(default_factory=list)

    @property
    def docstring(self) -> Unit | None:
        return next((u for u in self.units if u.kind == "docstring"), None)

    def defines(self, name: str) -> bool:
        return any(name in u.names for u in self.units if u.kind not in ("docstring", "noise"))

    def units_named(self, name: str) -> list[Unit]:
        return [u for u in self.units if name in u.names]

    def tests(self) -> list[Unit]:
        return [u for u in self.units if u.kind == "test"]

    def hooks(self) -> list[Unit]:
        return [u for u in self.units if u.kind == "hook"]

    def others(self) -> list[Unit]:
        return [u for u in self.units if u.kind == "other"]


def class_statements(node: cst.ClassDef) -> Sequence[cst.BaseStatement]:
    return node.body.body if isinstance(node.body, cst.IndentedBlock) else ()


def _assigned_names(line: cst.SimpleStatementLine) -> tuple[str, ...] | None:
    """Names a class-level attribute line binds; None when the line is something else."""
    names: list[str] = []
    for small in line.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                if not isinstance(target.target, cst.Name):
                    return None
                names.append(target.target.value)
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
            names.append(small.target.value)
        else:
            return None
    return tuple(names)


def is_noise(statement: cst.BaseStatement) -> bool:
    """A line of ``pass`` and ``...``: it defines nothing."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) or (isinstance(s, cst.Expr) and isinstance(s.value, cst.Ellipsis))
        for s in statement.body
    )


def classify_body(node: cst.ClassDef) -> ClassBody:
    body = ClassBody(node)
    statements = class_statements(node)
    docstring = docstring_statement(statements)
    for statement in statements:
        if statement is docstring:
            body.units.append(Unit(statement, (), "docstring"))
        elif isinstance(statement, cst.FunctionDef):
            name = statement.name.value
            kind = "test" if name.startswith(TEST_PREFIX) else "hook" if name in HOOKS else "method"
            body.units.append(Unit(statement, (name,), kind))
        elif isinstance(statement, cst.ClassDef):
            body.units.append(Unit(statement, (statement.name.value,), "class"))
        elif isinstance(statement, cst.SimpleStatementLine):
            if is_noise(statement):
                body.units.append(Unit(statement, (), "noise"))
                continue
            names = _assigned_names(statement)
            body.units.append(
                Unit(statement, names, "attribute") if names else Unit(statement, (), "other")
            )
        else:
            body.units.append(Unit(statement, (), "other"))
    return body


# -- which members code uses ---------------------------------------------------------------


class _Uses:
    """What one node's code does with members: read with the analyses' field walker
    (:func:`~distlint.analysis.walk.code_children`), ~3x cheaper than a ``CSTVisitor``."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.names: set[str] = set()
        self.explicit_super: bool = False
        self.mangled: bool = False
        pending = [node]
        while pending:
            current = pending.pop()
            if _is_attribute(current):
                self.visit_Attribute(current)
            elif _is_call(current):
                self.visit_Call(current)
            pending.extend(code_children(current))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        value = node.value
        attr = node.attr.value
        reached = False
        if isinstance(value, cst.Name) and value.value in _SELF_NAMES:
            reached = True
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            # super().x, type(self).x
            if value.func.value in ("super", "type"):
                reached = True
        elif (
            isinstance(value, cst.Attribute)
            and value.attr.value == "__class__"
            and isinstance(value.value, cst.Name)
            and value.value.value in _SELF_NAMES
        ):
            reached = True
        if reached:
            self.names.add(attr)
            if attr.startswith("__") and not attr.endswith("__"):
                self.mangled = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "super" and node.args:
            self.explicit_super = True
        if isinstance(func, cst.Name) and func.value in _REFLECTION and len(node.args) >= 2:
            name = node.args[1].value
            if isinstance(name, cst.SimpleString) and isinstance(name.evaluated_value, str):
                self.names.add(name.evaluated_value)


_is_attribute = kind_test(cst.Attribute)
_is_call = kind_test(cst.Call)
#: One visit per node: the plan asks about the same members many times (placement settles in
#: rounds, and the class-body checks read every member first). Keyed by ``id()`` with the node
#: kept, so an id cannot be reused while its entry lives; emptied once it holds this many.
_VISITED: dict[int, tuple[cst.CSTNode, _Uses]] = {}
_VISITED_LIMIT = 20_000


def _uses_of(node: cst.CSTNode) -> _Uses:
    found = _VISITED.get(id(node))
    if found is not None and found[0] is node:
        return found[1]
    uses = _Uses(node)
    if len(_VISITED) >= _VISITED_LIMIT:
        _VISITED.clear()
    _VISITED[id(node)] = (node, uses)
    return uses


def forget_visits() -> None:
    """Drop what :func:`member_uses` remembers (a new module: its nodes are others)."""
    _VISITED.clear()


def member_uses(nodes: Iterable[cst.CSTNode]) -> frozenset[str]:
    """Member names ``nodes`` use through ``self``/``cls``/``super()``/``type(self)``/getattr."""
    names: set[str] = set()
    for node in nodes:
        names |= _uses_of(node).names
    return frozenset(names)


def class_level_names(statement: cst.BaseStatement) -> frozenset[str]:
    """Bare names a class-attribute line reads (``b = a + 1`` reads ``a``)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return frozenset()
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    for small in statement.body:
        value = getattr(small, "value", None)
        if value is not None:
            visit_read_only(value, _Names())
    return frozenset(found)


def uses_of_unit(unit: Unit) -> frozenset[str]:
    if unit.kind == "attribute":
        return member_uses([unit.statement]) | class_level_names(unit.statement)
    return member_uses([unit.statement])


def needs_fixed_class(nodes: Iterable[cst.CSTNode], owner: str = "") -> str | None:
    """Why code cannot change class (``super(X, self)`` that cannot become ``super()``,
    name-mangled ``self.__x``), or None. ``owner``: the class the code is in now."""
    explicit_super = mangled = False
    for node in nodes:
        uses = _uses_of(node)
        mangled = mangled or uses.mangled
        if uses.explicit_super and not (
            isinstance(node, cst.FunctionDef) and owner and zero_arg_super(node, owner) is not None
        ):
            explicit_super = True
    if explicit_super:
        return (
            "calls super() with arguments other than its own class and self (or in a nested scope)"
        )
    if mangled:
        return "uses a name-mangled self.__attribute"
    return None

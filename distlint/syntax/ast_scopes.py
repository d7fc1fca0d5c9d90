"""libcst's scope rules (``libcst.metadata.scope_provider``), ported to plain objects.

:mod:`.ast_names` must give the qualified names libcst's ``QualifiedNameProvider`` gives. They
follow from libcst's scope model, which libcst's classes cannot bring here without importing
libcst; so each function below is the libcst method it names, minus the branches only PEP 695
annotation scopes reach. Its quirks are kept, as the answers must match:

* a name read before any binding of it in its own scope is looked up from the scope's
  *parent*, a class included (a method reading ``dist`` before ``dist = ...`` gets ``C.dist``);
* a node that is not such a read (an attribute, a call, a stored name) is named from *all*
  the bindings of its head visible from its scope, earlier or later;
* ``a.b().c`` and ``a[0].c`` are named as ``a.c``-like dotted names, and an attribute of
  anything else as ``None.c``, which finds the builtin: ``"s".join`` is ``builtins.None``;
* an import's names are read off every alias of its statement.

Answers are plain strings: the ``QualifiedNameSource`` libcst attaches is dropped, as
:func:`distlint.analysis.names.node_names` drops it.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable
from typing import Union

#: Scope kinds. Only class scopes matter apart: their names are invisible to inner scopes.
BUILTIN, GLOBAL, FUNCTION, CLASS, COMPREHENSION = range(5)

#: What an import assignment reads its names from.
ImportNode = Union[ast.Import, ast.ImportFrom]


class Scope:
    """One of libcst's scopes: its assignments by name, in recording order, and its counter.

    ``count`` is libcst's ``_assignment_count``: it moves on leaving an assignment-like node,
    and an access sees an assignment of its own scope only if the counter moved in between.
    """

    __slots__ = (
        "kind",
        "parent",
        "globals",
        "family",
        "assignments",
        "count",
        "overwrites",
        "prefix",
        "dotted",
        "dotted_heads",
        "resolved",
        "bound",
    )

    prefix: str  #: ``_name_prefix``: what this scope's own names are qualified with.

    def __init__(self, kind: int, parent: Scope | None = None, name: str | None = None) -> None:
        self.kind = kind
        self.parent: Scope = self if parent is None else parent
        self.globals: Scope = self if kind <= GLOBAL else self.parent.globals
        #: In the module scope: every scope of the module (what :meth:`release` lets go of).
        self.family: list[Scope] = []
        self.globals.family.append(self)
        self.assignments: dict[str, list[Assignment]] = {}
        self.count = 0
        #: ``global``/``nonlocal`` names: where their assignments go (``_scope_overwrites``).
        self.overwrites: dict[str, Scope] = {}
        #: In the module scope: every dotted name bound anywhere (``import a.b``), so that
        #: looking up ``self.assertEqual`` need not climb the scopes to learn it is not.
        self.dotted: set[str] = set() if kind <= GLOBAL else self.globals.dotted
        self.dotted_heads: set[str] = set() if kind <= GLOBAL else self.globals.dotted_heads
        #: :func:`resolve`'s and :func:`_bound`'s answers, kept: nothing is looked up before
        #: the walk is over.
        self.resolved: dict[str, list[Assignment]] = {}
        self.bound: dict[str, list[Assignment] | None] = {}
        parts = [self.parent.prefix if parent is not None else ""]
        if kind == FUNCTION:
            parts += [name or "", "<locals>"]
        elif kind == CLASS:
            parts.append(name or "")
        elif kind == COMPREHENSION:
            parts.append("<comprehension>")
        self.prefix = ".".join(part for part in parts if part)

    def release(self) -> None:
        """In the module scope: drop what ties every scope of the module (and the builtins')
        to its assignments and the other scopes (see
        :meth:`distlint.syntax.ast_names.AstNames.release`)."""
        for scope in [*self.family, self.parent]:
            if scope is not self:
                scope._release_one()
        self._release_one()

    def _release_one(self) -> None:
        self.family = []
        self.assignments.clear()
        self.overwrites.clear()
        self.resolved.clear()
        self.bound.clear()
        self.parent = self.globals = None  # type: ignore[assignment]


def module_scope() -> Scope:
    """A module's ``GlobalScope``, child of its ``BuiltinScope``."""
    return Scope(GLOBAL, Scope(BUILTIN))


class Assignment:
    """libcst's ``Assignment``: a binding of ``name`` by ``node`` in ``scope``."""

    __slots__ = ("name", "scope", "node", "index", "_names")

    def __init__(self, name: str, scope: Scope, node: ast.AST | None, index: int) -> None:
        self.name = name
        self.scope = scope
        self.node = node
        self.index = index
        self._names: dict[str, frozenset[str]] = {}

    def qualified_names(self, full_name: str) -> frozenset[str]:
        """``get_qualified_names_for(full_name)``: ``full_name``, starting with a name this
        assignment binds, qualified (kept: each is asked from many scopes)."""
        found = self._names.get(full_name)
        if found is None:
            found = self._names[full_name] = frozenset(self._qualify(full_name))
        return found

    def own_names(self) -> frozenset[str]:
        """The names of an access that this assignment binds."""
        return self.qualified_names(self.name)

    def _qualify(self, full_name: str) -> Iterable[str]:
        prefix = self.scope.prefix
        return (f"{prefix}.{full_name}" if prefix else full_name,)


class BuiltinAssignment(Assignment):
    def _qualify(self, full_name: str) -> Iterable[str]:
        return (f"builtins.{self.name}",)  # the name's own, whatever follows it


class ImportAssignment(Assignment):
    node: ImportNode

    def _qualify(self, full_name: str) -> Iterable[str]:
        # Every alias of the statement is tried, not only the one that bound ``name``.
        node = self.node
        module = ""
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
        found = set()
        for alias in node.names:
            parts = alias.name.split(".")
            for end in range(len(parts), 0, -1):
                real_name = as_name = ".".join(parts[:end])
                if module.endswith("."):
                    real_name = module + real_name
                elif module:
                    real_name = f"{module}.{real_name}"
                if alias.asname:
                    as_name = alias.asname
                if full_name.startswith(as_name):
                    remaining = full_name.split(as_name, 1)[1]
                    if remaining and not remaining.startswith("."):
                        continue
                    remaining = remaining.lstrip(".")
                    found.add(f"{real_name}.{remaining}" if remaining else real_name)
                    break
        return found


def _visible(scope: Scope) -> Scope:
    """``_next_visible_parent`` from ``scope`` on: class scopes are skipped."""
    while scope.kind == CLASS:
        scope = scope.parent
    return scope


def contains(scope: Scope, name: str) -> bool:
    """``name in scope``."""
    if "." in name and name not in scope.dotted:
        return False
    while True:
        if scope.kind == BUILTIN:
            return hasattr(builtins, name)
        overwrite = scope.overwrites.get(name)
        if overwrite is not None:
            scope = overwrite  # the declared scope itself, class or not (as libcst does)
            continue
        if name in scope.assignments:
            return True
        scope = _visible(scope.parent)


def resolve(scope: Scope, name: str) -> list[Assignment]:
    """``scope._resolve_scope_for_access(name, scope)``: the assignments ``name`` may mean,
    all of one scope, in binding order."""
    found = scope.resolved.get(name)
    if found is None:
        found = scope.resolved[name] = _resolve(scope, name)
    return found


def _resolve(scope: Scope, name: str) -> list[Assignment]:
    while True:
        found = scope.assignments.get(name)
        if scope.kind == BUILTIN:
            if found is None and hasattr(builtins, name):
                found = scope.assignments[name] = [BuiltinAssignment(name, scope, None, -1)]
            return found or []
        overwrite = scope.overwrites.get(name)
        if overwrite is not None:
            scope = _visible(overwrite)
        elif found is not None:
            return found
        else:
            scope = _visible(scope.parent)


def assignment_target(scope: Scope, name: str) -> Scope:
    """``_find_assignment_target``: where a binding of ``name`` made in ``scope`` goes."""
    overwrite = scope.overwrites.get(name)
    while overwrite is not None:
        scope = _visible(overwrite)
        overwrite = scope.overwrites.get(name)
    return scope


def record(scope: Scope, name: str, node: ast.AST, kind: type[Assignment] = Assignment) -> None:
    """``record_assignment`` / ``record_import_assignment``."""
    target = assignment_target(scope, name)
    if "." in name:
        target.dotted.add(name)
        target.dotted_heads.add(name.partition(".")[0])
    target.assignments.setdefault(name, []).append(kind(name, target, node, target.count))


def _bound(scope: Scope, name: str) -> list[Assignment] | None:
    """``scope[name] if name in scope else None``."""
    if name in scope.bound:
        return scope.bound[name]
    found = scope.bound[name] = resolve(scope, name) if contains(scope, name) else None
    return found


def access_names(scope: Scope, name: str, index: int) -> frozenset[str]:
    """The names of an access of ``name`` made in ``scope`` when its counter was ``index``:
    ``Access.record_assignments`` then ``referent.get_qualified_names_for(referent.name)``."""
    assignments = scope.resolved.get(name)
    if assignments is None:
        assignments = resolve(scope, name)
    if not assignments:
        return frozenset()
    earlier = len(assignments)
    if assignments[0].scope is scope:  # only the bindings made before the access count
        earlier = 0
        while earlier < len(assignments) and assignments[earlier].index < index:
            earlier += 1
        if not earlier:
            # Nothing bound before the access: its scope's *parent* answers (a class too).
            assignments = resolve(scope.parent, name)
            earlier = len(assignments)
    if earlier == 1:
        return assignments[0].own_names()
    return frozenset().union(*(a.own_names() for a in assignments[:earlier]))


def lookup_names(scope: Scope, full_name: str | None, node: ast.AST) -> frozenset[str]:
    """``scope.get_qualified_names_for(node)`` for a node that is not an access."""
    if full_name is None:
        return frozenset()
    head, dot, _ = full_name.partition(".")
    if dot and head in scope.dotted_heads:
        prefix = full_name  # the longest prefix in scope names it (``import a.b``)
        found = _bound(scope, prefix)
        while found is None and prefix != head:
            prefix = prefix[: prefix.rfind(".")]
            found = _bound(scope, prefix)
    else:
        found = _bound(scope, head)
    assignments = found or []
    for assignment in assignments:
        if assignment.node is node:  # a stored name: its own binding only
            return assignment.qualified_names(full_name)
    if len(assignments) == 1:
        return assignments[0].qualified_names(full_name)
    return frozenset().union(*(a.qualified_names(full_name) for a in assignments))

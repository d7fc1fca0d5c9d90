"""Qualified names of the names, attributes and calls of a stdlib ``ast`` tree, without libcst.

The process-group analysis asks what ``dist.init_process_group`` or ``Base`` means; today it
asks :mod:`distlint.analysis.names`, which answers libcst's ``QualifiedNameProvider`` answers
on a libcst tree. Importing libcst (~0.4 s) and parsing with it costs more than a cold
``distlint check`` of a large file may; this module gives the same answers on the stdlib tree
(``tests/test_ast_names.py`` compares them node for node), so the analysis can move over.

:func:`build_ast_names` walks the module once, the way libcst's ``ScopeVisitor`` does (same
scopes, same order, so the same bindings are visible from each name; :mod:`.ast_scope_walk`),
and only records. A node's names are worked out when asked for (a lint asks about a few
thousand of a large file's ~45k nodes), with libcst's rules, ported in :mod:`.ast_scopes`
(quirks included, listed there): ``builtins.len``, ``f.<locals>.x``,
``.relative.x``, every binding of a conditionally bound name, a name read before its local
binding resolved in the enclosing scope, names of attributes chained on an import
(``torch.distributed.init_process_group``) and of class attributes (``Base.x``).

Not mimicked: PEP 695 type parameters and ``type`` aliases, ``nonlocal`` at module level, and
trees too deep for the recursive walk (:class:`Unsupported`; the libcst resolver falls back
to the real provider there). Names inside string annotations are no ``ast`` nodes.
"""

from __future__ import annotations

import ast

from distlint.syntax.ast_scope_walk import Load, Unsupported, walk_module
from distlint.syntax.ast_scopes import Scope, access_names, contains, lookup_names

__all__ = ["AstNames", "Unsupported", "build_ast_names", "full_name"]

_EMPTY: frozenset[str] = frozenset()


def full_name(node: ast.AST) -> str | None:
    """libcst's ``get_full_name_for_node`` for an expression: ``a.b.c`` for ``a.b(x)[0].c``.

    An attribute of anything else is named after ``None`` (``"s".join`` is ``None.join``),
    as libcst's f-string does; the lookup then finds the builtin ``None``.
    """
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{full_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return full_name(node.func)
    if isinstance(node, ast.Subscript):
        return full_name(node.value)
    return None


class AstNames:
    """The qualified names of one module's nodes, each worked out on first request."""

    def __init__(
        self, scopes: dict[ast.AST, Scope], loads: dict[ast.Name, Load], heads: set[str]
    ) -> None:
        #: The scope of every attribute, call and stored name.
        self._scopes = scopes
        self._loads = loads
        #: The first part of each dotted name bound (``import a.b``): only a name read with
        #: one of these can be the bottom of an attribute chain that is an access.
        self._heads = heads
        #: Per loaded name below an attribute, the node its access is (itself or an attribute).
        self._access_nodes: dict[ast.Name, ast.expr] = {}
        self._names: dict[ast.AST, frozenset[str]] = {}
        self._by_full_name: dict[tuple[Scope, str | None], frozenset[str]] = {}

    def release(self) -> None:
        """Let go of the scopes (which refer to each other and to the tree): what reference
        counting frees at once, without waiting for (and paying) a pass of the cyclic collector
        over a large file's every node. No name can be asked for afterwards."""
        module = next((scope.globals for scope in self._scopes.values()), None)
        if module is not None:
            module.release()
        self._scopes.clear()
        self._loads.clear()
        self._access_nodes.clear()
        self._names.clear()
        self._by_full_name.clear()

    def names_of(self, node: ast.AST) -> frozenset[str]:
        """The qualified names of ``node``, a ``Name`` or ``Attribute`` (a ``Call``: its
        ``func``'s); empty for other nodes, nodes of another tree, and names naming nothing."""
        found = self._names.get(node)
        if found is None:
            if isinstance(node, ast.Name):
                found = self._name(node)
            elif isinstance(node, ast.Attribute):
                found = self._attribute(node)
            elif isinstance(node, ast.Call):
                found = self._call(node)
            else:
                found = _EMPTY
            self._names[node] = found
        return found

    def _name(self, node: ast.Name) -> frozenset[str]:
        load = self._loads.get(node)
        if load is None:  # a stored name, or one of another tree
            scope = self._scopes.get(node)
            return _EMPTY if scope is None else lookup_names(scope, node.id, node)
        scope, index, top = load
        name = node.id
        if top is not None and name in self._heads and self._access_node(node) is not node:
            return self._named(scope, node, name)
        return access_names(scope, name, index)

    def _attribute(self, node: ast.Attribute) -> frozenset[str]:
        scope = self._scopes.get(node)
        if scope is None:
            return _EMPTY
        parts = [node.attr]
        base = node.value
        while type(base) is ast.Attribute:
            parts.append(base.attr)
            base = base.value
        if type(base) is not ast.Name:
            return self._named(scope, node, full_name(node))
        parts.append(base.id)
        written = ".".join(reversed(parts))
        if parts[-1] in self._heads:
            load = self._loads.get(base)
            if load is not None and self._access_node(base) is node:
                return access_names(load[0], written, load[1])
        return self._named(scope, node, written)

    def _call(self, node: ast.Call) -> frozenset[str]:
        func = node.func
        if type(func) is ast.Name or type(func) is ast.Attribute:
            return self.names_of(func)
        scope = self._scopes.get(node)  # a func's scope is its call's
        return _EMPTY if scope is None else self._named(scope, func, full_name(func))

    def _named(self, scope: Scope, node: ast.AST, written: str | None) -> frozenset[str]:
        """Names of a node that is neither an access nor a binding: those of its dotted name
        (``written``), the same wherever in the scope it is written."""
        key = (scope, written)
        found = self._by_full_name.get(key)
        if found is None:
            found = self._by_full_name[key] = lookup_names(scope, written, node)
        return found

    def _access_node(self, name: ast.Name) -> ast.expr:
        """libcst's ``infer_accesses``: a name read at the bottom of a chain of attributes is
        an access of the longest ``a.b.c`` of the chain that is bound (``import a.b``)."""
        found = self._access_nodes.get(name)
        if found is None:
            found = self._access_nodes[name] = self._find_access_node(name)
        return found

    def _find_access_node(self, name: ast.Name) -> ast.expr:
        scope, _, top = self._loads[name]
        chain: list[ast.Attribute] = []
        node: ast.expr | None = top
        while type(node) is ast.Attribute:
            chain.append(node)
            node = node.value
        if node is not name:  # no top attribute, or a subscript, call, ... below it
            return name
        dotted = [name.id]
        for attribute in reversed(chain):
            dotted.append(f"{dotted[-1]}.{attribute.attr}")
        for attribute, written in zip(chain, reversed(dotted)):
            if contains(scope, written):
                return attribute
        return name


def build_ast_names(tree: ast.Module) -> AstNames:
    """Walk ``tree`` once (:mod:`.ast_scope_walk`); :meth:`AstNames.names_of` answers from
    what the walk recorded. Raises :class:`Unsupported` for the syntax the module docstring
    lists."""
    walk = walk_module(tree)
    return AstNames(walk.scopes, walk.loads, walk.scope.dotted_heads)

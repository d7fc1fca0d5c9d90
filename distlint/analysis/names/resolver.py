"""A cheap stand-in for libcst's ``QualifiedNameProvider``: same answers, a fraction of the cost.

``QualifiedNameProvider`` depends on ``ScopeProvider``, which runs libcst's visitor machinery
(rebuilding every node it passes) twice over the module (``ExpressionContextProvider`` too)
and resolves every access of the module up front. On a per-test-spawn test file that was ~70%
of the cost of linting it (BENCHMARKS.md, "PG analysis cost"; "Name resolution" has the
side-by-side figures), for the few hundred nodes our rules ask about.

:class:`NameResolver` does one walk that reads the nodes' fields directly (no rebuilding) and
records, into libcst's *own* scope objects (``GlobalScope``, ``FunctionScope``, ``ClassScope``,
``ComprehensionScope``, ``Assignment``, ``ImportAssignment``), the same assignments in the same
order as ``ScopeVisitor``; the accesses are only noted. A node's qualified names are computed
on lookup, with libcst's own rules: an access (a loaded ``Name``, or the ``Attribute`` that a
dotted import makes the access) resolves through the assignments visible from it; any other
node through ``Scope.get_qualified_names_for``. Reusing libcst's classes keeps the naming
(``f.<locals>.x``, ``builtins.x``, ``.relative.x``, several names for conditional imports)
identical instead of re-deriving it; ``tests/test_names.py`` compares every name-like node of
every fixture with the real provider.

What it does not mimic falls back to the real provider for the whole module: PEP 695 type
parameters and ``type`` aliases, and trees too deep for the recursive walk. Names inside string
annotations are not resolved (libcst re-parses those strings; our rules never ask about them).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from typing import Any, Callable, cast

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import (
    Access,
    ClassScope,
    ComprehensionScope,
    FunctionScope,
    GlobalScope,
    MetadataWrapper,
    QualifiedName,
    QualifiedNameProvider,
    Scope,
)

# Private to libcst, like ``Scope._assignment_count`` below: the walk mimics ScopeVisitor with
# ScopeVisitor's own helpers. pyproject.toml pins libcst to the versions tests/test_names.py
# has compared against the real provider.
from libcst.metadata.scope_provider import _gen_dotted_names

from distlint.analysis.walk import code_children, kind_test

_is_call_or_attribute = kind_test(cst.Call, cst.Attribute)

_LOAD, _STORE, _DEL = 0, 1, 2

#: Leaving one of these moves its scope's assignment counter (libcst's ``_ASSIGNMENT_LIKE_NODES``).
_ASSIGNMENT_LIKE = (
    cst.AnnAssign,
    cst.AsName,
    cst.Assign,
    cst.AugAssign,
    cst.ClassDef,
    cst.CompFor,
    cst.FunctionDef,
    cst.Global,
    cst.Import,
    cst.ImportFrom,
    cst.NamedExpr,
    cst.Nonlocal,
    cst.Parameters,
    cst.WithItem,
)
#: Constructs the walk does not mimic: the module falls back to the real provider.
_UNSUPPORTED = tuple(
    getattr(cst, name) for name in ("TypeAlias", "TypeParameters") if hasattr(cst, name)
)
# The same tests, cached per node type (libcst's classes are ABCs: ``isinstance`` is slow).
_is_assignment_like = kind_test(*_ASSIGNMENT_LIKE)
_is_unsupported = kind_test(*_UNSUPPORTED)
_keeps_context = kind_test(cst.Tuple, cst.List, cst.StarredElement, cst.Element)


class Unsupported(Exception):
    """The module uses syntax the walk does not mimic."""


class _Walk:
    """``ScopeVisitor`` + ``ExpressionContextProvider``, reading fields instead of visiting."""

    def __init__(self) -> None:
        self.globals = GlobalScope()
        self.scope: Scope = self.globals
        self.scope_of: dict[cst.CSTNode, Scope] = {}
        #: Loaded names, in visiting order: (access, innermost enclosing top-level attribute).
        self.loads: list[tuple[Access, cst.Attribute | None]] = []
        self._attribute: list[cst.Attribute | None] = [None]

    # -- dispatch ---------------------------------------------------------------------------
    def visit(self, node: cst.CSTNode, context: int = _LOAD) -> None:
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node, context)
        else:
            if _is_unsupported(node):
                raise Unsupported(type(node).__name__)
            self.children(node, context if _keeps_context(node) else _LOAD)
        self.leave(node)

    def leave(self, node: cst.CSTNode) -> None:
        scope = self.scope
        self.scope_of[node] = scope
        if _is_assignment_like(node):
            scope._assignment_count += 1

    def children(self, node: cst.CSTNode, context: int = _LOAD) -> None:
        for child in code_children(node):
            self.visit(child, context)

    def with_scope(self, scope: Scope, *nodes: cst.CSTNode | None) -> None:
        outer, self.scope = self.scope, scope
        try:
            for node in nodes:
                if node is not None:
                    self.visit(node)
        finally:
            self.scope = outer

    # -- names ------------------------------------------------------------------------------
    def name(self, node: cst.Name, context: int) -> None:
        if context == _STORE:
            self.scope.record_assignment(node.value, node)
        else:
            self.loads.append(
                (
                    Access(node, self.scope, is_annotation=False, is_type_hint=False),
                    self._attribute[-1],
                )
            )

    def attribute(self, node: cst.Attribute, context: int) -> None:
        if self._attribute[-1] is None:
            self._attribute[-1] = node
        self.visit(node.value)  # the attr is not a name of this module
        if self._attribute[-1] is node:
            self._attribute[-1] = None

    def subscript(self, node: cst.Subscript, context: int) -> None:
        self.children(node)

    def call(self, node: cst.Call, context: int) -> None:
        self._attribute.append(None)
        try:
            self.visit(node.func)
            for arg in node.args:
                self.visit(arg)
        finally:
            self._attribute.pop()

    def arg(self, node: cst.Arg, context: int) -> None:
        self.visit(node.value)  # the keyword is neither an assignment nor an access

    def import_(self, node: Any, context: int) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            self.scope_of[alias] = self.scope
            target = alias.asname.name if alias.asname is not None else alias.name
            for dotted, _ in _gen_dotted_names(target):
                self.scope.record_import_assignment(dotted, node, target)

    def overwrite(self, node: Any, context: int) -> None:
        record = (
            self.scope.record_global_overwrite
            if isinstance(node, cst.Global)
            else self.scope.record_nonlocal_overwrite
        )
        for item in node.names:
            record(item.name.value)

    # -- scopes -----------------------------------------------------------------------------
    def function(self, node: cst.FunctionDef, context: int) -> None:
        if node.type_parameters is not None:
            raise Unsupported("type parameters")
        self.scope.record_assignment(node.name.value, node)
        self.scope_of[node.name] = self.scope
        self.with_scope(FunctionScope(self.scope, node, node.name.value), node.params, node.body)
        for decorator in node.decorators:
            self.visit(decorator)
        if node.returns is not None:
            self.visit(node.returns)

    def lambda_(self, node: cst.Lambda, context: int) -> None:
        self.with_scope(FunctionScope(self.scope, node, None), node.params, node.body)

    def param(self, node: cst.Param, context: int) -> None:
        self.scope.record_assignment(node.name.value, node)
        self.scope_of[node.name] = self.scope
        self.with_scope(self.scope.parent, node.default, node.annotation)

    def class_(self, node: cst.ClassDef, context: int) -> None:
        if node.type_parameters is not None:
            raise Unsupported("type parameters")
        self.scope.record_assignment(node.name.value, node)
        self.scope_of[node.name] = self.scope
        for decorator in node.decorators:
            self.visit(decorator)
        for arg in (*node.bases, *node.keywords):
            self.visit(arg)
        self.with_scope(ClassScope(self.scope, node, node.name.value), *node.body.body)

    def comprehension(self, node: Any, context: int) -> None:
        for_in = node.for_in
        self.visit(for_in.iter)
        self.scope_of[for_in] = self.scope
        outer, self.scope = self.scope, ComprehensionScope(self.scope, node)
        try:
            self.visit(for_in.target, _STORE)
            self.scope._assignment_count += 1
            for condition in for_in.ifs:
                self.visit(condition)
            if for_in.inner_for_in is not None:
                self.visit(for_in.inner_for_in)
            if isinstance(node, cst.DictComp):
                self.visit(node.key)
                self.visit(node.value)
            else:
                self.visit(node.elt)
        finally:
            self.scope = outer

    def comp_for(self, node: cst.CompFor, context: int) -> None:
        self.visit(node.target, _STORE)
        self.visit(node.iter)
        for condition in node.ifs:
            self.visit(condition)
        if node.inner_for_in is not None:
            self.visit(node.inner_for_in)

    def for_(self, node: cst.For, context: int) -> None:
        self.visit(node.target, _STORE)
        self.scope._assignment_count += 1
        for child in (node.iter, node.body, node.orelse):
            if child is not None:
                self.visit(child)

    # -- stores -----------------------------------------------------------------------------
    def assign(self, node: cst.Assign, context: int) -> None:
        for target in node.targets:
            self.visit(target.target, _STORE)
            self.scope_of[target] = self.scope
        self.visit(node.value)

    def ann_assign(self, node: cst.AnnAssign, context: int) -> None:
        self.visit(node.target, _STORE)
        self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def aug_assign(self, node: cst.AugAssign, context: int) -> None:
        self.visit(node.target, _STORE)
        self.visit(node.value)

    def named_expr(self, node: cst.NamedExpr, context: int) -> None:
        self.visit(node.target, _STORE)
        self.visit(node.value)

    def as_name(self, node: cst.AsName, context: int) -> None:
        self.visit(node.name, _STORE)

    def delete(self, node: cst.Del, context: int) -> None:
        self.visit(node.target, _DEL)

    def string(self, node: cst.SimpleString, context: int) -> None:
        pass  # string annotations are not resolved (see the module docstring)


#: Each handler takes its own node type (hence ``...``).
_HANDLERS: dict[type[cst.CSTNode], Callable[..., None]] = {
    cst.Name: _Walk.name,
    cst.Attribute: _Walk.attribute,
    cst.Subscript: _Walk.subscript,
    cst.Call: _Walk.call,
    cst.Arg: _Walk.arg,
    cst.Import: _Walk.import_,
    cst.ImportFrom: _Walk.import_,
    cst.Global: _Walk.overwrite,
    cst.Nonlocal: _Walk.overwrite,
    cst.FunctionDef: _Walk.function,
    cst.Lambda: _Walk.lambda_,
    cst.Param: _Walk.param,
    cst.ClassDef: _Walk.class_,
    cst.ListComp: _Walk.comprehension,
    cst.SetComp: _Walk.comprehension,
    cst.DictComp: _Walk.comprehension,
    cst.GeneratorExp: _Walk.comprehension,
    cst.CompFor: _Walk.comp_for,
    cst.For: _Walk.for_,
    cst.Assign: _Walk.assign,
    cst.AnnAssign: _Walk.ann_assign,
    cst.AugAssign: _Walk.aug_assign,
    cst.NamedExpr: _Walk.named_expr,
    cst.AsName: _Walk.as_name,
    cst.Del: _Walk.delete,
    cst.SimpleString: _Walk.string,
}


class NameResolver(Mapping):
    """``QualifiedNameProvider``'s mapping for one module, each node resolved on first lookup.

    Every lookup gives a set of ``QualifiedName`` (``default`` is never used): the provider
    has an entry for every node of the module, empty where the node names nothing (an
    attribute's ``attr``, a keyword); a node of another module reads as ``set()`` too rather
    than raising. Iterating gives the nodes that have a scope.
    """

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._walk: _Walk | None = None
        #: access node -> (its access, the name it reads)
        self._accesses: dict[cst.CSTNode, tuple[Access, str]] = {}
        self._resolved: dict[cst.CSTNode, set[QualifiedName]] = {}
        self._by_scope_and_name: dict[tuple[Scope, str | None], frozenset[QualifiedName]] = {}

    def _prepare(self) -> _Walk:
        if self._walk is None:
            walk = _Walk()
            for statement in self._module.body:
                walk.visit(statement)
            walk.scope_of[self._module] = walk.globals
            # Which node each load is an access of needs every assignment of the scope, so
            # it is settled after the walk (libcst's ``infer_accesses``).
            for access, attribute in walk.loads:
                name = cast(cst.Name, access.node).value  # name() records Names only
                if attribute is not None:
                    for dotted, node in _gen_dotted_names(attribute):
                        if dotted in access.scope:
                            access.node, name = node, dotted
                            break
                self._accesses[access.node] = (access, name)
            self._walk = walk
        return self._walk

    def _names_of(self, node: cst.CSTNode, scope: Scope) -> set[QualifiedName]:
        found = self._accesses.get(node)
        if found is None:
            if not _is_call_or_attribute(node):
                return set(scope.get_qualified_names_for(node))
            # libcst answers a call or an attribute from its dotted name and the scope alone (it
            # is never an assignment's own node), walking the scope chain for every prefix:
            # asked again for each ``dist.all_reduce(...)`` of a function, it is answered once.
            key = (scope, get_full_name_for_node(node))
            names = self._by_scope_and_name.get(key)
            if names is None:
                names = self._by_scope_and_name[key] = frozenset(
                    scope.get_qualified_names_for(node)
                )
            return set(names)
        access, name = found
        access.record_assignments(name)
        return {
            name
            for referent in access.referents
            for name in referent.get_qualified_names_for(referent.name)
        }

    def get(self, node: cst.CSTNode, default: Any = None) -> Any:
        found = self._resolved.get(node)
        if found is not None:
            return found
        scope = self._prepare().scope_of.get(node)
        if scope is None:
            return set()
        found = self._resolved[node] = self._names_of(node, scope)
        return found

    def __getitem__(self, node: cst.CSTNode) -> set[QualifiedName]:
        return self.get(node)

    def __contains__(self, node: object) -> bool:
        return node in self._prepare().scope_of

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._prepare().scope_of)

    def __len__(self) -> int:
        return len(self._prepare().scope_of)


def build_resolver(module: cst.Module) -> Mapping[cst.CSTNode, Collection[QualifiedName]]:
    """A :class:`NameResolver`, or the real provider's map where the module needs it."""
    resolver = NameResolver(module)
    try:
        resolver._prepare()
    except (Unsupported, RecursionError):
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    return resolver

"""libcst's ``ScopeVisitor`` on a stdlib ``ast`` module: what :mod:`.ast_names` answers from.

One walk records, in libcst's own order, every binding into its scope (:mod:`.ast_scopes`)
and, for every name read, its scope, the scope's counter at that point and the outermost
attribute it is read under; and the scope of each attribute, call and stored name. Names
are worked out from these only when asked for (:class:`.ast_names.AstNames`).

Order matters where a read and a binding share a scope: the read sees the binding only if
the scope's ``count`` moved in between, and it moves where libcst's does, on leaving an
assignment, import, ``global``, definition, parameter list, ``with`` item or
``except ... as``, after a ``for`` target and after a comprehension's targets. So does
which node is walked in which scope (a default outside its function, a comprehension's
first iterable outside it) and after what (a function's decorators after its body).
As in libcst: a ``for`` target is bound before its iterable is read, a comprehension's inner
targets are not bound for the inner iterables and conditions, an assignment expression binds
in the comprehension, and ``match`` capture patterns bind nothing.
"""

from __future__ import annotations

import ast
from typing import Any, Callable, Optional, Union

from distlint.syntax.ast_scopes import (
    CLASS,
    COMPREHENSION,
    FUNCTION,
    GLOBAL,
    ImportAssignment,
    Scope,
    module_scope,
    record,
)

_STORE, _CONSTANT = ast.Store, ast.Constant
_FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_Comprehension = Union[ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp]
#: A name read: its scope, the scope's counter then, the outermost attribute it is read under.
Load = tuple[Scope, int, Optional[ast.Attribute]]


class Unsupported(ValueError):
    """The module uses syntax for which libcst's scope model is not mimicked (a ``ValueError``:
    what the linter and ``migrate`` report as the file's one-line error)."""


def walk_module(tree: ast.Module) -> ScopeWalk:
    """Walk ``tree`` once; raises :class:`Unsupported` for PEP 695 type parameters and
    ``type`` aliases, ``nonlocal`` at module level, and trees too deep to walk."""
    walk = ScopeWalk()
    try:
        walk.statements(tree.body)
    except RecursionError:
        raise Unsupported("file too deeply nested to analyse") from None
    return walk


class ScopeWalk:
    """What the walk recorded (``scope``: the module's); the walk itself, node by node."""

    def __init__(self) -> None:
        self.scope = module_scope()
        self.scopes: dict[ast.AST, Scope] = {}
        self.loads: dict[ast.Name, Load] = {}
        #: The outermost attribute being walked since the last call (libcst's
        #: ``__top_level_attribute_stack``): a name read below it may be its access.
        self.top: ast.Attribute | None = None

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):  # a third of the nodes that reach here: no handler call
            scope = self.scope
            if type(node.ctx) is _STORE:
                record(scope, node.id, node)
                self.scopes[node] = scope
            else:  # a deleted name is an access too
                self.loads[node] = (scope, scope.count, self.top)
        elif type(node) is not _CONSTANT:
            handler = _HANDLERS.get(type(node))
            if handler is None:
                self.generic(node)
            else:
                handler(self, node)

    def statements(self, nodes: list[ast.stmt]) -> None:
        visit = self.visit
        for node in nodes:
            visit(node)

    def generic(self, node: ast.AST) -> None:
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def each(self, nodes: list[Any]) -> None:
        visit = self.visit
        for node in nodes:
            if node is not None:
                visit(node)

    # -- names (and :meth:`visit`) ------------------------------------------------------------
    def attribute(self, node: ast.Attribute) -> None:
        scope = self.scopes[node] = self.scope
        value = node.value
        top = self.top
        if type(value) is ast.Name:  # most attributes: read here, saving a visit
            self.loads[value] = (scope, scope.count, top or node)
        elif top is None:
            self.top = node
            self.visit(value)
            self.top = None
        else:
            self.visit(value)

    def call(self, node: ast.Call) -> None:
        self.scopes[node] = self.scope
        top, self.top = self.top, None
        visit = self.visit
        visit(node.func)
        args, keywords = node.args, node.keywords
        if keywords and args and type(args[-1]) is ast.Starred:
            # f(a=1, *b): libcst walks the arguments in source order
            self.each(sorted([*args, *keywords], key=_position))
        else:
            for arg in args:
                visit(arg)
            for keyword in keywords:
                visit(keyword.value)
        self.top = top

    # -- scopes ----------------------------------------------------------------------------
    def function(self, node: _FunctionNode) -> None:
        if getattr(node, "type_params", None):
            raise Unsupported("cannot analyse PEP 695 type parameters")
        outer = self.scope
        record(outer, node.name, node)
        self.scope = Scope(FUNCTION, outer, node.name)
        self.parameters(node.args)
        self.statements(node.body)
        self.scope = outer
        self.each(node.decorator_list)  # after the body, as libcst does
        if node.returns is not None:
            self.visit(node.returns)
        outer.count += 1

    def lambda_(self, node: ast.Lambda) -> None:
        outer = self.scope
        self.scope = Scope(FUNCTION, outer, None)
        self.parameters(node.args)
        self.visit(node.body)
        self.scope = outer

    def parameters(self, node: ast.arguments) -> None:
        """Each name bound in the new scope; its default, then annotation, walked outside."""
        positional = [*node.posonlyargs, *node.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(node.defaults))
        pairs = [
            *zip(positional, [*defaults, *node.defaults]),
            *([(node.vararg, None)] if node.vararg else []),
            *zip(node.kwonlyargs, node.kw_defaults),
            *([(node.kwarg, None)] if node.kwarg else []),
        ]
        function = self.scope
        for arg, default in pairs:
            record(function, arg.arg, arg)
            self.scope = function.parent
            if default is not None:
                self.visit(default)
            if arg.annotation is not None:
                self.visit(arg.annotation)
            self.scope = function
        function.count += 1

    def class_(self, node: ast.ClassDef) -> None:
        if getattr(node, "type_params", None):
            raise Unsupported("cannot analyse PEP 695 type parameters")
        outer = self.scope
        record(outer, node.name, node)
        self.each(node.decorator_list)
        self.each(node.bases)
        self.each(node.keywords)
        self.scope = Scope(CLASS, outer, node.name)
        self.statements(node.body)
        self.scope = outer
        outer.count += 1

    def comprehension(self, node: _Comprehension) -> None:
        """The first iterable outside; the first target visible from all but the other
        targets (libcst counts those on leaving their nested ``CompFor``: after them all)."""
        outer = self.scope
        first, *others = node.generators
        self.visit(first.iter)
        inner = self.scope = Scope(COMPREHENSION, outer)
        self.visit(first.target)
        inner.count += 1
        self.each(first.ifs)
        for generator in others:
            self.visit(generator.target)
            self.visit(generator.iter)
            self.each(generator.ifs)
        if others:
            inner.count += 1
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self.scope = outer

    # -- bindings --------------------------------------------------------------------------
    def import_(self, node: ast.Import | ast.ImportFrom) -> None:
        scope = self.scope
        for alias in node.names:
            if alias.asname:
                record(scope, alias.asname, node, ImportAssignment)
            elif alias.name != "*":
                dotted = alias.name  # import a.b.c binds a.b.c, a.b and a
                while dotted:
                    record(scope, dotted, node, ImportAssignment)
                    dotted = dotted[: max(dotted.rfind("."), 0)]
        scope.count += 1

    def global_(self, node: ast.Global) -> None:
        scope = self.scope
        if scope.kind != GLOBAL:  # module-level ``global x`` changes nothing
            for name in node.names:
                scope.overwrites[name] = scope.globals
        scope.count += 1

    def nonlocal_(self, node: ast.Nonlocal) -> None:
        scope = self.scope
        if scope.kind == GLOBAL:
            raise Unsupported("cannot analyse nonlocal at module level")  # libcst raises too
        for name in node.names:
            scope.overwrites[name] = scope.parent
        scope.count += 1

    def assign(self, node: ast.Assign | ast.AugAssign | ast.NamedExpr) -> None:
        if isinstance(node, ast.Assign):
            self.each(node.targets)
        else:
            self.visit(node.target)
        self.visit(node.value)
        self.scope.count += 1

    def ann_assign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        self.visit(node.annotation)
        if node.value is not None:
            self.visit(node.value)
        self.scope.count += 1

    def for_(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.target)
        self.scope.count += 1
        self.visit(node.iter)
        self.statements(node.body)
        self.statements(node.orelse)

    def with_(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self.visit(item.optional_vars)
            self.scope.count += 1
        self.statements(node.body)

    def except_(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            record(self.scope, node.name, node)
            self.scope.count += 1
        self.statements(node.body)

    # -- plain expressions, in libcst's order where it differs or the fields hold no code ----
    def if_exp(self, node: ast.IfExp) -> None:
        self.visit(node.body)
        self.visit(node.test)
        self.visit(node.orelse)

    def dict_(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            if key is not None:
                self.visit(key)
            self.visit(value)

    def binary(self, node: ast.BinOp) -> None:
        rights = [node.right]  # ``a + b + ... + z`` nests to the left: no recursion along it
        left = node.left
        while type(left) is ast.BinOp:
            rights.append(left.right)
            left = left.left
        self.visit(left)
        self.each(rights[::-1])


def _position(node: ast.expr | ast.keyword) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _child(field: str) -> Callable[[ScopeWalk, Any], None]:
    return lambda walk, node: walk.visit(getattr(node, field))


def _children(field: str) -> Callable[[ScopeWalk, Any], None]:
    return lambda walk, node: walk.each(getattr(node, field))


_HANDLERS: dict[type, Callable[[ScopeWalk, Any], None]] = {
    ast.Attribute: ScopeWalk.attribute,
    ast.Call: ScopeWalk.call,
    ast.Expr: _child("value"),
    ast.keyword: _child("value"),
    ast.Starred: _child("value"),
    ast.Subscript: lambda walk, node: walk.each([node.value, node.slice]),
    ast.Tuple: _children("elts"),
    ast.List: _children("elts"),
    ast.Set: _children("elts"),
    ast.BoolOp: _children("values"),
    ast.JoinedStr: _children("values"),
    ast.UnaryOp: _child("operand"),
    ast.Compare: lambda walk, node: walk.each([node.left, *node.comparators]),
    ast.BinOp: ScopeWalk.binary,
    ast.IfExp: ScopeWalk.if_exp,
    ast.Dict: ScopeWalk.dict_,
    ast.FunctionDef: ScopeWalk.function,
    ast.AsyncFunctionDef: ScopeWalk.function,
    ast.Lambda: ScopeWalk.lambda_,
    ast.ClassDef: ScopeWalk.class_,
    ast.ListComp: ScopeWalk.comprehension,
    ast.SetComp: ScopeWalk.comprehension,
    ast.GeneratorExp: ScopeWalk.comprehension,
    ast.DictComp: ScopeWalk.comprehension,
    ast.Import: ScopeWalk.import_,
    ast.ImportFrom: ScopeWalk.import_,
    ast.Global: ScopeWalk.global_,
    ast.Nonlocal: ScopeWalk.nonlocal_,
    ast.Assign: ScopeWalk.assign,
    ast.AugAssign: ScopeWalk.assign,
    ast.NamedExpr: ScopeWalk.assign,
    ast.AnnAssign: ScopeWalk.ann_assign,
    ast.For: ScopeWalk.for_,
    ast.AsyncFor: ScopeWalk.for_,
    ast.With: ScopeWalk.with_,
    ast.AsyncWith: ScopeWalk.with_,
    ast.ExceptHandler: ScopeWalk.except_,
}


def _type_alias(walk: ScopeWalk, node: ast.AST) -> None:
    raise Unsupported("cannot analyse a PEP 695 type alias")


_TYPE_ALIAS = getattr(ast, "TypeAlias", None)  # Python 3.12+
if _TYPE_ALIAS is not None:
    _HANDLERS[_TYPE_ALIAS] = _type_alias

"""Statement-level edits of one function: what a moved test (or its helper) becomes.

Edits are keyed by node identity (nodes of the analysed module), so the analysis'
``PGCreation.statement`` / ``store_statements`` / ``TestAnalysis.teardown`` are applied
exactly where they are, at any depth of the function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, Union, cast

import libcst as cst

from distlint.analysis.walk import code_children, kind_test
from distlint.cst_utils import is_string_statement

#: What happens to a statement.
REMOVE = "remove"
DROP_FINALLY = "drop-finally"  # a try/finally whose finally only tears the PG down
SHARED_PG = cst.parse_expression("self.pg")


_Node = TypeVar("_Node", bound=cst.CSTNode)


class RewriteError(Exception):
    """The function cannot be rewritten safely; ``str()`` says why (for the report)."""


Edit = Union[str, cst.BaseStatement]


@dataclass
class FunctionEdits:
    """Edits to one function: statement edits by ``id()`` and decorators to drop."""

    statements: dict[int, Edit]
    decorators: set[int]

    @classmethod
    def empty(cls) -> FunctionEdits:
        return cls({}, set())

    def __bool__(self) -> bool:
        return bool(self.statements or self.decorators)


def bind_shared_pg(statement: cst.BaseStatement, bound_name: str) -> cst.BaseStatement:
    """``pg = self._create_pg(store, ...)`` -> ``pg = self.pg`` (comments kept)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        raise RewriteError("its PG is created inside a compound statement")
    small = statement.body[0]
    if (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and small.targets[0].target.value == bound_name
    ):
        return statement.with_changes(body=[small.with_changes(value=SHARED_PG)])
    if (
        isinstance(small, cst.AnnAssign)
        and isinstance(small.target, cst.Name)
        and small.target.value == bound_name
    ):
        return statement.with_changes(body=[small.with_changes(value=SHARED_PG)])
    raise RewriteError(f"its PG is bound to `{bound_name}` in a way distlint cannot rewrite")


def _pass_line() -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Pass()])


#: What no edit is inside: an expression holds no statement or decorator (a decorator's
#: expression is below the ``Decorator`` the edit names), nor does whitespace.
_NO_EDIT_INSIDE = (
    cst.BaseExpression,
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
)


class _Apply(cst.CSTTransformer):
    def __init__(self, edits: FunctionEdits) -> None:
        super().__init__()
        self.edits = edits
        self.applied: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Edits name statements and decorators: the expressions of a test, most of its nodes,
        # are left unwalked (and so unchanged).
        return not isinstance(node, _NO_EDIT_INSIDE)

    def on_leave(  # type: ignore[override]  # libcst's is generic in the node type
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.BaseStatement]:
        key = id(original_node)
        if isinstance(original_node, cst.Decorator):
            if key in self.edits.decorators:
                self.applied.add(key)
                return cst.RemoveFromParent()
            return updated_node
        if isinstance(updated_node, cst.IndentedBlock) and not updated_node.body:
            return updated_node.with_changes(body=[_pass_line()])
        edit = self.edits.statements.get(key)
        if edit is None:
            return updated_node
        self.applied.add(key)
        if edit == REMOVE:
            return cst.RemoveFromParent()
        if edit == DROP_FINALLY:
            assert isinstance(updated_node, cst.Try)
            if updated_node.handlers:
                return updated_node.with_changes(finalbody=None)
            # Statements of a block: libcst types them BaseStatement, whose kinds all have lines.
            inner = cast(
                "list[cst.SimpleStatementLine | cst.BaseCompoundStatement]",
                list(updated_node.body.body),
            )
            if not inner:
                return cst.RemoveFromParent()
            # Comments above ``try:`` now sit above its first statement.
            inner[0] = inner[0].with_changes(
                leading_lines=[*updated_node.leading_lines, *inner[0].leading_lines]
            )
            return cst.FlattenSentinel(inner)
        assert isinstance(edit, cst.CSTNode)
        return edit


def apply_edits(function: cst.FunctionDef, edits: FunctionEdits) -> cst.FunctionDef:
    """``function`` with ``edits`` applied; raises :class:`RewriteError` when one does not apply."""
    if not edits:
        return function
    transformer = _Apply(edits)
    result = function.visit(transformer)
    wanted = set(edits.statements) | set(edits.decorators)
    if transformer.applied != wanted:
        raise RewriteError("its PG creation is not where distlint expected it")
    assert isinstance(result, cst.FunctionDef)
    return result


def has_work_left(function: cst.FunctionDef) -> bool:
    """Whether the body still does something besides a docstring and ``pass``."""
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    for statement in body:
        if is_string_statement(statement):
            continue
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(s, cst.Pass) for s in statement.body
        ):
            continue
        return True
    return False


# -- opts() as a classmethod -----------------------------------------------------------------


class _RenameSelf(cst.CSTTransformer):
    """``self`` -> ``cls`` in a method body (nested scopes that rebind ``self`` are refused)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        if self.depth > 1 and any(p.name.value == "self" for p in _all_params(node.params)):
            raise RewriteError("a nested function rebinds `self`")
        return True

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        return updated_node

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        if any(p.name.value == "self" for p in _all_params(node.params)):
            raise RewriteError("a lambda rebinds `self`")
        return True

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value="cls") if updated_node.value == "self" else updated_node
        )


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


def to_classmethod(function: cst.FunctionDef) -> cst.FunctionDef:
    """``def opts(self, threads=2): ... self.lazy_init ...`` -> a ``@classmethod`` reading ``cls``.

    Equivalent when every ``self.<x>`` the body reads is a class attribute (the caller checks).
    """
    if any(_decorator_is(d, "classmethod") for d in function.decorators):
        return function
    if function.decorators:
        raise RewriteError(f"{function.name.value}() is decorated")
    params = function.params.posonly_params or function.params.params
    if not params or params[0].name.value != "self":
        raise RewriteError(f"{function.name.value}() does not take `self` first")
    renamed = function.visit(_RenameSelf())
    assert isinstance(renamed, cst.FunctionDef)
    decorator = cst.Decorator(decorator=cst.Name("classmethod"))
    return renamed.with_changes(decorators=[decorator])


def _decorator_is(decorator: cst.Decorator, name: str) -> bool:
    expression = decorator.decorator
    return isinstance(expression, cst.Name) and expression.value == name


def classmethod_returning(name: str, value: cst.BaseExpression) -> cst.FunctionDef:
    """``@classmethod def <name>(cls): return <value>``."""
    function = cst.parse_statement(f"@classmethod\ndef {name}(cls):\n    return None\n")
    assert isinstance(function, cst.FunctionDef)
    body = function.body
    assert isinstance(body, cst.IndentedBlock)
    line = body.body[0]
    assert isinstance(line, cst.SimpleStatementLine)
    returned = line.with_changes(body=[cst.Return(value=value)])
    return function.with_changes(body=body.with_changes(body=[returned]))


def constant_property_as_attribute(function: cst.FunctionDef) -> cst.SimpleStatementLine | None:
    """``@property def world_size(self): return 4`` -> ``world_size = 4``, or None.

    torch's continuous classes read ``cls.world_size`` before any instance exists (and
    ``create_local_tensor_test_class`` copies the class's members into a class that compares
    it with an int), so a moved property that returns a constant becomes the class attribute
    it stands for. The body's comments stay above the assignment."""
    if len(function.decorators) != 1 or not _decorator_is(function.decorators[0], "property"):
        return None
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    statements = list(body.body)  # a docstring would be lost: such a property stays one
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    line = statements[0]
    if len(line.body) != 1 or not isinstance(line.body[0], cst.Return):
        return None
    value = line.body[0].value
    if value is None or not _is_constant(value):
        return None
    found = [e.comment for e in [*function.leading_lines, *line.leading_lines]]
    if body.header.comment is not None:
        found.insert(len(function.leading_lines), body.header.comment)
    comments = [cst.EmptyLine(indent=True, comment=c) for c in found if c is not None]
    blanks = [e for e in function.leading_lines if e.comment is None][:1]
    return cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(function.name)], value=value)],
        leading_lines=[*blanks, *comments],
    )


def _is_constant(expression: cst.BaseExpression) -> bool:
    """A number, a module-level name or arithmetic of those (no call, nothing read from ``self``)."""
    if isinstance(expression, cst.Integer):
        return True
    if isinstance(expression, cst.Name):
        return expression.value not in ("self", "cls")
    if isinstance(expression, cst.Attribute):
        return _is_constant(expression.value)
    if isinstance(expression, cst.UnaryOperation):
        return _is_constant(expression.expression)
    if isinstance(expression, cst.BinaryOperation):
        return _is_constant(expression.left) and _is_constant(expression.right)
    return False


def strip_blank_leading(statement: cst.BaseStatement) -> cst.BaseStatement:
    """Leading blank lines removed (comments kept): for the first statement of a body."""
    lines = list(getattr(statement, "leading_lines", ()))
    while lines and lines[0].comment is None:
        lines.pop(0)
    return statement.with_changes(leading_lines=lines)


def with_blank_leading(statement: cst.BaseStatement, count: int = 1) -> cst.BaseStatement:
    """At least ``count`` blank lines before the statement (and before its comments)."""
    lines = list(getattr(statement, "leading_lines", ()))
    blanks = 0
    for line in lines:
        if line.comment is not None:
            break
        blanks += 1
    if blanks >= count:
        return statement
    return statement.with_changes(
        leading_lines=[cst.EmptyLine(indent=False)] * (count - blanks) + lines
    )


class _ZeroArgSuper(cst.CSTTransformer):
    """``super(Owner, self)`` -> ``super()`` directly in one method (not in a nested scope)."""

    def __init__(self, owner: str, receiver: str) -> None:
        self.owner, self.receiver = owner, receiver
        self.depth = 0  # nested scopes entered below the method
        self.blocked = False  # an explicit super() that cannot become zero-argument

    def _enter(self, node: cst.CSTNode) -> bool:
        self.depth += 1
        return True

    def _leave(self, original_node: _Node, updated_node: _Node) -> _Node:
        self.depth -= 1
        return updated_node

    visit_Lambda = visit_ClassDef = visit_ListComp = visit_SetComp = visit_DictComp = (
        visit_GeneratorExp
    ) = _enter
    leave_Lambda = leave_ClassDef = leave_ListComp = leave_SetComp = leave_DictComp = (
        leave_GeneratorExp
    ) = _leave

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._enter(node)

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not (
            isinstance(updated.func, cst.Name) and updated.func.value == "super" and updated.args
        ):
            return updated
        args = [a.value for a in updated.args]
        rewritable = (
            self.depth == 1
            and len(args) == 2
            and all(a.keyword is None and a.star == "" for a in updated.args)
            and isinstance(args[0], cst.Name)
            and args[0].value == self.owner
            and isinstance(args[1], cst.Name)
            and args[1].value == self.receiver
        )
        if not rewritable:
            self.blocked = True
            return updated
        return updated.with_changes(args=[])


def leaving_class(statement: cst.BaseStatement, owner: str) -> cst.BaseStatement:
    """A member leaving class ``owner``: ``super(owner, self)`` becomes ``super()`` (the planner
    refused the class when that is not possible)."""
    if isinstance(statement, cst.FunctionDef):
        rewritten = zero_arg_super(statement, owner)
        if rewritten is not None:
            return rewritten
    return statement


def zero_arg_super(function: cst.FunctionDef, owner: str) -> cst.FunctionDef | None:
    """``function`` (a method of class ``owner``) with each ``super(owner, self)`` made ``super()``,
    so that it can move to another class; None when one cannot be (another class, another receiver,
    or inside a nested function, lambda or comprehension, where ``super()`` has no class)."""
    if not _has_explicit_super(function):
        return function  # nothing to rewrite: no transformer rebuilds the whole function
    params = function.params.params
    if not params:
        return None
    transformer = _ZeroArgSuper(owner, params[0].name.value)
    rewritten = function.visit(transformer)
    if transformer.blocked or not isinstance(rewritten, cst.FunctionDef):
        return None
    return rewritten


def _has_explicit_super(node: cst.CSTNode) -> bool:
    """Whether ``node`` calls ``super(...)`` with arguments anywhere (the analyses' field walker)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if (
            _is_call(current)
            and isinstance(current.func, cst.Name)
            and current.func.value == "super"
            and current.args
        ):
            return True
        pending.extend(code_children(current))
    return False


_is_call = kind_test(cst.Call)

"""The one node-field walker of the analyses: a node's code children, in libcst's visiting order.

libcst's own visitor machinery rebuilds every node it passes (``_visit_and_replace_children``
returns a new node even for a read-only visitor); reading the dataclass fields instead is
about 3.5x faster (measured on torch/testing/_internal), which matters because the analyses
walk module-level code, test bodies and, for name resolution, whole modules.

Every analysis walks the same children: the PG scan (:mod:`distlint.analysis.pg.scan`), the
main-block code scan (:mod:`distlint.analysis.mainblock.code_scan`) and the name resolver
(:mod:`distlint.analysis.names.resolver`). What is skipped is only what can never hold code:
whitespace, comments, punctuation and operators (:data:`INERT`), and the fields that hold
nothing else (:data:`_NOT_CODE_FIELDS`, an optimisation: their values would be skipped as
inert anyway). Which *code* to enter (a ``def`` body, a nested guard) is each walk's own
business, decided by the walk, not here.

Order: the order a ``CSTVisitor`` sees the children (source order), which is the dataclass
field order except for the few node types in :data:`_VISIT_ORDER`;
``tests/test_walk.py`` checks it against libcst's visitor on every fixture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    from typing_extensions import TypeGuard  # typing's own from Python 3.10

import libcst as cst

#: Nodes with nothing but whitespace and punctuation below them: never worth visiting.
#: ``ImportStar`` and ``Asynchronous`` hold no code either; the name resolver must not record them.
INERT: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace,
    cst.EmptyLine,
    cst.TrailingWhitespace,
    cst.Newline,
    cst.Comment,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.Comma,
    cst.Dot,
    cst.Colon,
    cst.Semicolon,
    cst.AssignEqual,
    cst.ImportStar,
    cst.Asynchronous,
    cst.BaseBinaryOp,
    cst.BaseBooleanOp,
    cst.BaseCompOp,
    cst.BaseUnaryOp,
    cst.BaseAugOp,
)

#: Fields that only ever hold inert nodes, strings or flags (skipping them saves the lookups).
_NOT_CODE_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "comma",
        "semicolon",
        "equal",
        "star",
        "newline",
        "trailing_whitespace",
        "default_indent",
        "default_newline",
        "encoding",
        "has_trailing_newline",
        "indent",
    }
)

#: Where libcst visits the code fields in another order than the dataclass declares them.
_VISIT_ORDER: dict[type, tuple[str, ...]] = {
    cst.Arg: ("keyword", "value"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.Parameters: (
        "posonly_params",
        "posonly_ind",
        "params",
        "star_arg",
        "kwonly_params",
        "star_kwarg",
    ),
}
for _name, _order in (
    ("ExceptStarHandler", ("type", "name", "body")),
    ("TypeAlias", ("name", "type_parameters", "value")),
):
    if hasattr(cst, _name):  # newer libcst versions only
        _VISIT_ORDER[getattr(cst, _name)] = _order

_FIELDS: dict[type, tuple[str, ...]] = {}
#: Per value type: 1 a code node, 0 an inert node or no node at all, 2 a sequence. Cached
#: because libcst's ABC-based ``isinstance`` costs more than the rest of a walk.
_KINDS: dict[type, int] = {list: 2, tuple: 2}


def code_fields(node_type: type) -> tuple[str, ...]:
    """The fields of ``node_type`` that may hold code, in visiting order."""
    names = _FIELDS.get(node_type)
    if names is None:
        declared = [
            f.name
            for f in dataclasses.fields(node_type)
            if not f.name.startswith("whitespace") and f.name not in _NOT_CODE_FIELDS
        ]
        order = _VISIT_ORDER.get(node_type)
        if order is not None:
            declared = [name for name in order if name in declared] + [
                n for n in declared if n not in order
            ]
        names = _FIELDS[node_type] = tuple(declared)
    return names


def derives_from(kind: type, classes: tuple[type, ...]) -> bool:
    """``issubclass(kind, classes)`` for libcst's node classes, from the MRO alone.

    libcst's bases are ABCs; a negative ``issubclass`` against one walks its whole subclass
    tree before the answer is cached (~1.5 ms for ``INERT``'s tuple, ~0.3 s per process on a
    large file). libcst registers no virtual subclasses, so the MRO gives the same answer
    (``tests/test_walk.py`` checks it for every node class).
    """
    return any(base in classes for base in kind.__mro__)


def value_kind(value_type: type) -> int:
    """1 for a code node type, 2 for a sequence, 0 for anything else (inert nodes, strings, None)."""
    kind = _KINDS.get(value_type)
    if kind is None:
        kind = _KINDS[value_type] = int(
            derives_from(value_type, (cst.CSTNode,)) and not derives_from(value_type, INERT)
        )
    return kind


def code_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` that may hold code, in the order a ``CSTVisitor`` visits them."""
    children: list[cst.CSTNode] = []
    kinds = _KINDS
    names = _FIELDS.get(type(node))
    if names is None:
        names = code_fields(type(node))
    for name in names:
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = value_kind(type(value))
        if kind == 1:
            children.append(value)
        elif kind == 2:
            for item in value:
                item_kind = kinds.get(type(item))
                if item_kind is None:
                    item_kind = value_kind(type(item))
                if item_kind == 1:
                    children.append(item)
    return children


#: Per node type: whether it is an expression (cached, as in :data:`_KINDS`).
_EXPRESSIONS: dict[type, bool] = {}


def statement_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below ``node`` that is not an expression and not inside one: statements at
    any depth, their blocks, handlers, decorators, parameters and assignment targets.

    An expression never holds a statement (a ``lambda`` body is an expression too), so a
    question about assignments or definitions needs no visit of the expressions, which are
    most of a tree's nodes. Order: unspecified (callers collect sets).
    """
    expressions = _EXPRESSIONS
    stack = code_children(node)
    while stack:
        current = stack.pop()
        kind = type(current)
        is_expression = expressions.get(kind)
        if is_expression is None:
            is_expression = expressions[kind] = derives_from(kind, (cst.BaseExpression,))
        if is_expression:
            continue
        yield current
        stack.extend(code_children(current))


_T = TypeVar("_T")


def kind_test(*classes: type[_T]) -> Callable[[object], TypeGuard[_T]]:
    """``isinstance(node, classes)``, answered from a per-type cache.

    libcst's node classes are ABCs: ``isinstance`` against one that is not the node's own
    type goes through ``ABCMeta.__instancecheck__`` (a few microseconds each), and the
    walks ask it for every node they pass (in one profile, 1.35 M such checks were a sixth
    of a per-test-spawn file's CPU).
    """
    cache: dict[type, bool] = {}

    def test(node: object) -> TypeGuard[_T]:
        kind = type(node)
        answer = cache.get(kind)
        if answer is None:
            answer = cache[kind] = derives_from(kind, classes)
        return answer

    return test


def visit_read_only(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """What ``node.visit(visitor)`` does for a visitor that only reads and only hooks code nodes,
    without libcst rebuilding every node it passes.

    ``visit_<Type>`` runs before the children (``False`` skips them), ``leave_<Type>`` after;
    children are :func:`code_children`, in libcst's order. Inert nodes (whitespace, commas,
    operators) are not passed, so a visitor hooking one of those needs libcst's own ``visit``.
    """
    kind = type(node)
    names = _HOOK_NAMES.get(kind)
    if names is None:
        names = _HOOK_NAMES[kind] = ("visit_" + kind.__name__, "leave_" + kind.__name__)
    enter = getattr(visitor, names[0], None)
    if enter is None or enter(node) is not False:
        for child in code_children(node):
            visit_read_only(child, visitor)
    leave = getattr(visitor, names[1], None)
    if leave is not None:
        leave(node)


#: Per node type: the names of a visitor's hooks for it.
_HOOK_NAMES: dict[type, tuple[str, str]] = {}

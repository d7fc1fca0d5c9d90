"""The shapes the PG scan (:mod:`distlint.analysis.pg.scan`) reads off the stdlib ``ast`` tree
as libcst showed them (a call's arguments in the order written, the names ``ast`` keeps as
strings, a loop's body, a skip's exit, the calls that exit or kill), and its walk
(:func:`traverse`): the scan's ``Walker`` is what it records on the way."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, Union

from distlint.skipcodes import PYTORCH_SKIPS
from distlint.syntax.ast_lines import COMPOUND, SimpleLine, is_one_line, small_statements, units
from distlint.syntax.ast_nodes import arguments_as_written, children, dotted_name, walk

#: What the walk visits: a node, or a line of simple statements (libcst's statement line).
Visited = Union[ast.AST, SimpleLine]

#: What libcst called statements: lines (:class:`SimpleLine`) and compound statements.
STATEMENT_TYPES = (SimpleLine, *COMPOUND)
#: Nodes with blocks of statements (whose children the walk reads as units).
HAS_BLOCKS = frozenset(
    {*COMPOUND, ast.ExceptHandler, *(getattr(ast, n) for n in ("match_case",) if hasattr(ast, n))}
)
BLOCK_FIELDS = ("body", "orelse", "finalbody")
LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
COMPREHENSION_TYPES = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
EXIT_FUNCTIONS = {
    "sys.exit": "sys.exit",
    "os._exit": "os._exit",
    "builtins.exit": "exit",
    "builtins.quit": "quit",
}
KILL_FUNCTIONS = {
    "os.kill": "os.kill",
    "os.killpg": "os.killpg",
    "os.abort": "os.abort",
    "signal.raise_signal": "signal.raise_signal",
}
KILL_METHODS = frozenset({"kill", "terminate"})
RAISES_CONTEXTS = frozenset({"pytest.raises"})

SKIP_EXIT_CODES = frozenset(skip.exit_code for skip in PYTORCH_SKIPS.values())
#: The names that make an exit code a skip's (``TEST_SKIPS["..."].exit_code``).
SKIP_NAMES = frozenset({"TEST_SKIPS", "exit_code"})


def in_loop_body(loop: ast.For | ast.AsyncFor | ast.While, child: ast.AST | SimpleLine) -> bool:
    """Whether ``child`` (of ``loop``, on the walk's stack) is in the loop's body: a statement
    before its ``else:`` block, not the target, iterable or condition."""
    first: ast.stmt
    if isinstance(child, SimpleLine):
        first = child.body[0]
    elif isinstance(child, ast.stmt):
        first = child
    else:
        return False
    orelse = loop.orelse
    if not orelse:
        return True
    start = orelse[0]
    return (first.lineno, first.col_offset) < (start.lineno, start.col_offset)


def written_names(node: ast.AST) -> list[str]:
    """The names a statement or pattern binds that ``ast`` keeps as strings (libcst's ``Name``
    nodes): the first part of a dotted import."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        found = (
            [node.module.split(".", 1)[0]]
            if isinstance(node, ast.ImportFrom) and node.module
            else []
        )
        for alias in node.names:
            if alias.name != "*":
                found.append(alias.name.split(".", 1)[0])
            if alias.asname is not None:
                found.append(alias.asname)
        return found
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name is not None else []
    name = getattr(node, "name", None)  # MatchAs, MatchStar
    if isinstance(name, str):
        return [name]
    rest = getattr(node, "rest", None)  # MatchMapping
    if isinstance(rest, str):
        return [rest]
    return list(getattr(node, "kwd_attrs", ()))  # MatchClass


def argument_values(call: ast.Call) -> list[ast.expr]:
    """The values of ``call``'s arguments in the order written (libcst's ``Call.args``),
    keywords, ``*x`` and ``**x`` (as ``x``) included."""
    return [
        a.value if isinstance(a, (ast.Starred, ast.keyword)) else a
        for a in arguments_as_written(call)
    ]


def first_argument(call: ast.Call) -> ast.expr | None:
    """The value of ``call``'s first argument as written, whatever its kind (libcst's
    ``call.args[0].value``)."""
    values = argument_values(call) if call.args or call.keywords else []
    return values[0] if values else None


def receiver_name(receiver: ast.expr | None) -> str | None:
    """``a.b`` for a Name/Attribute chain; ``None``, ``True``, ``False`` as written (names
    to libcst); None for anything else."""
    if isinstance(receiver, (ast.Name, ast.Attribute)):
        return dotted_name(receiver)
    if isinstance(receiver, ast.Constant) and (
        receiver.value is None or isinstance(receiver.value, bool)
    ):
        return repr(receiver.value)
    return None


def names_one_of(node: ast.AST, wanted: frozenset[str]) -> bool:
    """Whether ``node`` writes one of ``wanted`` as a name libcst would visit as a ``Name``:
    a name, an attribute's name, a keyword argument's or a lambda parameter's."""
    if isinstance(node, ast.Name):
        return node.id in wanted
    if isinstance(node, ast.Attribute):
        return node.attr in wanted
    if isinstance(node, (ast.keyword, ast.arg)):
        return node.arg in wanted
    return False


def is_skip_exit(call: ast.Call) -> bool:
    """``sys.exit(TEST_SKIPS[...].exit_code)`` or a literal registered skip code: a skip, not a failure."""
    value = first_argument(call)
    if value is None:
        return False
    if isinstance(value, ast.Constant) and type(value.value) is int:  # not a bool
        return value.value in SKIP_EXIT_CODES
    return any(names_one_of(node, SKIP_NAMES) for node in walk(value))


def walk_children(node: Visited) -> Sequence[Visited]:
    """:func:`~distlint.syntax.ast_nodes.children`, with each block's statements grouped into
    its units (:func:`_block`): a line's children are its statements."""
    if isinstance(node, SimpleLine):
        return node.body
    found = children(node)
    if type(node) not in HAS_BLOCKS:
        return found
    # The statements among ``found`` are those of body, orelse and finalbody, in that order.
    items = iter([item for field in BLOCK_FIELDS for item in block_items(node, field)])
    out: list[Visited] = []
    skip = 0
    for child in found:
        if not isinstance(child, ast.stmt):
            out.append(child)
        elif skip:
            skip -= 1
        else:
            item = next(items)
            out.append(item)
            if isinstance(item, SimpleLine):
                skip = len(item.body) - 1
    return out


def block_items(node: ast.AST, field: str) -> Sequence[Visited]:
    """What libcst's walk met below a block: the units of an indented block; the statements
    of a one-line one (``if x: y``), whose ``SimpleStatementSuite`` was no statement."""
    block = units(node, field)
    if block and is_one_line(node, field):
        return [statement for unit in block for statement in small_statements(unit)]
    return block


class Visitor(Protocol):
    """What :func:`traverse` keeps on the walker (the PG scan's ``Walker``)."""

    #: The ancestors of the node being visited, the node itself last.
    stack: list[Visited]
    #: The ids of the calls and lines among :attr:`stack`, and that as a tuple.
    around: list[int]
    around_ids: tuple[int, ...]

    def visit_Name(self, node: ast.Name) -> None: ...


#: What :attr:`Walker.around` holds: the calls and lines a node sits in.
_CALL_OR_LINE = frozenset({ast.Call, SimpleLine})


def traverse(
    node: Visited, walker: Visitor, handlers: Mapping[type, Callable[[Any, Any], None]]
) -> None:
    """What ``node.visit(walker)`` did on the libcst tree, for a read-only visitor.

    Children are :func:`walk_children`, in source order; the node type's handler (of
    ``handlers``, called with the walker and the node) runs before the children, and the
    ancestor stack is kept as ``on_visit``/``on_leave`` would.
    """
    kind = type(node)
    stack = walker.stack
    stack.append(node)
    around = kind in _CALL_OR_LINE
    if around:
        walker.around.append(id(node))
        walker.around_ids = tuple(walker.around)
    handler = handlers.get(kind)
    if handler is not None:
        handler(walker, node)
    for child in walk_children(node):
        # Most nodes are leaves: a constant has nothing to record, and a name only its read
        # (``visit_Name`` reads no ancestors), so neither costs a call of this function.
        child_kind = type(child)
        if child_kind is ast.Constant:
            continue
        if child_kind is ast.Name:
            walker.visit_Name(child)  # type: ignore[arg-type]
            continue
        traverse(child, walker, handlers)
    if around:
        walker.around.pop()
        walker.around_ids = tuple(walker.around)
    stack.pop()

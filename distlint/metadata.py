"""A cheaper equivalent of libcst's ``PositionProvider``, for the linter's hot path.

:func:`node_spans` gives the positions of a few reported nodes for a tenth of
``PositionProvider``'s cost, with exactly the provider's values (``tests/test_engine.py``
compares them node by node on the fixtures). Qualified names have their own cheap
equivalent in ``distlint.analysis.names.resolver``. See BENCHMARKS.md for what they save.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst

# libcst's code generation state and ``Module._codegen`` are not public: there is no public
# way to get a few nodes' positions without PositionProvider's whole-module cost.
# pyproject.toml pins libcst to the versions that tests/test_engine.py has compared with
# PositionProvider, node by node, on every fixture.
from libcst._nodes.internal import CodegenState

from distlint.analysis.walk import code_children

# -- positions ---------------------------------------------------------------------------------
# libcst's ``PositionProvider`` builds a ``CodeRange`` for every node of the module, with
# a regex split per token: on a 19 KB test file it costs ~125 ms, twice the parse. The
# linter only needs the positions of the nodes it reports. This runs the same code
# generation while counting characters (no regex, no objects per node), then turns
# the offsets of the requested nodes into line/column once. The semantics are
# ``PositionProvider``'s: syntactic ranges where libcst records them (with its
# start/end hoisting), whitespace-inclusive ranges for the other nodes; columns are
# 0-based characters, lines 1-based, CRLF, CR and LF are newlines.
# ``tests/test_engine.py`` checks it against ``PositionProvider`` on every fixture.

_NEWLINE = re.compile(r"\r\n?|\n")
#: ``(start_line, start_column, end_line, end_column)``: lines 1-based, columns 0-based.
Span = tuple[int, int, int, int]


@dataclass
class _OffsetCodegenState(CodegenState):
    offset: int = 0
    #: ``id(node)`` -> its (start, end) offsets. Keyed by id: a libcst node's ``__hash__`` is
    #: Python code, and code generation records every node of what it generates.
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)
    stack: list[int] = field(default_factory=list)
    popped: str = ""

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        # libcst drops the module's last newline from the code but not from the
        # positions; keep it for the line arithmetic.
        if self.tokens:
            self.popped = self.tokens.pop()

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        key = id(node)
        if key not in self.ranges:  # a syntactic range, recorded first, wins
            self.ranges[key] = (start, self.offset)

    # libcst's is a @contextmanager generator; this object is a cheaper context manager.
    def record_syntactic_position(  # type: ignore[override]
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> _SyntacticRange:
        return _SyntacticRange(self, node, start_node, end_node)


class _SyntacticRange:
    """What libcst's ``record_syntactic_position`` context manager does, as a plain class
    (a ``@contextmanager`` generator per node cost more than the rest of the recording)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(
        self,
        state: _OffsetCodegenState,
        node: cst.CSTNode,
        start_node: cst.CSTNode | None,
        end_node: cst.CSTNode | None,
    ) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, *exc_info: object) -> None:
        state = self.state
        start, end = self.start, state.offset
        if self.start_node is not None:
            start = state.ranges[id(self.start_node)][0]
        if self.end_node is not None:
            end = state.ranges[id(self.end_node)][1]
        state.ranges[id(self.node)] = (start, end)


def _line_starts(code: str) -> list[int]:
    """Offset of the first character of every line after the first."""
    return [match.end() for match in _NEWLINE.finditer(code)]


def _spans(
    ranges: dict[int, tuple[int, int]], wanted: Iterable[cst.CSTNode], code: str, base: int = 0
) -> dict[cst.CSTNode, Span]:
    line_starts = _line_starts(code)

    def line_column(offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(line_starts, offset)
        return index + 1, offset - (line_starts[index - 1] if index else 0)

    spans: dict[cst.CSTNode, Span] = {}
    for node in wanted:
        start, end = ranges[id(node)]
        spans[node] = (*line_column(base + start), *line_column(base + end))
    return spans


def _codegen(node: cst.CSTNode, module: cst.Module) -> _OffsetCodegenState:
    state = _OffsetCodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline
    )
    node._codegen(state)
    return state


def node_spans(
    module: cst.Module,
    nodes: Iterable[cst.CSTNode],
    code: str | None = None,
    tree: ast.Module | None = None,
) -> dict[cst.CSTNode, Span]:
    """Spans of ``nodes`` (nodes of ``module``), as ``PositionProvider`` would give them.

    ``code``, when given, must be ``module``'s code (the decoded source it was parsed from):
    then only the top-level statements holding a requested node are generated (see
    :func:`_spans_by_statement`), not the whole module. ``tree``: the stdlib ``ast`` tree of a
    text with the same lines, whose top-level classes give their own spans without generating
    their code (a class is most of a large test file).
    """
    wanted = list(nodes)
    if code is not None:
        found = _spans_by_statement(module, wanted, code, tree)
        if found is not None:
            return found
    state = _codegen(module, module)
    return _spans(state.ranges, wanted, "".join(state.tokens) + state.popped)


def _spans_by_statement(
    module: cst.Module, wanted: list[cst.CSTNode], code: str, tree: ast.Module | None = None
) -> dict[cst.CSTNode, Span] | None:
    """The spans from code generation of only the top-level statements that hold ``wanted``
    nodes; ``None`` where that cannot be sure (then the whole module is generated).

    A top-level statement generates the same text alone as in its module (it starts at
    column 0, with no indentation inherited), and that text is a piece of ``code``. Where
    it occurs exactly once in ``code``, that occurrence is the statement's own place, so
    every position inside it is its offset there plus the offset inside the statement.
    A text that occurs twice (a duplicated statement), or not at all (the module's last
    line without its newline), makes the caller fall back to the whole module.
    """
    remaining = {id(node) for node in wanted}
    ranges: dict[int, tuple[int, int]] = {}
    if id(module) in remaining:
        remaining.discard(id(module))
        if not module.has_trailing_newline:
            return None  # the module's range counts the newline libcst adds and drops again
        ranges[id(module)] = (0, len(code))
    known: dict[cst.CSTNode, Span] = {}
    twins = _ast_twins(module, tree) if tree is not None else {}
    lines = _NEWLINE.split(code) if twins else []
    # Only nodes below the top level need a walk to find their statement (DL202 reports
    # top-level classes: then no class is walked at all).
    nested = remaining - {id(statement) for statement in module.body}
    for statement in module.body:
        if not remaining:
            break
        holds_nested = bool(nested) and _holds_any(statement, nested)
        if not holds_nested and id(statement) not in remaining:
            continue
        twin = twins.get(id(statement))
        if twin is not None and not holds_nested:
            remaining.discard(id(statement))
            known[statement] = _ast_span(twin, lines)
            continue
        state = _codegen(statement, module)
        text = "".join(state.tokens)
        start = code.find(text)
        if start < 0 or state.popped or code.find(text, start + 1) >= 0:
            return None
        for key in [key for key in remaining if key in state.ranges]:
            remaining.discard(key)
            nested.discard(key)
            begin, end = state.ranges[key]
            ranges[key] = (start + begin, start + end)
    if remaining:
        return None
    generated = [node for node in wanted if node not in known]
    return {**_spans(ranges, generated, code), **known}


def _ast_twins(module: cst.Module, tree: ast.Module) -> dict[int, ast.ClassDef]:
    """``id`` of each top-level libcst class -> the same class in ``tree`` (``ast`` splits a line
    of ``;``-separated statements into several, libcst keeps one ``SimpleStatementLine``)."""
    twins: dict[int, ast.ClassDef] = {}
    position = 0
    for statement in module.body:
        if position >= len(tree.body):
            return {}
        twin = tree.body[position]
        if isinstance(statement, cst.SimpleStatementLine):
            position += len(statement.body)
            continue
        position += 1
        if isinstance(statement, cst.ClassDef):
            if not isinstance(twin, ast.ClassDef) or twin.name != statement.name.value:
                return {}  # not the same statements: generate everything
            twins[id(statement)] = twin
    return twins if position == len(tree.body) else {}


def _ast_span(node: ast.ClassDef, lines: list[str]) -> Span:
    """A top-level class's span as ``PositionProvider`` gives it: from its ``class`` keyword (not
    its decorators) to the end of its last statement; ``ast`` columns are UTF-8 bytes."""
    end_line = node.end_lineno or node.lineno
    end_col = node.end_col_offset or 0
    last = lines[end_line - 1]
    if not last.isascii():
        end_col = len(last.encode("utf-8")[:end_col].decode("utf-8", "replace"))
    return node.lineno, node.col_offset, end_line, end_col


def _holds_any(statement: cst.CSTNode, ids: set[int]) -> bool:
    """Whether ``statement`` or a node below it is one of ``ids``."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if id(node) in ids:
            return True
        stack.extend(code_children(node))
    return False

"""Small libcst helpers that rules, analyses and the codemod share. Imports nothing of distlint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

# Any module renders a node the same way; this one is never edited.
_RENDERER = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """The source text of ``node`` (default indentation and newlines)."""
    return _RENDERER.code_for_node(node)


def is_string_statement(statement: cst.BaseStatement) -> bool:
    """A line that is only a string literal: it does nothing (a docstring when it comes first)."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def docstring_statement(body: Sequence[cst.BaseStatement]) -> cst.BaseStatement | None:
    """The docstring of a module, class or function body: its first statement, if a string."""
    if body and is_string_statement(body[0]):
        return body[0]
    return None


class NodeIndex(cst.CSTVisitor):
    """Every node under a root by ``id()``, and each node's parent (also by ``id()``).

    Edits refer to nodes by identity (libcst nodes are immutable and ``==`` compares
    values), so lookups go through ``id()``.
    """

    def __init__(self, root: cst.CSTNode) -> None:
        super().__init__()
        self.nodes: dict[int, cst.CSTNode] = {}
        self.parents: dict[int, int] = {}
        self._stack: list[int] = []
        root.visit(self)

    def on_visit(self, node: cst.CSTNode) -> bool:
        key = id(node)
        self.nodes[key] = node
        if self._stack:
            self.parents[key] = self._stack[-1]
        self._stack.append(key)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()

    def ancestry(self, key: int) -> Sequence[int]:
        """``key`` and the ids of every node above it, nearest first."""
        chain: list[int] = []
        cursor: int | None = key
        while cursor is not None:
            chain.append(cursor)
            cursor = self.parents.get(cursor)
        return chain


class ReplaceNodes(cst.CSTTransformer):
    """Replaces nodes by identity: ``{id(node): replacement}`` (a node, ``RemoveFromParent()``...)."""

    def __init__(
        self,
        replacements: Mapping[
            int, cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]
        ],
    ) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(  # type: ignore[override]  # libcst's is generic in the node type
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        replacement = self.replacements.get(id(original_node))
        return updated_node if replacement is None else replacement


def is_literal(node: cst.BaseExpression) -> bool:
    """A number, string, True/False/None (signed), or a tuple/list of those."""
    if isinstance(
        node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
    ):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return is_literal(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(is_literal(e.value) for e in node.elements)
    return False


def first_line(statement: cst.CSTNode) -> str:
    """The statement's first line of code (its leading comments left out), as libcst writes it."""
    if hasattr(statement, "leading_lines"):
        statement = statement.with_changes(leading_lines=[])
    return code_of(statement).strip().splitlines()[0]


def expression_of(text: str) -> cst.BaseExpression:
    """An expression's text as written (from another tree), as a libcst node; in parentheses
    where it spans lines that only its own parentheses held together."""
    try:
        return cst.parse_expression(text)
    except cst.ParserSyntaxError:
        return cst.parse_expression(f"({text})")

"""The libcst statement at the place of each statement the analysis reported on the ``ast`` tree.

The PG analysis works on the stdlib ``ast`` tree (cheap enough for ``distlint check`` on every
commit); ``distlint migrate`` edits the libcst tree of the same text, and finds the nodes it
edits by identity. :class:`Twins` pairs the two trees' statements once, block by block (both
parsers see the same blocks in the same order): a def or class with its libcst def or class,
a :class:`~distlint.syntax.ast_lines.SimpleLine` with its ``SimpleStatementLine`` (or a
one-line block's ``SimpleStatementSuite``), a compound statement with its compound statement,
a decorator expression with its ``Decorator``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Union

import libcst as cst

from distlint.syntax.ast_lines import SimpleLine, Unit, else_units, units
from distlint.syntax.ast_nodes import Source

#: What the analysis's facts hold: a unit of a body, or a decorator's expression.
AstStatement = Union[Unit, ast.expr]


class TwinMismatch(Exception):
    """The two trees disagree on a block: they were not parsed from the same text."""


class InLeftOutBody(KeyError):
    """A statement with no libcst twin where some bodies are stand-ins: one of those bodies was
    asked about (``distlint migrate`` then parses the whole file)."""


class Twins:
    """``ast`` statements (prepared: :func:`distlint.syntax.ast_lines.prepare`) of ``text`` and
    the libcst statements of the same text, paired."""

    def __init__(
        self,
        tree: ast.Module,
        module: cst.Module,
        text: str,
        opaque_bodies: frozenset[int] = frozenset(),
    ) -> None:
        """``text``: the text ``tree`` was parsed from (the facts' source); ``opaque_bodies``:
        ``id()`` of the defs of ``tree`` whose bodies are stand-ins in ``module``
        (:mod:`distlint.codemods.body_stand_ins`): each def and its decorators are paired,
        nothing in its body is."""
        self.tree = tree
        self.source = Source(text)
        self._opaque_bodies = opaque_bodies
        self._to_cst: dict[int, cst.CSTNode] = {}
        self._to_ast: dict[int, AstStatement] = {}
        #: Keeps the paired ``ast`` objects alive, so that their ``id()`` keys stay theirs.
        self._kept: list[object] = []
        self._block(units(tree), module.body)

    def libcst_of(self, node: AstStatement) -> cst.CSTNode:
        """The libcst twin of a unit, a def, a class or a decorator expression."""
        found = self._to_cst.get(id(node))
        if found is None:
            missing = InLeftOutBody if self._opaque_bodies else KeyError
            raise missing(f"no libcst twin for {node!r}")
        return found

    def libcst_statement(self, node: Unit) -> cst.BaseStatement:
        """The libcst twin of a unit that is a statement of its own (not a one-line block's)."""
        found = self.libcst_of(node)
        assert isinstance(found, cst.BaseStatement)
        return found

    def libcst_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> cst.FunctionDef:
        found = self.libcst_of(node)
        assert isinstance(found, cst.FunctionDef)
        return found

    def libcst_class(self, node: ast.ClassDef) -> cst.ClassDef:
        found = self.libcst_of(node)
        assert isinstance(found, cst.ClassDef)
        return found

    def ast_of(self, node: cst.CSTNode) -> AstStatement:
        """The ``ast`` twin of a libcst statement, def, class or decorator."""
        found = self._to_ast.get(id(node))
        if found is None:
            raise KeyError(f"no ast twin for {type(node).__name__}")
        return found

    def ast_statements(self, node: cst.CSTNode) -> Sequence[ast.stmt] | None:
        """The ``ast`` statements a libcst statement was parsed as (a line's: each of its
        statements); None for a node that has no twin (one the edits made)."""
        twin = self._to_ast.get(id(node))
        if isinstance(twin, SimpleLine):
            return twin.body
        return [twin] if isinstance(twin, ast.stmt) else None

    # -- pairing ---------------------------------------------------------------------------------
    def _pair(self, ours: AstStatement, theirs: cst.CSTNode) -> None:
        self._to_cst[id(ours)] = theirs
        self._to_ast[id(theirs)] = ours
        self._kept.append(ours)

    def _block(self, ours: Sequence[Unit], theirs: Sequence[cst.CSTNode]) -> None:
        if len(ours) != len(theirs):
            raise TwinMismatch(f"a block of {len(ours)} statements against {len(theirs)}")
        for unit, statement in zip(ours, theirs):
            self._statement(unit, statement)

    def _suite(self, owner: ast.AST, field: str, suite: cst.BaseSuite) -> None:
        if isinstance(suite, cst.SimpleStatementSuite):
            # ``if x: y``: the line's statements are the suite's own (one unit, the SimpleLine).
            lines = units(owner, field)
            if len(lines) != 1:
                raise TwinMismatch("a one-line block that is not one line")
            self._pair(lines[0], suite)
            return
        assert isinstance(suite, cst.IndentedBlock)
        self._block(units(owner, field), suite.body)

    def _statement(self, unit: Unit, statement: cst.CSTNode) -> None:
        self._pair(unit, statement)
        if isinstance(unit, SimpleLine):
            if not isinstance(statement, cst.SimpleStatementLine):
                raise TwinMismatch(f"a line against {type(statement).__name__}")
            return
        if isinstance(unit, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            assert isinstance(statement, (cst.FunctionDef, cst.ClassDef))
            for expression, decorator in zip(unit.decorator_list, statement.decorators):
                self._pair(expression, decorator)
            if id(unit) in self._opaque_bodies:
                return
            self._suite(unit, "body", statement.body)
        elif isinstance(unit, ast.If):
            assert isinstance(statement, cst.If)
            self._if(unit, statement)
        elif isinstance(unit, (ast.For, ast.AsyncFor, ast.While)):
            assert isinstance(statement, (cst.For, cst.While))
            self._suite(unit, "body", statement.body)
            if statement.orelse is not None:
                self._suite(unit, "orelse", statement.orelse.body)
        elif isinstance(unit, (ast.With, ast.AsyncWith)):
            assert isinstance(statement, cst.With)
            self._suite(unit, "body", statement.body)
        elif isinstance(statement, (cst.Try, cst.TryStar)):
            assert isinstance(unit, ast.Try) or type(unit).__name__ == "TryStar"
            self._try(unit, statement)
        elif isinstance(statement, cst.Match):
            for case, their_case in zip(unit.cases, statement.cases):  # type: ignore[attr-defined]
                self._suite(case, "body", their_case.body)
        else:
            raise TwinMismatch(f"{type(unit).__name__} against {type(statement).__name__}")

    def _if(self, unit: ast.If, statement: cst.If) -> None:
        self._suite(unit, "body", statement.body)
        ours = else_units(unit)
        theirs = statement.orelse
        if isinstance(ours, ast.If):
            assert isinstance(theirs, cst.If)
            self._pair(ours, theirs)
            self._if(ours, theirs)
        elif ours is not None:
            assert isinstance(theirs, cst.Else)
            self._suite(unit, "orelse", theirs.body)

    def _try(self, unit: ast.AST, statement: cst.Try | cst.TryStar) -> None:
        self._suite(unit, "body", statement.body)
        handlers: list[ast.ExceptHandler] = getattr(unit, "handlers", [])
        theirs: Sequence[cst.ExceptHandler | cst.ExceptStarHandler] = statement.handlers
        for handler, their_handler in zip(handlers, theirs):
            self._suite(handler, "body", their_handler.body)
        if statement.orelse is not None:
            self._suite(unit, "orelse", statement.orelse.body)
        if statement.finalbody is not None:
            self._suite(unit, "finalbody", statement.finalbody.body)

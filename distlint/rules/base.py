"""Rules that visit the libcst tree: :class:`LintRule`, its reports and fixes.

A ``LintRule`` is a libcst ``BatchableCSTVisitor`` (and a :class:`~distlint.rules.rule.Rule`:
code, name, documentation, examples): the linter runs every enabled rule of a file in one
traversal (``MetadataWrapper.visit_batched``). A rule reports a node with a message and, when
it can, a :class:`Fix`. Positions are resolved by the linter only for files that have a
report, so rules never declare ``PositionProvider``.

As in Fixit, whether a rule fixes is read from its examples: ``fixable`` is true when an
``INVALID`` example gives an ``expected_fix``, and the harness checks that a rule
without such an example never offers a fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import libcst as cst

from distlint.imports import ImportSpec
from distlint.rules.rule import Invalid, Rule, Valid

if TYPE_CHECKING:
    from distlint.source import FileContext

__all__ = ["Fix", "Invalid", "LintRule", "Replacement", "Report", "Valid"]

#: A replacement for a reported node: a node, ``cst.RemoveFromParent()`` or a
#: ``cst.FlattenSentinel`` of statements.
Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


@dataclass(frozen=True)
class Fix:
    """An autofix: node replacements (by node identity) plus import changes.

    ``edits`` maps nodes of the traversed module to their replacements. A fix that
    rewrites the whole module replaces the ``cst.Module`` node itself. Imports are
    added with ``AddImportsVisitor`` and removed with ``RemoveImportsVisitor`` (only
    when unused), never by editing import lines by hand.
    """

    edits: tuple[tuple[cst.CSTNode, Replacement], ...] = ()
    add_imports: tuple[ImportSpec, ...] = ()
    remove_imports: tuple[ImportSpec, ...] = ()


@dataclass
class Report:
    """What a rule said about a node, before positions are resolved."""

    rule: type[LintRule]
    node: cst.CSTNode
    message: str
    fix: Fix | None = None


class LintRule(Rule, cst.BatchableCSTVisitor):
    """A rule that visits the libcst tree (see the module docstring)."""

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.reports: list[Report] = []

    # -- reporting ------------------------------------------------------------------
    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Fix | None = None,
        replacement: Replacement | None = None,
    ) -> None:
        """Report ``node``. ``replacement`` is shorthand for a fix replacing ``node``."""
        if replacement is not None:
            if fix is not None:
                raise ValueError("pass either fix= or replacement=, not both")
            fix = Fix(edits=((node, replacement),))
        self.reports.append(Report(type(self), node, message, fix))

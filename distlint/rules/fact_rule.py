"""Rules that report what an analysis of the stdlib ``ast`` tree found, without libcst.

The DL2xx rules say what the process-group analysis (:mod:`distlint.analysis.pg`) concluded:
they read facts, not syntax, and fix nothing. As a :class:`FactRule` such a rule runs in
:meth:`FactRule.check`, after the analysis, and reports spans; a file in which only fact rules
may report is linted from its ``ast`` tree alone (:mod:`distlint.fact_linter`), never importing
libcst, which costs more than the whole analysis on a large file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distlint.rules.rule import Rule
from distlint.syntax.ast_nodes import Source

if TYPE_CHECKING:
    from distlint.source import FileContext

#: ``(line, column, end line, end column)``: lines 1-based, columns 0-based, in characters.
Span = tuple[int, int, int, int]

_SOURCE_FACT = "distlint.rules.fact_rule.source"


@dataclass
class FactReport:
    """What a fact rule said, and where."""

    rule: type[FactRule]
    span: Span
    message: str


class FactRule(Rule):
    """A rule that reports from facts (see the module docstring); subclasses define :meth:`check`."""

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self.reports: list[FactReport] = []

    def check(self) -> None:
        """Report what the facts of ``self.context``'s file call for."""
        raise NotImplementedError

    @property
    def source(self) -> Source:
        """The text of the file (its nodes' spans), shared by the fact rules of one file."""
        return self.context.fact(_SOURCE_FACT, lambda ctx: Source(ctx.text or ""))

    def report_at(self, span: Span, message: str) -> None:
        self.reports.append(FactReport(type(self), span, message))

    def report_node(self, node: ast.AST, message: str) -> None:
        """Report an expression or statement of the file's ``ast`` tree."""
        self.report_at(self.source.span(node), message)

"""Linting from facts alone: the fact rules of a file, on its stdlib ``ast`` tree, no libcst.

Where every rule that may report in a file is a :class:`~distlint.rules.fact_rule.FactRule`
(the DL2xx rules, which report what the PG analysis concluded), the file is linted here: the
pre-screen's ``ast`` tree and text are all the analysis needs, so libcst is neither imported
nor run (its parse alone costs several times the analysis on a large test file).
:mod:`distlint.linter` runs the same fact rules beside its libcst rules on the other files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from distlint.findings import FileResult, Finding, is_suppressed
from distlint.rules.fact_rule import FactReport, FactRule, Span
from distlint.source import FileContext, source_lines

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.rules.rule import Rule
    from distlint.screening import Screened


def facts_only(screened: Screened, rules: Sequence[type[Rule]]) -> bool:
    """Whether the screened file needs only fact rules (and has the ``ast`` tree they read)."""
    return screened.tree is not None and all(issubclass(rule, FactRule) for rule in rules)


def run_fact_rules(context: FileContext, rules: Sequence[type[Rule]]) -> list[FactReport]:
    """What the fact rules among ``rules`` report in the file of ``context``."""
    reports: list[FactReport] = []
    for rule in rules:
        if issubclass(rule, FactRule):
            instance = rule(context)
            instance.check()
            reports += instance.reports
    return reports


def locate_fact_reports(
    reports: Sequence[FactReport], path: str, text: str
) -> list[Finding | None]:
    """Findings for ``reports`` in order; ``None`` for one a comment on its line suppresses."""
    lines = source_lines(text) if reports else []
    return [
        finding_at(path, lines, report.span, report.rule, report.message, fixable=False)
        for report in reports
    ]


def finding_at(
    path: str,
    lines: Sequence[str],
    span: Span,
    rule: type[Rule],
    message: str,
    fixable: bool,
) -> Finding | None:
    """The finding of a report at ``span`` (``lines``: the file's); None where a comment on its
    first line suppresses the rule."""
    line, column, end_line, end_column = span
    written = lines[line - 1] if 0 < line <= len(lines) else ""
    if is_suppressed(written, rule.code):
        return None
    return Finding(
        path, line, column + 1, rule.code, rule.name, message, fixable, end_line, end_column + 1
    )


def lint_facts(screened: Screened, config: Config, rules: Sequence[type[Rule]]) -> FileResult:
    """Lint a screened file whose rules are all fact rules (:func:`facts_only`)."""
    path = screened.path
    try:
        context = FileContext(path, config, None, screened.tree, screened.text)
        located = locate_fact_reports(run_fact_rules(context, rules), path, screened.text)
    except RecursionError:
        return FileResult(path, error=f"{path}: error: file too deeply nested to analyse")
    except ValueError as exc:  # syntax the analysis does not read (Unsupported)
        return FileResult(path, error=f"{path}: error: {exc}")
    return FileResult(
        path,
        sorted((f for f in located if f is not None), key=Finding.sort_key),
        depends_on=context.depends_on,
    )

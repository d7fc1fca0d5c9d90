"""lintrunner: one LintMessage JSON object per line (PyTorch's adapter protocol).

Fields: path, line, char, code, severity, name, original, replacement, description.
A fixable file carries its whole-file ``original`` and fixed ``replacement`` on its
first fixable message (as PyTorch's formatter adapters do), so ``lintrunner -a``
applies every fix of the file at once. A file that could not be checked becomes an
error message of code ``DISTLINT``: lintrunner expects linters to report problems as
messages and to exit 0, which ``distlint check --format lintrunner`` does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from distlint.output import RenderOptions, source_text

if TYPE_CHECKING:
    from distlint.engine import CheckReport

ERROR_CODE = "DISTLINT"


def _message(
    path: str | None,
    line: int | None,
    char: int | None,
    code: str,
    name: str,
    description: str,
    original: str | None = None,
    replacement: str | None = None,
) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "char": char,
        "code": code,
        "severity": "error",
        "name": name,
        "original": original,
        "replacement": replacement,
        "description": description,
    }


def messages(report: CheckReport) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for outcome in report.outcomes:
        for error in outcome.errors:
            out.append(_message(outcome.path, None, None, ERROR_CODE, "file-error", error))
        whole_file_fix = outcome.fixed is not None and outcome.original is not None
        for finding in outcome.findings:
            original = replacement = None
            if whole_file_fix and finding.fixable:
                original = source_text(outcome.original)  # type: ignore[arg-type]
                replacement = source_text(outcome.fixed)  # type: ignore[arg-type]
                whole_file_fix = False
            description = finding.message + (
                " (fixable: `distlint check --fix`)" if finding.fixable else ""
            )
            out.append(
                _message(
                    finding.path,
                    finding.line,
                    finding.col,
                    finding.code,
                    finding.name,
                    description,
                    original,
                    replacement,
                )
            )
    for diagnostic in report.diagnostics:
        if diagnostic.level == "error":
            out.append(
                _message(diagnostic.path, None, None, ERROR_CODE, "path-error", diagnostic.line())
            )
    return out


def render(report: CheckReport, options: RenderOptions) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages(report))

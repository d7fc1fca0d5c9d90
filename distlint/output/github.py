"""GitHub Actions workflow commands: one ``::error ...::message`` annotation per finding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from distlint.output import RenderOptions

if TYPE_CHECKING:
    from distlint.engine import CheckReport


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_lines(report: CheckReport) -> list[str]:
    lines: list[str] = []
    for outcome in report.outcomes:
        for error in outcome.errors:
            lines.append(
                f"::error file={_escape_property(outcome.path)},title=distlint::{_escape_data(error)}"
            )
        for f in outcome.findings:
            lines.append(
                f"::error file={_escape_property(f.path)},line={f.line},col={f.col},"
                f"endLine={f.end_line or f.line},endColumn={f.end_col or f.col},"
                f"title={_escape_property(f.code)}::{_escape_data(f'{f.code} {f.message}')}"
            )
    return lines


def render(report: CheckReport, options: RenderOptions) -> str:
    return "".join(line + "\n" for line in annotation_lines(report))

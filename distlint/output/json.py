"""A JSON list of findings, sorted; the fields are stable (documented in the README)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from distlint.output import RenderOptions

if TYPE_CHECKING:
    from distlint.engine import CheckReport

FIELDS = ("path", "line", "column", "end_line", "end_column", "code", "name", "message", "fixable")


def as_objects(report: CheckReport) -> list[dict[str, Any]]:
    return [
        {
            "path": f.path,
            "line": f.line,
            "column": f.col,
            "end_line": f.end_line,
            "end_column": f.end_col,
            "code": f.code,
            "name": f.name,
            "message": f.message,
            "fixable": f.fixable,
        }
        for f in report.findings
    ]


def render(report: CheckReport, options: RenderOptions) -> str:
    return json.dumps(as_objects(report), indent=2) + "\n"

"""SARIF 2.1.0 (GitHub code scanning and other SARIF viewers)."""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import distlint
from distlint.output import RenderOptions

if TYPE_CHECKING:
    from distlint.engine import CheckReport

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def artifact_uri(path: str) -> str:
    """A relative path as a relative URI reference; an absolute one as a ``file:`` URI."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    return quote(PurePath(path).as_posix())


def _rule_descriptor(rule: Any) -> dict[str, Any]:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": documentation},
        "defaultConfiguration": {"level": "error", "enabled": bool(rule.default_enabled)},
        "properties": {"fixable": bool(rule.fixable)},
    }


def document(report: CheckReport) -> dict[str, Any]:
    from distlint.rules import all_rules  # rule docs: only this format needs them

    rules = list(all_rules())
    index = {rule.code: i for i, rule in enumerate(rules)}
    results: list[dict[str, Any]] = []
    for f in report.findings:
        region = {"startLine": f.line, "startColumn": f.col}
        if f.end_line:
            region.update(endLine=f.end_line, endColumn=f.end_col or f.col)
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": "error",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": artifact_uri(f.path)},
                        "region": region,
                    }
                }
            ],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        results.append(result)
    notifications = [
        {
            "level": "error",
            "message": {"text": error},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(outcome.path)}}}
            ],
        }
        for outcome in report.outcomes
        for error in outcome.errors
    ] + [
        {
            "level": d.level if d.level in ("error", "warning") else "note",
            "message": {"text": d.line()},
        }
        for d in report.diagnostics
    ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "distlint",
                        "version": distlint.__version__,
                        "rules": [_rule_descriptor(rule) for rule in rules],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not any(
                            n["level"] == "error" for n in notifications
                        ),
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }


def render(report: CheckReport, options: RenderOptions) -> str:
    return json.dumps(document(report), indent=2) + "\n"

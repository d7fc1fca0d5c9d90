"""Output formats of ``distlint check``: one small module each, all with ``render()``.

``render(report, options) -> str`` returns what goes to stdout. Diagnostics and file
errors go to stderr as ``path: error: ...`` lines in every format (the CLI prints
them); the machine formats also carry file errors where their schema has a place
for them (lintrunner messages, SARIF notifications, GitHub annotations).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from distlint.engine import CheckReport

FORMATS = ("text", "json", "lintrunner", "sarif", "github")


@dataclass(frozen=True)
class RenderOptions:
    #: "check", "fix" or "diff" (see :class:`distlint.engine.CheckOptions`).
    mode: str = "check"
    #: Counts per rule instead of one line per finding (text format).
    statistics: bool = False


def render(format_name: str, report: CheckReport, options: RenderOptions = RenderOptions()) -> str:
    if format_name not in FORMATS:
        raise ValueError(f"unknown format {format_name!r}")
    module = importlib.import_module(f"{__name__}.{format_name}")
    return module.render(report, options)


def source_text(data: bytes) -> str:
    """A file's bytes as text, in its declared encoding (PEP 263), for diffs and lintrunner."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "surrogateescape")


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def statistics_lines(report: CheckReport) -> list:
    """``count  CODE  name`` per rule, most frequent first."""
    counts: dict = {}
    for finding in report.findings:
        entry = counts.setdefault(finding.code, [0, finding.name, 0])
        entry[0] += 1
        entry[2] += finding.fixable
    width = max((len(str(c[0])) for c in counts.values()), default=1)
    rows = sorted(counts.items(), key=lambda item: (-item[1][0], item[0]))
    return [
        f"{count:>{width}}  {code}  {name}" + ("  (fixable)" if fixable else "")
        for code, (count, name, fixable) in rows
    ]

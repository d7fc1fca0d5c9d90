"""``# distlint: keep-per-test``: a comment that keeps a test per test, whatever the analysis finds.

``distlint migrate --verify`` finds by running what no static analysis can (a test that ends
differently on shared ranks, a flaky one) and keeps those tests behind. With ``--write`` it
leaves this comment on each of them, on the line above the test (or above its decorators), with
what the runs showed after it; the analysis reads it back as the reason ``kept``, so DL201,
DL202 and every later ``distlint migrate`` (``--check`` in CI or pre-commit) keep the test where
the runs put it. Deleting the comment hands the test back to the analysis.
"""

from __future__ import annotations

import re

import libcst as cst

#: The comment, as written on the line above a test: ``# distlint: keep-per-test (why)``.
MARK = "distlint: keep-per-test"
_MARK = re.compile(r"#\s*distlint:\s*keep-per-test\b(?:\s*\((?P<why>.*)\))?")


def keep_mark(test: cst.FunctionDef) -> str | None:
    """The mark's text on ``test`` (what follows it in parentheses, possibly empty), or None
    when the lines above the test and between its decorators and ``def`` carry no mark."""
    lines = [*test.leading_lines, *test.lines_after_decorators]
    for decorator in test.decorators:
        lines += decorator.leading_lines
    for line in lines:
        if line.comment is not None:
            match = _MARK.match(line.comment.value)
            if match is not None:
                return (match.group("why") or "").strip()
    return None


def mark_line(why: str) -> cst.EmptyLine:
    """The comment line ``--verify --write`` puts above a test it kept behind."""
    text = f"# {MARK} ({why})" if why else f"# {MARK}"
    return cst.EmptyLine(indent=True, comment=cst.Comment(text))

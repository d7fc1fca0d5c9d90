"""``path:line:col: CODE message`` per finding, sorted, then a summary line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from distlint.output import RenderOptions, plural, source_text, statistics_lines

if TYPE_CHECKING:
    from distlint.engine import CheckReport


def finding_lines(report: CheckReport) -> list[str]:
    return [f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}" for f in report.findings]


def summary(report: CheckReport, mode: str = "check") -> str:
    findings = report.findings
    files_with = len({f.path for f in findings})
    fixable = sum(f.fixable for f in findings)
    unreadable = sum(1 for outcome in report.outcomes if outcome.errors)
    checked = len(report.outcomes)
    parts: list[str] = []
    if mode == "fix":
        fixed = sum(o.fixed_count for o in report.outcomes if o.written)
        files_fixed = sum(1 for o in report.outcomes if o.written)
        parts.append(
            f"Fixed {plural(fixed, 'error')} in {plural(files_fixed, 'file')}."
            if files_fixed
            else f"Nothing to fix ({plural(checked, 'file')} checked)."
        )
        if findings:
            parts.append(
                f"{plural(len(findings), 'error')} remaining in {plural(files_with, 'file')}."
            )
    elif mode == "diff":
        fixes = sum(o.fixed_count for o in report.outcomes if o.fixed is not None)
        files_fixed = sum(1 for o in report.outcomes if o.fixed is not None)
        parts.append(
            f"Would fix {plural(fixes, 'error')} in {plural(files_fixed, 'file')} (nothing written)."
        )
    elif findings:
        text = f"Found {plural(len(findings), 'error')} in {plural(files_with, 'file')}"
        parts.append(text + (f" ({fixable} fixable with --fix)." if fixable else "."))
    else:
        parts.append(f"All checks passed ({plural(checked, 'file')} checked).")
    if unreadable:
        parts.append(
            f"{plural(unreadable, 'file')} could not be checked or fixed (errors on stderr)."
        )
    return " ".join(parts)


def render(report: CheckReport, options: RenderOptions) -> str:
    lines = statistics_lines(report) if options.statistics else finding_lines(report)
    if options.mode == "diff":
        return "".join(_diffs(report))
    return "\n".join(lines + [summary(report, options.mode)]) + "\n"


def _diffs(report: CheckReport) -> list[str]:
    import difflib

    chunks: list[str] = []
    for outcome in report.outcomes:
        if outcome.fixed is None or outcome.original is None:
            continue
        before = source_text(outcome.original).splitlines(keepends=True)
        after = source_text(outcome.fixed).splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, f"a/{outcome.path}", f"b/{outcome.path}"):
            chunks.append(
                line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            )
    return chunks

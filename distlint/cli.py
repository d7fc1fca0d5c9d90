"""The ``distlint`` command line: ``check``, ``rules`` and ``migrate``.

Exit status of ``distlint check``:

* 0 - every file checked, nothing to report (after ``--fix``: nothing left);
* 1 - findings, or a file that could not be checked or fixed (syntax error,
  undecodable bytes, read-only under ``--fix``): the file needs attention, and the
  other files were still checked; with ``--diff``, also when there is a diff;
* 2 - the invocation is wrong: bad option, bad ``[tool.distlint]`` config, a path
  that does not exist, or an internal error in distlint.

With ``--format lintrunner`` findings and file errors are lint messages and the
exit status is 0 unless it would be 2 (lintrunner's adapter protocol).

``migrate`` lives in :mod:`distlint.codemods.cli`, imported only when used, so
``check`` never pays for (or depends on) the codemod.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

import distlint
from distlint.config import ConfigError, Overrides
from distlint.output import FORMATS
from distlint.run_options import add_run_options

if TYPE_CHECKING:
    from distlint.engine import CheckReport
    from distlint.rules.rule import Rule

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
#: Progress is shown only on a terminal, and only once a run has lasted this long.
PROGRESS_AFTER_S = 1.0


def _codes(values: list[str] | None) -> list[str] | None:
    """``--select DL1,DL201 --select DL3`` -> ``["DL1", "DL201", "DL3"]`` (upper-cased)."""
    if values is None:
        return None
    return [code.strip().upper() for value in values for code in value.split(",") if code.strip()]


def build_parser(with_migrate: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distlint",
        description="Lint, migrate and run PyTorch-style distributed test suites.",
        # `distlint check @paths.txt` reads one argument per line (lintrunner's {{PATHSFILE}}).
        fromfile_prefix_chars="@",
    )
    parser.add_argument("--version", action="version", version=f"distlint {distlint.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    check = commands.add_parser(
        "check",
        help="check test files (the default command)",
        description="Check test files with distlint's rules.",
    )
    check.add_argument(
        "paths",
        nargs="*",
        default=["."],
        metavar="PATH",
        help="files or directories (default: .); files given here are checked even if "
        "they do not match the include globs",
    )
    mode = check.add_mutually_exclusive_group()
    mode.add_argument("--fix", action="store_true", help="apply safe autofixes in place")
    mode.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; write nothing"
    )
    check.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="only these codes or prefixes, comma-separated (e.g. DL1,DL201); replaces the "
        "config's select and ignore",
    )
    check.add_argument(
        "--ignore",
        action="append",
        metavar="CODES",
        help="also ignore these codes or prefixes, comma-separated",
    )
    check.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    add_run_options(check)
    check.add_argument(
        "--statistics", action="store_true", help="show the number of findings per rule"
    )

    rules = commands.add_parser(
        "rules",
        help="list the rules, or show one rule's documentation",
        description="List the rules, or show one rule's documentation.",
    )
    rules.add_argument("code", nargs="?", metavar="CODE", help="a rule code, e.g. DL101")
    rules.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="markdown: docs/rules.md's generated part (the rules table, then every rule's "
        "documentation); with CODE, that rule's section",
    )

    migrate = commands.add_parser(
        "migrate",
        help="move eligible tests into continuous-test classes",
        description="Move eligible tests into continuous-test classes.",
        add_help=not with_migrate,
    )
    if with_migrate:
        from distlint.codemods.cli import configure_parser

        configure_parser(migrate)
    return parser


def _wants_migrate(argv: Sequence[str]) -> bool:
    positional = [arg for arg in argv if not arg.startswith("-")]
    return bool(positional) and positional[0] == "migrate"


def run() -> NoReturn:
    """The ``distlint`` command (and ``python -m distlint``): :func:`main`, then the process
    ends without tearing the interpreter down. Freeing what a large file's analysis built costs
    more than a tenth of a second that nobody waits for usefully (a pre-commit hook's budget);
    output is flushed and every file distlint writes is closed before :func:`main` returns."""
    try:
        code = main()
    except SystemExit as exc:  # argparse: --help, --version, a usage error (its message printed)
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `distlint check | head`: nothing more can be written
        pass
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(with_migrate=_wants_migrate(argv)).parse_args(argv)
    try:
        if args.command == "check":
            return run_check(args)
        if args.command == "rules":
            return run_rules(args)
        from distlint.codemods.cli import run

        progress = _Progress(sys.stderr, "migrated") if sys.stderr.isatty() else None
        return run(args, progress=progress)
    except BrokenPipeError:  # `distlint check | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS
    except KeyboardInterrupt:  # no traceback; nothing is half-written (fixes are atomic renames)
        print("distlint: interrupted", file=sys.stderr)
        return 130


# -- check -------------------------------------------------------------------------------------


class _Progress:
    """``checked N/M files`` on a terminal's stderr, for runs longer than a second."""

    def __init__(self, stream: TextIO, verb: str = "checked") -> None:
        self.stream = stream
        self.verb = verb
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.start < PROGRESS_AFTER_S or (now - self.last < 0.1 and done < total):
            return
        self.last = now
        self.shown = True
        self.stream.write(f"\rdistlint: {self.verb} {done}/{total} files")
        self.stream.flush()

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def run_check(args: argparse.Namespace) -> int:
    from distlint.engine import CheckOptions, check
    from distlint.output import RenderOptions, render

    try:
        select = _codes(args.select)
        overrides = Overrides(
            select=Overrides.validate_codes("--select", select) if select is not None else None,
            ignore=Overrides.validate_codes("--ignore", _codes(args.ignore) or []),
        )
    except ConfigError as exc:
        print(f"distlint: {exc}", file=sys.stderr)
        return EXIT_USAGE
    mode = "fix" if args.fix else "diff" if args.diff else "check"
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    options = CheckOptions(
        paths=args.paths,
        mode=mode,
        want_fixes=args.format == "lintrunner",
        overrides=overrides,
        jobs=args.jobs,
        use_cache=not args.no_cache,
        cache_dir=None if args.cache_dir is None else Path(args.cache_dir),
        progress=progress,
    )
    try:
        report = check(options)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    finally:
        if progress is not None:
            progress.clear()

    for diagnostic in report.diagnostics:
        print(diagnostic.line(), file=sys.stderr)
    for error in report.file_errors:
        print(error, file=sys.stderr)
    render_options = RenderOptions(mode=mode, statistics=args.statistics and args.format == "text")
    # --diff prints the diff whatever the format: it is what the user asked to see.
    sys.stdout.write(render("text" if mode == "diff" else args.format, report, render_options))
    if mode == "diff" or (args.statistics and args.format != "text"):
        from distlint.output.text import summary

        if args.statistics and args.format != "text":
            from distlint.output import statistics_lines

            for line in statistics_lines(report):
                print(line, file=sys.stderr)
        print(summary(report, mode), file=sys.stderr)
    sys.stdout.flush()
    return exit_status(report, mode, args.format)


def exit_status(report: CheckReport, mode: str = "check", format_name: str = "text") -> int:
    """See the module docstring."""
    if report.usage_error or report.internal_error:
        return EXIT_USAGE
    if format_name == "lintrunner":
        return EXIT_CLEAN
    if report.findings or report.file_errors:
        return EXIT_FINDINGS
    if mode == "diff" and any(outcome.fixed is not None for outcome in report.outcomes):
        return EXIT_FINDINGS
    return EXIT_CLEAN


# -- rules -------------------------------------------------------------------------------------


def rules_table_markdown() -> str:
    """The rules table of README.md and docs/rules.md, generated from the rules themselves."""
    from distlint.rules import all_rules

    lines = [
        "| Code | Name | Autofix | Default | What it checks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in all_rules():
        summary = rule.summary().replace("|", "\\|")
        lines.append(
            f"| {rule.code} | `{rule.name}` | {'yes' if rule.fixable else 'no'} | "
            f"{'on' if rule.default_enabled else 'off'} | {summary} |"
        )
    return "\n".join(lines) + "\n"


def _rules_table_text() -> str:
    from distlint.rules import all_rules

    rows = [("CODE", "NAME", "AUTOFIX", "DEFAULT", "SUMMARY")]
    rows += [
        (
            r.code,
            r.name,
            "yes" if r.fixable else "no",
            "on" if r.default_enabled else "off",
            r.summary(),
        )
        for r in all_rules()
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] + "\n"
        for row in rows
    )


def _demote_headings(markdown: str) -> str:
    """Headings one level down (``## Why`` -> ``### Why``), code blocks left alone: a rule's
    docstring sections sit under the rule's own ``##`` heading in docs/rules.md."""
    lines, in_code = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        lines.append("#" + line if line.startswith("#") and not in_code else line)
    return "\n".join(lines)


def rule_markdown(rule: type[Rule]) -> str:
    """One rule's section of docs/rules.md (``distlint rules CODE --format markdown``)."""
    return f"## {rule.code} {rule.name}\n\n{_rule_facts(rule)}\n\n{_demote_headings(rule.documentation())}\n"


def rules_reference_markdown() -> str:
    """docs/rules.md's generated part (``distlint rules --format markdown``): the rules
    table, then every rule's documentation, generated from the rules themselves."""
    from distlint.rules import all_rules

    return rules_table_markdown() + "".join("\n" + rule_markdown(rule) for rule in all_rules())


def _rule_facts(rule: type[Rule]) -> str:
    return (
        f"Autofix: {'yes' if rule.fixable else 'no'}. "
        f"Default: {'on' if rule.default_enabled else 'off (enable with --select ' + rule.code + ')'}."
    )


def run_rules(args: argparse.Namespace) -> int:
    from distlint.rules import rules_by_code

    if args.code is None:
        sys.stdout.write(
            rules_reference_markdown() if args.format == "markdown" else _rules_table_text()
        )
        return EXIT_CLEAN
    rule = rules_by_code().get(args.code.strip().upper())
    if rule is None:
        print(
            f"distlint: error: unknown rule {args.code!r} (`distlint rules` lists them)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.format == "markdown":
        sys.stdout.write(rule_markdown(rule))
    else:
        header = f"{rule.code} {rule.name}"
        sys.stdout.write(
            f"{header}\n{'=' * len(header)}\n{_rule_facts(rule)}\n\n{rule.documentation()}\n"
        )
    return EXIT_CLEAN

"""``distlint migrate``: the command line of the continuous-class codemod.

    distlint migrate [PATH ...] [--write | --check | --diff] [--runtime distlint|torch]
                     [--class-suffix S] [--jobs N] [--no-cache] [--cache-dir DIR]
                     [--verify [--verify-budget S]]

* default: print each changed file's unified diff, then the per-class report; write nothing;
* ``--diff``: the diffs only (feed them to ``git apply``);
* ``--check``: the report, and exit 1 when any file would change (for CI);
* ``--write``: apply the changes (verified, temp file + atomic replace, mode kept) and
  print the report.
* ``--verify`` (with any of them): before anything is shown or written, run each file that
  would change, original and migrated, under pytest and keep only moves that keep every outcome
  (:mod:`distlint.codemods.verify`); a file that cannot be verified is not written (exit 1).

Files go through ``check``'s pipeline (:mod:`distlint.codemods.migrate_tree`: discovery, the
pre-screen, worker processes, a per-file cache); output is in path order; a terminal's stderr
shows progress.

A file that cannot be read, decoded, parsed or (under ``--write``) written is reported on
stderr in one line, ``path: error: ...``, and skipped; the other files are still
processed. Exit status: 0 when every file was processed (and, with ``--check``, none
would change); 1 when a file had an error or ``--check`` found changes; 2 for a bad
invocation (a path that does not exist, a bad ``[tool.distlint]`` table).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from distlint.codemods.verify import FileVerdict
    from distlint.config import Config

from distlint.analysis.pg.existing_continuous import DEFAULT_SUFFIX
from distlint.codemods.migrate_continuous import MigrationResult
from distlint.codemods.options import RUNTIME_MODULES, MigrateOptions
from distlint.codemods.verify import DEFAULT_BUDGET_S
from distlint.run_options import add_run_options

if TYPE_CHECKING:
    from distlint.engine import ProgressCallback

EXIT_OK, EXIT_CHANGES_OR_ERRORS, EXIT_USAGE = 0, 1, 2
#: Ctrl-C or SIGTERM during ``--verify`` (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def _suffix(text: str) -> str:
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(f"not usable in a class name: {text!r}")
    return text


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add ``distlint migrate``'s arguments to its sub-parser."""
    parser.description = (
        "Move tests that can share one process group from per-test-spawn classes "
        "(MultiProcessTestCase) into continuous test classes, and report why each "
        "other test stays."
    )
    if "--help" not in parser._option_string_actions:  # the CLI builds this sub-parser without help
        parser.add_argument("-h", "--help", action="help", help="show this help message and exit")
    parser.add_argument(
        "paths", nargs="*", default=["."], metavar="PATH", help="files or directories (default: .)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="apply the changes to the files")
    mode.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when any file would change"
    )
    mode.add_argument(
        "--diff", action="store_true", help="print only the unified diff; write nothing"
    )
    parser.add_argument(
        "--runtime",
        choices=sorted(RUNTIME_MODULES),
        default="distlint",
        help="where MultiProcContinuousTest comes from: distlint.runtime (default) or torch's "
        "torch.testing._internal.common_distributed (for code that lands in PyTorch)",
    )
    parser.add_argument(
        "--class-suffix",
        type=_suffix,
        default=DEFAULT_SUFFIX,
        metavar="S",
        help=f"name of the new classes: <Class><S> (default: {DEFAULT_SUFFIX})",
    )
    parser.add_argument(
        "--no-reused-workers",
        action="store_true",
        help="keep the tests that cannot share a PG per test, rather than running them on ranks "
        "their class spawns once, each with a fresh PG (the distlint runtime's ReusedWorkersTest)",
    )
    add_run_options(parser)
    _add_verify_arguments(parser)


def _add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verify",
        action="store_true",
        help="run each file that would change, original and migrated (also in reversed order), "
        "under pytest; tests whose outcomes differ stay behind; only verified files are written",
    )
    parser.add_argument(
        "--verify-budget",
        type=_seconds,
        default=DEFAULT_BUDGET_S,
        metavar="S",
        help=f"seconds all runs of one file may take under --verify (default: {DEFAULT_BUDGET_S:g})",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


@dataclass
class _Totals:
    files: int = 0
    changed: int = 0
    moved: int = 0
    reused: int = 0
    left: int = 0
    errors: int = 0
    unverified: int = 0


def run(
    args: argparse.Namespace,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    progress: ProgressCallback | None = None,
) -> int:
    """Run ``distlint migrate`` with parsed ``args``; return the exit status. ``progress``
    (``distlint.cli`` passes one on a terminal) hears of each file done; it may have a
    ``clear()`` to erase itself before the output."""
    from pathlib import Path

    from distlint.codemods.migrate_tree import TreeOptions, migrate_tree
    from distlint.config import ConfigError

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    options = TreeOptions(
        paths=args.paths,
        migrate=MigrateOptions(
            runtime=args.runtime,
            class_suffix=args.class_suffix,
            reused_workers=not args.no_reused_workers,
        ),
        jobs=getattr(args, "jobs", None),
        use_cache=not getattr(args, "no_cache", False),
        cache_dir=Path(args.cache_dir) if getattr(args, "cache_dir", None) else None,
        progress=progress,
    )
    try:
        tree = migrate_tree(options)
    except ConfigError as exc:
        print(str(exc), file=err)
        return EXIT_USAGE
    finally:
        if progress is not None and hasattr(progress, "clear"):
            progress.clear()
    usage_error = False
    for diagnostic in tree.diagnostics:
        print(diagnostic.line(), file=err)
        usage_error = usage_error or diagnostic.usage
    totals = _Totals()
    reports: list[str] = []
    verify = getattr(args, "verify", False)
    with _stop_on_sigterm() if verify else contextlib.nullcontext():
        try:
            for index, (result, config) in enumerate(zip(tree.results, tree.configs)):
                if verify and result.changed:
                    verdict = _verify(
                        result, config, options.migrate, args, err, index, len(tree.results)
                    )
                    result = verdict.result
                    if args.diff:  # the diffs alone on stdout; what was verified, on stderr
                        err.write(verdict.text())
                    else:
                        reports.append(verdict.text())
                    if not verdict.verified:
                        totals.files += 1
                        totals.unverified += 1
                        continue  # not written, not shown as a diff: the verdict says why
                report = handle_result(result, args, out, err, totals)
                if report:
                    reports.append(report)
        except KeyboardInterrupt:
            out.flush()
            print("distlint migrate: interrupted; nothing further written", file=err)
            return EXIT_INTERRUPTED
    if not args.diff:
        for text in reports:
            out.write(text)
    print(_summary(totals, args), file=err)
    out.flush()
    if usage_error:
        return EXIT_USAGE
    if totals.errors or totals.unverified or (args.check and totals.changed):
        return EXIT_CHANGES_OR_ERRORS
    return EXIT_OK


def _verify(
    result: MigrationResult,
    config: Config,
    options: MigrateOptions,
    args: argparse.Namespace,
    err: TextIO,
    index: int,
    count: int,
) -> FileVerdict:
    from distlint.codemods.verify import Verifier

    def progress(text: str) -> None:
        print(f"verify: file {index + 1} of {count}: {result.path}: {text}", file=err, flush=True)

    tty = getattr(err, "isatty", lambda: False)()
    return Verifier(
        result.path,
        result.original,
        config,
        options,
        args.verify_budget,
        progress if tty else None,
    ).verify(result)


@contextlib.contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """SIGTERM stops like Ctrl-C: the runs' ``finally`` blocks kill their process groups and
    remove the scratch copies before the command exits."""

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def handle_result(
    result: MigrationResult, args: argparse.Namespace, out: TextIO, err: TextIO, totals: _Totals
) -> str | None:
    """What the mode (dry run, ``--diff``, ``--check``, ``--write``) does with one file's
    migration: print its error or diff, or write it; count it in ``totals``. Returns the file's
    report text (printed after every diff), ``None`` when there is none."""
    from distlint.safe_write import WriteError, write_python_atomically

    totals.files += 1
    if result.error is not None:
        totals.errors += 1
        print(result.error, file=err)
        return None
    report = None
    if result.report.classes:
        totals.moved += result.report.moved_count if result.changed else 0
        totals.reused += result.report.reused_count if result.changed else 0
        totals.left += result.report.left_count
        report = result.report.text()
    if not result.changed:
        return report
    totals.changed += 1
    if args.write:
        try:
            write_python_atomically(result.path, result.migrated)  # type: ignore[arg-type]
        except WriteError as exc:
            totals.errors += 1
            totals.changed -= 1
            print(str(exc), file=err)
            return report
    elif not args.check:
        out.write(result.diff())
    return report


def _summary(totals: _Totals, args: argparse.Namespace) -> str:
    verb = "migrated" if args.write else "would migrate"
    on_reused = f", {totals.reused} on reused workers" if totals.reused else ""
    tests = (
        f"{totals.moved} test{'s' if totals.moved != 1 else ''} moved{on_reused}, "
        f"{totals.left} left in place"
    )
    errors = (
        f", {totals.errors} file{'s' if totals.errors != 1 else ''} with errors"
        if totals.errors
        else ""
    )
    return (
        f"distlint migrate: {verb} {totals.changed} of {totals.files} file{'s' if totals.files != 1 else ''} "
        f"({tests}){errors}"
    )

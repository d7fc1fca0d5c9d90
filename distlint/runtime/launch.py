"""``run_tests()``: the ``if __name__ == "__main__"`` entry point of a test file.

* ``python test_x.py [-v] [-k PATTERN] [Class.test_name ...]``: unittest's own
  command line; continuous classes spawn their worker pools.
* ``torchrun --nproc-per-node N test_x.py [...]``: every process is one rank and
  nothing is spawned; ranks agree on each test's outcome, rank 0 prints the
  report (other ranks only a one-line summary when it is a failure), and every
  rank exits non-zero if any test failed.
* per-test classes (torch's ``MultiProcessTestCase`` and its subclasses) start
  their ranks from the preloaded fork server (:mod:`fast_start`) unless
  ``DISTLINT_FAST_START=0``;
* ``--junit-xml PATH`` (or ``$DISTLINT_JUNIT_XML``): also write a JUnit XML
  report (see :mod:`junit_report`); under torchrun rank 0 writes it, or every
  rank its own when PATH contains ``{rank}``.
"""

from __future__ import annotations

import io
import os
import sys
import time
import types
import unittest
from collections.abc import Sequence
from typing import NoReturn

from . import pool_registry
from .role import Role, current_role


def _runner_class(stream, result_class):
    class Runner(unittest.TextTestRunner):
        def __init__(self, **kwargs):
            kwargs["stream"] = stream
            kwargs["resultclass"] = result_class
            super().__init__(**kwargs)

    return Runner


def run_tests(
    argv: Sequence[str] | None = None,
    module: str | types.ModuleType = "__main__",
    junit_xml: str | None = None,
) -> NoReturn:
    """Run the module's tests and exit: 0 when all passed (skips allowed), 1 otherwise.

    ``--junit-xml PATH`` in argv, else ``junit_xml``, else $DISTLINT_JUNIT_XML
    names a JUnit XML report to write as well.
    """
    # Imported here, not at the top: `import distlint.runtime` stays cheap (xml.etree and all).
    from . import junit_report

    argv = list(sys.argv if argv is None else argv)
    try:
        argv, option_path = junit_report.take_option(argv)
    except ValueError as exc:
        sys.stderr.write(f"{argv[0] if argv else 'run_tests'}: error: {exc}\n")
        sys.exit(2)  # a usage error, as unittest's own options give
    inline = current_role() is Role.INLINE
    rank = _rank() if inline else None
    report_path = junit_report.path_for_rank(
        option_path or junit_xml or os.environ.get(junit_report.JUNIT_XML_ENV), rank
    )
    quiet = inline and rank != 0
    stream = io.StringIO() if quiet else sys.stderr
    started = time.perf_counter()
    if not inline:
        _prepare_forkserver()
    try:
        runner = _runner_class(stream, junit_report.RecordingTextResult)
        program = unittest.main(module=module, argv=argv, exit=False, testRunner=runner)
        success = program.result.wasSuccessful()
    finally:
        if inline:
            from . import inline as inline_mode

            inline_mode.finish()
        pool_registry.shutdown_all()
    if report_path is not None:
        suite_name = os.path.splitext(os.path.basename(argv[0]))[0] if argv and argv[0] else module
        try:
            junit_report.write(
                report_path,
                program.result.cases.values(),
                suite_name,
                time.perf_counter() - started,
            )
        except OSError as exc:
            sys.stderr.write(
                f"distlint.runtime: {report_path}: JUnit XML report not written: {exc}\n"
            )
            success = False
    if quiet and not success:
        # Outcomes are agreed between ranks, so rank 0's report covers this one;
        # leave a trace of which rank exited non-zero and why.
        summary = [line for line in stream.getvalue().splitlines() if line.startswith("FAILED")]
        sys.stderr.write(f"[rank {rank}] {summary[-1] if summary else 'FAILED'}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(0 if success else 1)


def _prepare_forkserver() -> None:
    """Fast start for per-test classes; the fork server (started early or now) preloads ``__main__``."""
    from . import fast_start, forkserver

    fast_start.enable_for_script()
    try:
        forkserver.publish()
    except OSError as exc:  # the first process start publishes again, or falls back to spawn
        sys.stderr.write(
            f"distlint.runtime: could not tell the fork server what to preload: {exc}\n"
        )


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))

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
  rank its own when PATH contains ``{rank}``;
* torch's ``run_tests`` flags, as PyTorch's ``test/run_test.py`` passes them
  (:mod:`torch_cli`).
"""

from __future__ import annotations

import importlib
import io
import os
import sys
import time
import types
import unittest
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

from . import pool_registry
from .role import Role, current_role

if TYPE_CHECKING:
    from . import torch_cli


def _runner_class(
    stream: TextIO, result_class: type[unittest.TextTestResult]
) -> type[unittest.TextTestRunner]:
    class Runner(unittest.TextTestRunner):
        def __init__(self, **kwargs: Any) -> None:
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
    names a JUnit XML report to write as well. torch's ``run_tests`` flags, as PyTorch's
    ``test/run_test.py`` passes them, are taken too (:mod:`torch_cli`): ``--save-xml [DIR]``
    writes the report where torch's would, ``--import-slow-tests`` /
    ``--import-disabled-tests`` / ``--rerun-disabled-tests`` feed torch's disabled/slow check,
    ``--use-pytest`` hands the file to pytest; the flags that do not apply are ignored with a
    one-line note.
    """
    # Imported here, not at the top: `import distlint.runtime` stays cheap (xml.etree and all).
    from . import junit_report, torch_cli

    argv = list(sys.argv if argv is None else argv)
    program_name = argv[0] if argv else "run_tests"
    try:
        argv, option_path = junit_report.take_option(argv)
        flags = torch_cli.parse(argv)
    except ValueError as exc:
        sys.stderr.write(f"{program_name}: error: {exc}\n")
        sys.exit(2)  # a usage error, as unittest's own options give
    for note in flags.notes + torch_cli.load_test_lists(flags):
        sys.stderr.write(f"distlint.runtime: {note}\n")
    if flags.accept:
        os.environ["EXPECTTEST_ACCEPT"] = "1"  # read by expecttest where the tests run (ranks)
    script = flags.argv[0] if flags.argv else ""
    stamp = time.strftime("%Y%m%d%H%M%S")
    if flags.use_pytest:
        _run_pytest(flags, torch_cli.report_path(flags, script, pytest=True, stamp=stamp))
    if flags.discover_tests:
        found = importlib.import_module(module) if isinstance(module, str) else module
        for test in _flatten(unittest.defaultTestLoader.loadTestsFromModule(found)):
            print(".".join(test.id().split(".")[-2:]))  # torch's get_test_names
        sys.exit(0)
    inline = current_role() is Role.INLINE
    rank = _rank() if inline else None
    report_paths = [
        path
        for path in (
            junit_report.path_for_rank(
                option_path or junit_xml or os.environ.get(junit_report.JUNIT_XML_ENV), rank
            ),
            junit_report.path_for_rank(
                torch_cli.report_path(flags, script, pytest=False, stamp=stamp), rank
            ),
        )
        if path is not None
    ]
    unittest_argv = flags.argv + (["--locals"] if flags.showlocals else [])
    quiet = inline and rank != 0
    stream = io.StringIO() if quiet else sys.stderr
    started = time.perf_counter()
    if not inline:
        _prepare_forkserver()
    try:
        runner = _runner_class(stream, junit_report.RecordingTextResult)
        for _ in range(max(1, flags.repeat)):  # --repeat N: as torch, stop at a failed run
            program = unittest.main(
                module=module,
                argv=unittest_argv,
                exit=False,
                testRunner=runner,
                testLoader=_loader(flags, script),
            )
            success = program.result.wasSuccessful()
            if not success:
                break
    finally:
        if inline:
            from . import inline as inline_mode

            inline_mode.finish()
        pool_registry.shutdown_all()
    if script:
        suite_name = os.path.splitext(os.path.basename(script))[0]
    else:
        suite_name = module if isinstance(module, str) else module.__name__
    for report_path in report_paths:
        try:
            junit_report.write(
                report_path,
                cast("junit_report.RecordingTextResult", program.result).cases.values(),
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
        output = cast(io.StringIO, stream).getvalue()  # quiet: the StringIO above
        summary = [line for line in output.splitlines() if line.startswith("FAILED")]
        sys.stderr.write(f"[rank {rank}] {summary[-1] if summary else 'FAILED'}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(0 if success else 1)


def _run_pytest(flags: torch_cli.TorchFlags, junit_xml: str | None) -> NoReturn:
    """--use-pytest: what torch's run_tests does, pytest on this file (see torch_cli.pytest_args)."""
    import pytest

    from . import torch_cli

    if junit_xml is not None:
        os.makedirs(os.path.dirname(junit_xml), exist_ok=True)
    os.environ["NO_COLOR"] = "1"
    try:
        code = pytest.main(args=torch_cli.pytest_args(flags, junit_xml))
    finally:
        pool_registry.shutdown_all()
    sys.stdout.flush()
    sys.stderr.flush()
    # As torch: 5 (nothing collected) is a pass; some shards of a file select no test.
    sys.exit(0 if code == 5 else int(code))


def _flatten(suite: unittest.TestSuite) -> list[unittest.TestCase]:
    tests: list[unittest.TestCase] = []
    for item in suite:
        tests.extend(_flatten(item) if isinstance(item, unittest.TestSuite) else [item])
    return tests


def _loader(flags: torch_cli.TorchFlags, script: str) -> unittest.TestLoader:
    """unittest's loader; under ``--num-shards N`` one that keeps this shard's tests only."""
    from . import torch_cli

    if flags.num_shards <= 1:
        return unittest.TestLoader()

    class ShardLoader(unittest.TestLoader):
        def _shard(self, suite: unittest.TestSuite) -> unittest.TestSuite:
            return self.suiteClass(
                [test for test in _flatten(suite) if torch_cli.in_shard(test.id(), script, flags)]
            )

        def loadTestsFromModule(self, *args: Any, **kwargs: Any) -> unittest.TestSuite:  # noqa: N802 - unittest's name
            return self._shard(super().loadTestsFromModule(*args, **kwargs))

        def loadTestsFromNames(self, *args: Any, **kwargs: Any) -> unittest.TestSuite:  # noqa: N802
            return self._shard(super().loadTestsFromNames(*args, **kwargs))

    return ShardLoader()


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

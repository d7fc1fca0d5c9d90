"""Run a test file through its own ``__main__`` block and record every test outcome as JSON.

    python tests/outcome_recorder.py [--fast-start] REPORT FILE [ARGS...]

runs ``FILE`` exactly as ``python FILE ARGS...`` would (``runpy`` as ``__main__``, argv
set, so its main block and whatever ``run_tests`` it imports decide how the tests run),
and appends one JSON line per outcome of this process to ``REPORT``:
``{"id": "<module>.<Class>.<test>", "outcome": "passed" | "skipped" | "failed" | "error"}``.

Why not read the run's output: any library prints into stdout/stderr (torch warns there
when numpy is missing), so tests and benchmarks that judge another process's results read
this report instead. Why not ``pytest --junit-xml``: it changes how the file runs (class
order, for one: torch 2.13's ``MultiProcContinuousTest`` subclasses reuse their base
class's torn-down workers when the base runs first, pytorch/pytorch#191745), and torch's
own XML reports need ``xmlrunner`` and only cover torch's ``run_tests``.

The hook wraps ``unittest.TestResult``'s outcome methods, so it sees every runner built
on unittest (torch's and distlint's ``run_tests``, ``unittest.main``); only this process
records (forked workers inherit the hook but not the pid). Lines are written as each
test ends, so a run that exits early still leaves what it reported.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import unittest
from collections import defaultdict
from pathlib import Path

#: First argument: run the file's per-test classes with fast start (see fast_start_when_tests_start).
FAST_START_FLAG = "--fast-start"
#: The worst outcome wins when a test is reported several times (a failed subtest, then the test).
SEVERITY = ("error", "failed", "skipped", "passed")


def read_outcomes(report: Path) -> dict[str, str]:
    """``Class.test`` -> its worst recorded outcome (nothing recorded: an empty dict)."""
    seen: dict[str, list[str]] = defaultdict(list)
    if report.exists():
        for line in report.read_text().splitlines():
            record = json.loads(line)
            *_, cls, test = record["id"].split(".")
            seen[f"{cls}.{test}"].append(record["outcome"])
    return {
        test_id: next(o for o in SEVERITY if o in outcomes) for test_id, outcomes in seen.items()
    }


def install(report: Path) -> None:
    """Record this process's test outcomes into ``report``."""
    owner = os.getpid()

    def record(test: unittest.TestCase, outcome: str) -> None:
        if os.getpid() == owner:
            with open(report, "a") as handle:
                handle.write(json.dumps({"id": test.id(), "outcome": outcome}) + "\n")

    def wrap(name: str, outcome: str) -> None:
        original = getattr(unittest.TestResult, name)

        def method(self, test, *args):
            record(test, outcome)
            return original(self, test, *args)

        setattr(unittest.TestResult, name, method)

    def add_subtest(self, test, subtest, err):
        if err is not None:  # a passing subtest is not an outcome of the test
            record(test, "failed")
        return original_subtest(self, test, subtest, err)

    original_subtest = unittest.TestResult.addSubTest
    unittest.TestResult.addSubTest = add_subtest
    for name, outcome in (
        ("addSuccess", "passed"),
        ("addSkip", "skipped"),
        ("addFailure", "failed"),
        ("addError", "error"),
        ("addExpectedFailure", "passed"),
        ("addUnexpectedSuccess", "failed"),
    ):
        wrap(name, outcome)


def fast_start_when_tests_start() -> None:
    """Start per-test ranks from distlint's fork server (``distlint.runtime`` fast start) in a
    file whose own runner is torch's: only the start method changes (torch's ``_run``, fresh
    ranks and a fresh PG per test), so the original's outcomes are the same, in a tenth of the time.
    Installed when the run starts, once the file has imported torch's test helpers."""
    original = unittest.TestResult.startTestRun

    def start_test_run(self):
        from distlint.runtime import fast_start, forkserver

        if fast_start.enable_for_script():
            try:
                forkserver.publish()
            except OSError:  # the first rank publishes again, or falls back to spawn
                pass
        return original(self)

    unittest.TestResult.startTestRun = start_test_run


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == [FAST_START_FLAG]:
        args = args[1:]
        fast_start_when_tests_start()
    report, script, *args = args
    install(Path(report).resolve())
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python FILE` sets it
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()

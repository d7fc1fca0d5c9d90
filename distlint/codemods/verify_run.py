"""One pytest run of a test file for ``distlint migrate --verify``: its outcomes, per test id.

The file runs as a scratch copy written *beside* the user's file (``_distlint_verify_<pid>_<name>``),
so that everything its imports need resolves as for the file itself (sibling modules, the
package, ``conftest.py``, the project's pytest configuration); the user's file is only read.
Outcomes come from the JUnit XML report pytest writes (never from the text a run prints: any
library writes there). Per-test classes start their ranks with distlint's fast start
(``--distlint-fast-start``: torch's own per-test ``_run``, only the start method differs), on
both sides of the comparison.

Every run is its own session (``start_new_session``), so that a time-out, Ctrl-C or SIGTERM
kills pytest *and* every rank, fork server and worker it started (``killpg``), and the scratch
copy and the run's folder (its report, and the ``TMPDIR`` of its processes) are removed in
``finally`` blocks: nothing is left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Scratch copies are named ``<prefix><pid>_<file name>`` (a leftover is easy to find).
SCRATCH_PREFIX = "_distlint_verify_"
#: The worst outcome wins when pytest reports a test twice (a failure, then a teardown error).
SEVERITY = ("error", "failed", "skipped", "passed")
#: A test the other side ran but this one did not collect.
MISSING = "missing"
#: Environment that changes what a run does, not what it tests: under ``CI=true`` torch's
#: ``run_tests`` machinery switches to CI-only filtering and reports.
_DROPPED_ENV = ("CI", "GITHUB_ACTIONS", "PYTORCH_TEST_CUDA_MEM_LEAK_CHECK")


class BudgetExceeded(Exception):
    """The file's time budget ran out during a run (the run was killed)."""


class RunHung(Exception):
    """A run passed its own time limit (a hang, by the original's measure) and was killed."""

    def __init__(
        self, label: str, seconds: float, test_id: str | None, first_of_class: bool
    ) -> None:
        super().__init__(label)
        self.label, self.seconds = label, seconds
        #: ``Class.test`` of the test that had started and not ended (None: before any test).
        self.test_id = test_id
        #: No other test of its class had started in the run.
        self.first_of_class = first_of_class


@dataclass
class RunResult:
    """A run's outcomes, ``Class.test`` -> ``passed``/``skipped``/``failed``/``error``, in the
    order the tests ran."""

    outcomes: dict[str, str]
    seconds: float
    returncode: int
    output_tail: str = ""
    #: ``Class.test`` ids in the order pytest reported them.
    order: list[str] = field(default_factory=list)


def read_junit(report: Path) -> tuple[dict[str, str], list[str]]:
    """``Class.test`` -> worst outcome, and the ids in report order, from pytest's JUnit XML."""
    cases = read_junit_cases(report)
    return {test_id: outcome for _, test_id, outcome in cases}, [t for _, t, _ in cases]


def read_junit_cases(report: Path) -> list[tuple[str, str, str]]:
    """``(module, Class.test, worst outcome)`` of each test in pytest's JUnit XML, in report
    order (a report of several files: ``module`` tells their classes apart)."""
    seen: dict[tuple[str, str], list[str]] = {}
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return []
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        if not classname or not name:  # a collection error of the module
            continue
        module, _, cls = classname.rpartition(".")
        tags = {child.tag for child in case}
        outcome = (
            "error"
            if "error" in tags
            else "failed"
            if "failure" in tags
            else "skipped"
            if "skipped" in tags
            else "passed"
        )
        seen.setdefault((module, f"{cls}.{name}"), []).append(outcome)
    return [
        (module, test_id, next(o for o in SEVERITY if o in found))
        for (module, test_id), found in seen.items()
    ]


def _last_started(log: Path) -> tuple[str | None, bool]:
    """``Class.test`` of the last test a run's started log names, and whether it was the first
    of its class to start."""
    import json

    try:
        started = [json.loads(line)["nodeid"] for line in log.read_text().splitlines()]
    except (OSError, ValueError, KeyError):
        return None, False
    ids = [".".join(n.split("::")[-2:]) for n in started if n.count("::") >= 2]
    if not ids:
        return None, False
    cls = ids[-1].split(".", 1)[0]
    return ids[-1], not any(i.split(".", 1)[0] == cls for i in ids[:-1])


def scratch_path(path: Path) -> Path:
    return path.with_name(f"{SCRATCH_PREFIX}{os.getpid()}_{path.name}")


def kill_session(process: subprocess.Popen) -> None:
    """Kill ``process``'s session: pytest and every process it started (ranks, fork server)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be refused
        pass


class Runner:
    """Runs versions of one file under pytest until ``deadline`` (``time.monotonic()``)."""

    def __init__(
        self,
        path: Path,
        deadline: float,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.deadline = deadline
        self.progress = progress or (lambda text: None)

    def run(
        self,
        source: bytes,
        label: str,
        reverse: bool = False,
        select: Sequence[str] = (),
        limit_s: float | None = None,
    ) -> RunResult:
        """Run ``source`` as the file (only the ``Class.test`` ids of ``select``, in that order,
        when given); raises BudgetExceeded when the deadline passes first, RunHung when the run
        takes longer than ``limit_s``."""
        label += ", reversed" if reverse else ""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceeded(label)
        self.progress(label)
        scratch = scratch_path(self.path)
        with tempfile.TemporaryDirectory(prefix="distlint-verify-") as folder:
            report, log = Path(folder) / "report.xml", Path(folder) / "output.txt"
            started_log = Path(folder) / "started.jsonl"
            targets = [f"{scratch}::{t.replace('.', '::', 1)}" for t in select] or [str(scratch)]
            command = [
                sys.executable,
                "-m",
                "pytest",
                *targets,
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:randomly",  # the order is ours to choose (file order, reversed)
                f"--junit-xml={report}",
                f"--distlint-started-log={started_log}",
                "--distlint-fast-start",
                *(["--distlint-reverse-order"] if reverse else []),
            ]
            env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
            env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ entry for the scratch copy
            # What the run's processes put in the temporary directory (torch's per-test store
            # files, multiprocessing's and the fork server's folders, which a killed run cannot
            # remove itself) goes with the report's folder.
            env["TMPDIR"] = str(Path(folder) / "t")
            os.mkdir(env["TMPDIR"])
            started = time.monotonic()
            try:
                scratch.write_bytes(source)
                with open(log, "wb") as output:
                    process = subprocess.Popen(
                        command,
                        stdin=subprocess.DEVNULL,
                        stdout=output,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                    hung = limit_s is not None and limit_s < left
                    try:
                        process.wait(timeout=limit_s if hung else left)
                    except subprocess.TimeoutExpired:
                        if not hung:
                            raise BudgetExceeded(label) from None
                        seconds = time.monotonic() - started
                        raise RunHung(label, seconds, *_last_started(started_log)) from None
                    finally:
                        kill_session(process)  # also the ranks of a run that exited
            finally:
                scratch.unlink(missing_ok=True)
            seconds = time.monotonic() - started
            outcomes, order = read_junit(report)
            tail = log.read_bytes()[-3000:].decode(errors="replace")
        return RunResult(outcomes, seconds, process.returncode, tail, order)

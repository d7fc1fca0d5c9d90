"""Helpers for the runtime tests: load case modules, run them, read the process table."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import time
import unittest
import uuid
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
REPO = HERE.parent.parent


# ---- in-process runs of case classes ---------------------------------------


def load_case(name: str):
    """Import tests/runtime/cases/<name>.py under a name only this file can load."""
    module_name = f"distlint_runtime_case_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, CASES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class CaseOutcome:
    kind: str  # pass / fail / error / skip / expected_failure / unexpected_success
    message: str
    seconds: float


class RecordingResult(unittest.TestResult):
    def __init__(self) -> None:
        super().__init__()
        self.outcomes: Dict[str, CaseOutcome] = {}
        self._started: Dict[str, float] = {}

    def _name(self, test) -> str:
        name = getattr(test, "_testMethodName", None)
        if name is None:  # class fixture errors come as _ErrorHolder
            return str(test)
        return f"{type(test).__name__}.{name}"

    def startTest(self, test):
        super().startTest(test)
        self._started[self._name(test)] = time.monotonic()

    def _put(self, test, kind: str, message: str) -> None:
        name = self._name(test)
        seconds = time.monotonic() - self._started.get(name, time.monotonic())
        self.outcomes[name] = CaseOutcome(kind, message, seconds)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._put(test, "pass", "")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._put(test, "fail", str(err[1]))

    def addError(self, test, err):
        super().addError(test, err)
        self._put(test, "error", str(err[1]))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._put(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._put(test, "expected_failure", str(err[1]))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._put(test, "unexpected_success", "")


def run_classes(*classes) -> Dict[str, CaseOutcome]:
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(cls) for cls in classes)
    result = RecordingResult()
    suite.run(result)
    return result.outcomes


# ---- subprocess runs ---------------------------------------------------------


def subprocess_env(tmp_path: Path, **extra: str) -> Dict[str, str]:
    """Environment for a child python: distlint importable, its own TMPDIR, a token to find its processes."""
    env = dict(os.environ)
    env.pop("DISTLINT_TEST_TIMEOUT", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmpdir)
    env["DISTLINT_TEST_TOKEN"] = uuid.uuid4().hex
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run_python(args: List[str], env: Dict[str, str], timeout: float = 120, cwd: Optional[Path] = None):
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=str(cwd or REPO),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ---- the process table (no psutil: /proc) ------------------------------------


def processes_with_token(token: str) -> List[int]:
    """Pids of live processes whose environment carries ``DISTLINT_TEST_TOKEN=token``.

    The token is inherited by every descendant (workers, fork server, resource
    tracker) and survives re-parenting, unlike the parent/child relation.
    """
    needle = f"DISTLINT_TEST_TOKEN={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state == b"Z":
            continue  # exited, waiting to be reaped: not running anything
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def wait_until_gone(token: str, timeout: float = 15.0) -> List[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = processes_with_token(token)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def pool_dirs(tmpdir: Path) -> List[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("distlint-pool-"))

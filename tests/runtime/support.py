"""Helpers for the runtime tests: load case modules, run them, read their reports and the process table."""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

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
        self.outcomes: dict[str, CaseOutcome] = {}
        self._started: dict[str, float] = {}

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


def run_classes(*classes) -> dict[str, CaseOutcome]:
    suite = unittest.TestSuite(
        unittest.defaultTestLoader.loadTestsFromTestCase(cls) for cls in classes
    )
    result = RecordingResult()
    suite.run(result)
    return result.outcomes


# ---- subprocess runs ---------------------------------------------------------


#: Longest TMPDIR given to a child: Python 3.11 puts the fork server's Unix socket at
#: $TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX, and AF_UNIX paths end at ~107 bytes.
SHORT_TMPDIR_CHARS = 60


def short_tmpdir(preferred: Path) -> Path:
    """``preferred`` (created), or a fresh short folder under /tmp when ``preferred`` is too long
    for the fork server's socket path (pytest's tmp_path under xdist is): a child given a long
    TMPDIR falls back to spawn, correctly, but the fast-start tests are about forking."""
    if len(str(preferred)) <= SHORT_TMPDIR_CHARS:
        preferred.mkdir(exist_ok=True)
        return preferred
    short = Path(tempfile.mkdtemp(prefix="dlt-", dir="/tmp" if os.path.isdir("/tmp") else None))
    atexit.register(shutil.rmtree, short, ignore_errors=True)
    return short


def subprocess_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Environment for a child python: distlint importable, its own TMPDIR, a token to find its processes."""
    env = dict(os.environ)
    env.pop("DISTLINT_TEST_TIMEOUT", None)
    # In CI ($CI set) run_tests() writes torch's --save-xml report by default, as torch's does:
    # a child writes only the reports its test asks for.
    env.pop("CI", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env["TMPDIR"] = str(short_tmpdir(tmp_path / "tmp"))
    env["DISTLINT_TEST_TOKEN"] = uuid.uuid4().hex
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test sends Ctrl-C: SIGINT's default disposition, as in a
    user's shell. A child inherits an *ignored* SIGINT, and Python then installs no
    KeyboardInterrupt handler: a suite started as a background job of a non-interactive shell
    (``bash -c '... &'``, as CI scripts may) has SIGINT ignored, and pytest and its xdist workers
    pass that on to every child, which would then sleep through the signal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_python(args: list[str], env: dict[str, str], timeout: float = 120, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        cwd=str(cwd or REPO),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@dataclasses.dataclass(frozen=True)
class ReportedCase:
    outcome: str  # passed / failure / error / skipped, as JUnit XML names them
    message: str
    text: str


def read_junit(path: Path) -> dict[str, ReportedCase]:
    """A JUnit XML report (run_tests --junit-xml, pytest --junit-xml): "Class.test" -> outcome.

    Class-level fixture problems appear as "Class.setUpClass" / "Class.tearDownClass".
    """
    cases: dict[str, ReportedCase] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        key = f"{case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}"
        assert key not in cases, f"{key} reported twice in {path}"
        problems = [child for child in case if child.tag in ("failure", "error", "skipped")]
        assert len(problems) <= 1, f"{key} has {len(problems)} outcomes in {path}"
        if problems:
            cases[key] = ReportedCase(
                problems[0].tag, problems[0].get("message", ""), problems[0].text or ""
            )
        else:
            cases[key] = ReportedCase("passed", "", "")
    return cases


def outcomes_of(report: dict[str, ReportedCase]) -> dict[str, str]:
    """A read_junit() report as "Class.test" -> outcome only."""
    return {name: case.outcome for name, case in report.items()}


# ---- the process table (no psutil: /proc) ------------------------------------


def processes_with_token(token: str) -> list[int]:
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
        except OSError:
            continue
        if needle in environ.split(b"\0") and alive(int(entry)):
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (exited, waiting to be reaped: not running anything)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def wait_until_gone(token: str, timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = processes_with_token(token)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


# The folders a run makes in $TMPDIR: a pool's rendezvous folder, the fork server's manifest folder.
RUN_DIR_PREFIXES = ("distlint-pool-", "distlint-forkserver-")


def pool_dirs(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith(RUN_DIR_PREFIXES))


def assert_run_left_nothing(env: dict[str, str]) -> None:
    """After a subprocess run (env from subprocess_env): none of its processes alive, no folder of it left."""
    assert wait_until_gone(env["DISTLINT_TEST_TOKEN"]) == [], "processes of the run are still alive"
    assert pool_dirs(Path(env["TMPDIR"])) == [], (
        "rendezvous or fork-server folders were left behind"
    )


def still_alive(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Those of ``pids`` still running after up to ``timeout`` s (a hang guard, not a speed bound)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


# ---- leak checks for in-process runs -------------------------------------------


@dataclasses.dataclass
class RunScope:
    """What an in-process run started: processes carrying ``token``, pool folders under ``tmpdir``."""

    token: str
    tmpdir: Path

    def assert_ranks_gone(self, ranks: dict[int, int], world_size: int = 2) -> None:
        """Every rank of a test (rank -> pid, from the case log) has exited."""
        # Guard: an empty or partial log would make "none of them is alive" pass without looking.
        assert sorted(ranks) == list(range(world_size)), f"the case log has ranks {sorted(ranks)}"
        assert still_alive(list(ranks.values())) == [], f"rank processes {ranks} are still alive"

    def assert_nothing_left(self, timeout: float = 15.0) -> None:
        """Close the pools still serving, then: no process of this run alive, no rendezvous folder."""
        from distlint.runtime import pool_registry

        pool_registry.shutdown_all()
        left = wait_until_gone(self.token, timeout)
        assert left == [], f"processes of the run are still alive: {left}"
        assert pool_dirs(self.tmpdir) == [], "rendezvous directories were left behind"

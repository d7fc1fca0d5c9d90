"""Whole-process runs: run_tests() under python and torchrun, pytest and unittest runners,
and what is left in the process table after a suite ends or is signalled mid-test.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .cases.caselog import read
from .support import CASES, REPO, pool_dirs, processes_with_token, run_python, subprocess_env, wait_until_gone

CLI_CASE = str(CASES / "cli_case.py")
EXPECTED = {
    "CliCase.test_fails_on_rank1": "FAIL",
    "CliCase.test_passes_a": "ok",
    "CliCase.test_passes_b": "ok",
    "CliCase.test_skips_on_rank0": "skipped 'rank 0 skips'",
    "CliCase.test_z_after_failure": "ok",
    "CliOther.test_other_passes": "ok",
    "CliOther.test_world_size": "ok",
}
VERBOSE_LINE = re.compile(
    r"^(test_\w+) \([\w.]*?(\w+)\.test_\w+\) \.\.\. (?:\[rank [^\n]*\n)*(ok|FAIL|ERROR|skipped '[^']*')", re.M
)


def outcomes_of(output: str) -> dict:
    return {f"{cls}.{test}": outcome for test, cls, outcome in VERBOSE_LINE.findall(output)}


def assert_nothing_left(env) -> None:
    assert wait_until_gone(env["DISTLINT_TEST_TOKEN"]) == [], "processes of the run are still alive"
    assert pool_dirs(Path(env["TMPDIR"])) == [], "rendezvous directories were left behind"


def run(name, args, tmp_path, cwd=REPO):
    env = subprocess_env(tmp_path, DISTLINT_CASE_LOG=str(tmp_path / f"{name}.log"), OMP_NUM_THREADS="1")
    proc = run_python(args, env, timeout=300, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr, env


def test_python_file_runs_the_suite_and_leaves_no_process_or_file(tmp_path):
    returncode, output, env = run("file", [CLI_CASE, "-v"], tmp_path)
    assert outcomes_of(output) == EXPECTED, output
    assert returncode == 1, output
    assert "rank 1 expected zeros" in output
    assert_nothing_left(env)


def test_python_file_selects_tests_with_k_and_names(tmp_path):
    # A class name and -k together: only CliOther's tests, and of those only "passes".
    returncode, output, env = run("selected", [CLI_CASE, "-v", "-k", "passes", "CliOther"], tmp_path)
    assert outcomes_of(output) == {"CliOther.test_other_passes": "ok"}, output
    assert returncode == 0, output
    assert_nothing_left(env)


def test_torchrun_runs_each_rank_in_its_launched_process_with_the_same_outcomes(tmp_path):
    returncode, output, env = run(
        "torchrun", ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", CLI_CASE, "-v"], tmp_path
    )
    assert outcomes_of(output) == EXPECTED, output  # rank 0's report
    assert returncode != 0
    assert "rank 1 failed:" in output and "rank 1 expected zeros" in output
    assert "[rank 1] FAILED (failures=1, skipped=1)" in output
    # Nothing was spawned: every test ran in the two processes torchrun launched.
    records = read(env["DISTLINT_CASE_LOG"])
    assert {e["rank"] for e in records} == {0, 1}
    assert len({e["pid"] for e in records}) == 2
    assert_nothing_left(env)


def test_classes_run_under_python_m_pytest_and_python_m_unittest(tmp_path):
    pytest_args = ["-m", "pytest", CLI_CASE, "-q", "-rs", "-p", "no:cacheprovider", "--noconftest"]
    returncode, output, env = run("pytest", pytest_args, tmp_path, CASES)
    assert re.search(r"1 failed, 5 passed, 1 skipped", output.strip().splitlines()[-1]), output
    assert re.search(r"SKIPPED \[1\] cli_case\.py:\d+: rank 0 skips", output), output
    assert returncode == 1
    assert_nothing_left(env)
    returncode, output, env = run("unittest", ["-m", "unittest", "-v", "cli_case"], tmp_path, CASES)
    assert outcomes_of(output) == EXPECTED, output
    assert returncode == 1
    assert_nothing_left(env)


def _start_sleeper(tmp_path, runner_args):
    marker = tmp_path / "marker"
    env = subprocess_env(tmp_path, DISTLINT_CASE_MARKER=str(marker))
    proc = subprocess.Popen(
        [sys.executable, *runner_args],
        env=env,
        cwd=str(CASES),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 90
    while not all(os.path.exists(f"{marker}.{rank}") for rank in (0, 1)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the sleeping test never started:\n{proc.communicate()[0]}")
        time.sleep(0.05)
    workers = [int(open(f"{marker}.{rank}").read()) for rank in (0, 1)]
    running = processes_with_token(env["DISTLINT_TEST_TOKEN"])
    # The check below can fail: the token finds the dispatcher and both ranks now.
    assert proc.pid in running and set(workers) <= set(running)
    assert pool_dirs(Path(env["TMPDIR"])), "expected a live rendezvous directory"
    return proc, env


@pytest.mark.parametrize(
    "signum, runner_args",
    [
        (signal.SIGTERM, ["-m", "pytest", "signal_case.py", "-q", "-p", "no:cacheprovider", "--noconftest"]),
        (signal.SIGINT, ["signal_case.py"]),
        # No handler runs on SIGKILL: the ranks notice on their own and clean up.
        (signal.SIGKILL, ["signal_case.py"]),
    ],
    ids=["SIGTERM-under-pytest", "SIGINT-under-run_tests", "SIGKILL-under-run_tests"],
)
def test_a_signal_mid_test_leaves_no_worker_and_no_rendezvous_file(tmp_path, signum, runner_args):
    proc, env = _start_sleeper(tmp_path, runner_args)
    proc.send_signal(signum)
    try:
        output = proc.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the dispatcher did not exit within 30 s of the signal")
    assert proc.returncode != 0, output
    if signum == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM  # still dies "of SIGTERM" for its parent
    assert_nothing_left(env)

"""Whole-process runs: run_tests() under python and torchrun, pytest and unittest runners,
and what is left in the process table after a suite ends or is signalled mid-test.

Outcomes are read from each run's JUnit XML report, never from what it printed:
torch without numpy, for one, prints a warning into that text.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .cases.caselog import read
from .support import (
    CASES,
    REPO,
    assert_run_left_nothing,
    default_sigint,
    outcomes_of,
    pool_dirs,
    processes_with_token,
    read_junit,
    run_python,
    subprocess_env,
)

CLI_CASE = str(CASES / "cli_case.py")
# What every way of running cli_case.py must report ("Class.test" -> JUnit outcome).
EXPECTED = {
    "CliCase.test_fails_on_rank1": "failure",
    "CliCase.test_passes_a": "passed",
    "CliCase.test_passes_b": "passed",
    "CliCase.test_skips_on_rank0": "skipped",
    "CliCase.test_z_after_failure": "passed",
    "CliOther.test_other_passes": "passed",
    "CliOther.test_world_size": "passed",
}


def assert_cli_case_report(report: dict) -> None:
    assert outcomes_of(report) == EXPECTED
    assert "rank 1 expected zeros" in report["CliCase.test_fails_on_rank1"].text
    assert report["CliCase.test_skips_on_rank0"].message == "rank 0 skips"


def run(name, args, tmp_path, cwd=REPO, **extra_env):
    """Run python with ``args``; (exit status, everything it printed: for failure messages only, env)."""
    env = subprocess_env(
        tmp_path, DISTLINT_CASE_LOG=str(tmp_path / f"{name}.log"), OMP_NUM_THREADS="1", **extra_env
    )
    proc = run_python(args, env, timeout=300, cwd=cwd)
    return proc.returncode, proc.stdout + proc.stderr, env


def test_python_file_runs_the_suite_and_leaves_no_process_or_file(tmp_path):
    report = tmp_path / "reports" / "file.xml"  # run_tests creates the folder
    returncode, output, env = run("file", [CLI_CASE, "-v", "--junit-xml", str(report)], tmp_path)
    assert report.exists(), output
    assert_cli_case_report(read_junit(report))
    assert returncode == 1, output
    assert_run_left_nothing(env)


def test_a_pools_ranks_are_forked_with_its_test_module_already_imported(tmp_path):
    """Under plain pytest the first pool starts the fork server: it imports the test class's
    module before forking, so the ranks do not each import it again."""
    from distlint.runtime import start_method

    if start_method.forkserver_unsafe_reason() is not None:
        pytest.skip(f"no fork server here: {start_method.forkserver_unsafe_reason()}")
    probe = str(CASES / "preload_probe.py")
    returncode, output, env = run(
        "preload", ["-m", "pytest", "-q", "-p", "no:cacheprovider", probe], tmp_path
    )
    assert returncode == 0, output
    logged = [json.loads(line) for line in (tmp_path / "preload.log").read_text().splitlines()]
    importers = {entry["imported_in"] for entry in logged if "imported_in" in entry}
    ranks = {entry["rank_pid"] for entry in logged if "rank_pid" in entry}
    assert len(ranks) == 2 and not ranks & importers, logged
    assert len(importers) == 2, logged  # pytest's process and the fork server
    assert_run_left_nothing(env)


def test_python_file_selects_tests_with_k_and_names(tmp_path):
    # A class name and -k together: only CliOther's tests, and of those only "passes".
    # The report path comes from the environment this time.
    report = tmp_path / "selected.xml"
    returncode, output, env = run(
        "selected",
        [CLI_CASE, "-v", "-k", "passes", "CliOther"],
        tmp_path,
        DISTLINT_JUNIT_XML=str(report),
    )
    assert outcomes_of(read_junit(report)) == {"CliOther.test_other_passes": "passed"}, output
    assert returncode == 0, output
    assert_run_left_nothing(env)


def test_torchrun_runs_each_rank_in_its_launched_process_with_the_same_outcomes(tmp_path):
    reports = tmp_path / "report-{rank}.xml"  # every rank writes its own report
    returncode, output, env = run(
        "torchrun",
        [
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            CLI_CASE,
            "-v",
            "--junit-xml",
            str(reports),
        ],
        tmp_path,
    )
    assert returncode != 0
    # The ranks agreed on every outcome: rank 1's report says what rank 0's says.
    for rank in (0, 1):
        report = read_junit(Path(str(reports).replace("{rank}", str(rank))))
        assert_cli_case_report(report)
        assert "rank 1 failed:" in report["CliCase.test_fails_on_rank1"].text
    # Nothing was spawned: every test ran in the two processes torchrun launched.
    records = read(env["DISTLINT_CASE_LOG"])
    assert {e["rank"] for e in records} == {0, 1}
    assert len({e["pid"] for e in records}) == 2
    assert_run_left_nothing(env)


def test_classes_run_under_python_m_pytest_and_python_m_unittest(tmp_path):
    report = tmp_path / "pytest.xml"
    pytest_args = [
        "-m",
        "pytest",
        CLI_CASE,
        "-q",
        "-p",
        "no:cacheprovider",
        "--noconftest",
        f"--junit-xml={report}",
    ]
    returncode, output, env = run("pytest", pytest_args, tmp_path, CASES)
    assert_cli_case_report(read_junit(report))
    assert returncode == 1, output
    assert_run_left_nothing(env)
    report = tmp_path / "unittest.xml"
    returncode, output, env = run(
        "unittest",
        [str(CASES / "unittest_main.py"), str(report), "-v", "cli_case"],
        tmp_path,
        CASES,
    )
    assert_cli_case_report(read_junit(report))
    assert returncode == 1, output
    assert_run_left_nothing(env)


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
        preexec_fn=default_sigint,
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
        (
            signal.SIGTERM,
            ["-m", "pytest", "signal_case.py", "-q", "-p", "no:cacheprovider", "--noconftest"],
        ),
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
    assert_run_left_nothing(env)

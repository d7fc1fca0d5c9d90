"""``@on_ranks``: plain pytest tests on a shared pool, and the fault contract, under plain pytest.

The whole-run test runs tests/runtime/cases/on_ranks/ranks_suite.py as ``python -m pytest``
(its own session, its own conftest) and reads its JUnit XML report and the JSON lines its ranks
log; the others check the decorator and the plugin in this process, without ranks.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest

from .cases.caselog import read
from .support import (
    CASES,
    assert_run_left_nothing,
    default_sigint,
    outcomes_of,
    processes_with_token,
    read_junit,
    run_python,
    still_alive,
    subprocess_env,
)

SUITE_DIR = CASES / "on_ranks"

EXPECTED = {
    "ranks_suite.test_all_reduce": "passed",
    "ranks_suite.test_leaks_process_state": "passed",
    "ranks_suite.test_gets_a_fresh_process_state": "passed",
    "ranks_suite.test_world_of_four": "passed",
    "ranks_suite.test_parametrized[1]": "passed",
    "ranks_suite.test_parametrized[3]": "passed",
    "ranks_suite.test_fixtures_by_value": "passed",
    "ranks_suite.test_fails_on_rank_1": "failure",
    "ranks_suite.test_after_failure": "passed",
    "ranks_suite.test_hangs_on_rank_0": "failure",
    "ranks_suite.test_after_hang": "passed",
    "ranks_suite.test_rank_1_dies": "failure",
    "ranks_suite.test_after_death": "passed",
    "ranks_suite.test_skips": "skipped",
    "ranks_suite.test_sleeps_for_ctrl_c": "skipped",
    "TestMethods.test_method": "passed",
    "TestDecoratedClass.test_each_method_runs_on_the_ranks": "passed",
    "ranks_suite.test_rank_outside_on_ranks": "error",
    "ranks_suite.test_fixture_that_does_not_pickle": "failure",
}


def test_a_plain_pytest_file_of_on_ranks_tests_keeps_every_outcome_and_leaves_nothing(tmp_path):
    report = tmp_path / "report.xml"
    log = tmp_path / "ranks.log"
    env = subprocess_env(tmp_path, DISTLINT_CASE_LOG=str(log))
    proc = run_python(
        [
            "-m",
            "pytest",
            "ranks_suite.py",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--confcutdir={SUITE_DIR}",
            f"--junit-xml={report}",
        ],
        env,
        timeout=240,  # a hang guard: the file takes seconds
        cwd=SUITE_DIR,
    )
    output = proc.stdout + proc.stderr
    cases = read_junit(report)
    assert outcomes_of(cases) == EXPECTED, output
    assert proc.returncode == 1, output

    failed = cases["ranks_suite.test_fails_on_rank_1"].text
    # Rank 1's message and traceback, with pytest's assertion introspection from the rank.
    assert "rank 1 failed" in failed and "assert 10 == 0" in failed, failed
    assert "rank 0" not in failed.split("rank 1 failed")[0], failed
    hung = cases["ranks_suite.test_hangs_on_rank_0"].text
    assert "timed out after 3 s; ranks 0, 1 did not finish" in hung, hung
    assert "rank 0 was at:" in hung and "rank 1 was at:" in hung, hung
    assert "in test_hangs_on_rank_0" in hung, hung  # the rank's own frame, from its stack dump
    died = cases["ranks_suite.test_rank_1_dies"].text
    assert "rank 1 died during" in died and "exited with code 3" in died, died
    assert cases["ranks_suite.test_skips"].message == "not on this machine"
    outside = cases["ranks_suite.test_rank_outside_on_ranks"].text
    assert "'rank' fixture exists only in tests decorated with @on_ranks" in outside, outside
    unpicklable = cases["ranks_suite.test_fixture_that_does_not_pickle"].text
    assert "fixture 'lock' cannot be handed to the ranks" in unpicklable, unpicklable

    records = read(str(log))
    pids: dict[str, dict[int, int]] = {}
    for entry in records:
        pids.setdefault(entry["test"], {})[entry["rank"]] = entry["pid"]
    assert sorted(pids["test_world_of_four"]) == [0, 1, 2, 3]
    assert all(sorted(pids[name]) == [0, 1] for name in pids if name != "test_world_of_four")
    # One pool of 2 served every passing test before the failure, world size 4 in between.
    shared = [
        "test_all_reduce",
        "test_parametrized[1]",
        "test_parametrized[3]",
        "test_fixtures_by_value",
        "test_fails_on_rank_1",
    ]
    assert all(pids[name] == pids["test_all_reduce"] for name in shared), pids
    assert not set(pids["test_world_of_four"].values()) & set(pids["test_all_reduce"].values())
    assert proc_pid_not_a_rank(pids)
    # A hung pool is replaced: the next test runs on other processes.
    assert not set(pids["test_after_hang"].values()) & set(pids["test_hangs_on_rank_0"].values())
    assert_run_left_nothing(env)


def test_ctrl_c_while_on_ranks_tests_run_leaves_nothing_running(tmp_path):
    marker = tmp_path / "marker"
    env = subprocess_env(tmp_path, DISTLINT_CASE_MARKER=str(marker))
    args = ["-m", "pytest", "ranks_suite.py", "-q", "-p", "no:cacheprovider"]
    args += [f"--confcutdir={SUITE_DIR}", "-k", "test_sleeps_for_ctrl_c"]
    proc = subprocess.Popen(
        [sys.executable, *args],
        env=env,
        cwd=str(SUITE_DIR),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 300  # a hang guard (pytest, torch and the pool start first)
    while not all(os.path.exists(f"{marker}.{rank}") for rank in (0, 1)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the sleeping test never started:\n{proc.communicate()[0]}")
        time.sleep(0.05)
    ranks = [int(open(f"{marker}.{rank}").read()) for rank in (0, 1)]
    assert set(ranks) <= set(processes_with_token(env["DISTLINT_TEST_TOKEN"]))
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends pytest
    try:
        output = proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("pytest did not exit within 60 s of Ctrl-C")
    assert proc.returncode != 0, output
    assert still_alive(ranks) == [], output
    assert_run_left_nothing(env)


def proc_pid_not_a_rank(pids: dict[str, dict[int, int]]) -> bool:
    """No two ranks of one test share a process."""
    return all(len(set(ranks.values())) == len(ranks) for ranks in pids.values())


def test_the_on_ranks_example_of_the_runtime_page_runs_under_plain_pytest(tmp_path):
    from doc_pages import ROOT, blocks

    (source,) = [
        b.text
        for b in blocks(ROOT / "docs" / "runtime.md")
        if b.lang == "python" and "@on_ranks(2" in b.text
    ]
    (tmp_path / "test_on_ranks_example.py").write_text(source)
    report = tmp_path / "report.xml"
    env = subprocess_env(tmp_path)
    proc = run_python(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_on_ranks_example.py"]
        + [f"--junit-xml={report}"],
        env,
        timeout=300,
        cwd=tmp_path,
    )
    assert outcomes_of(read_junit(report)) == {
        "test_on_ranks_example.test_all_reduce": "passed",
        "test_on_ranks_example.test_sizes[1]": "passed",
        "test_on_ranks_example.test_sizes[8]": "passed",
    }, proc.stdout + proc.stderr
    assert_run_left_nothing(env)


XDIST_FILE = """\
import json
import os

import pytest
import torch
import torch.distributed as dist

from distlint.runtime import on_ranks


@on_ranks(2, backend="gloo")
@pytest.mark.parametrize("n", range(6))
def test_all_reduce(rank, n, worker_id):
    t = torch.ones(1) * (rank + n)
    dist.all_reduce(t)
    assert t.item() == 2 * n + 1
    with open(os.environ["XDIST_LOG"], "a") as log:
        log.write(json.dumps({"n": n, "worker": worker_id, "rank": rank, "pid": os.getpid()}) + "\\n")
"""


def test_each_xdist_worker_serves_its_on_ranks_tests_from_a_pool_of_its_own(tmp_path):
    pytest.importorskip("xdist")
    (tmp_path / "test_xdist_ranks.py").write_text(XDIST_FILE)
    report, log = tmp_path / "report.xml", tmp_path / "ranks.jsonl"
    env = subprocess_env(tmp_path, XDIST_LOG=str(log))
    for name in [n for n in env if n.startswith("PYTEST_")]:  # not a worker of this run's xdist
        env.pop(name)
    proc = run_python(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "test_xdist_ranks.py"]
        + [f"--junit-xml={report}"],
        env,
        timeout=300,  # a hang guard: two workers, each importing torch and starting one pool
        cwd=tmp_path,
    )
    output = proc.stdout + proc.stderr
    assert set(outcomes_of(read_junit(report)).values()) == {"passed"}, output
    assert len(read_junit(report)) == 6, output
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    pids: dict[str, set[int]] = {}
    for entry in entries:
        pids.setdefault(entry["worker"], set()).add(entry["pid"])
    assert sorted(pids) == ["gw0", "gw1"], entries  # both workers ran tests
    # Within a worker one pool of 2 served every test; the two workers share no rank.
    assert all(len(ranks) == 2 for ranks in pids.values()), pids
    assert not pids["gw0"] & pids["gw1"], pids
    assert_run_left_nothing(env)


# ---- the decorator and the plugin, in this process -------------------------------------


def test_the_dispatcher_asks_pytest_for_every_fixture_but_the_ranks_own():
    import inspect

    from distlint.runtime import on_ranks
    from distlint.runtime.on_ranks_dispatch import spec_of

    @on_ranks(2, backend="gloo", timeout=5, env={"A": "1"})
    def test_x(rank, tmp_path, world_size, device, pg, n=3):
        pass

    assert list(inspect.signature(test_x).parameters) == ["tmp_path", "n"]
    spec = spec_of(test_x)
    assert (spec.world_size, spec.backend, spec.timeout_s, spec.env) == (
        2,
        "gloo",
        5.0,
        (("A", "1"),),
    )
    assert spec.rank_arguments == ("rank", "world_size", "device", "pg")

    class TestPlain:
        def test_a(self, rank):
            pass

        def helper(self, rank):
            pass

    decorated = on_ranks(4)(TestPlain)
    assert spec_of(decorated.test_a).world_size == 4 and spec_of(decorated.helper) is None
    assert list(inspect.signature(decorated.test_a).parameters) == ["self"]


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((0,), {}, "world_size must be a positive int"),
        ((True,), {}, "world_size must be a positive int"),
        ((2,), {"timeout": 0}, "timeout must be a positive number"),
        ((2,), {"backend": 3}, "backend must be a str or None"),
        ((2,), {"env": {"A": 1}}, "env must map str to str"),
    ],
)
def test_bad_arguments_are_one_line_errors(args, kwargs, message):
    from distlint.runtime import on_ranks

    with pytest.raises(ValueError, match=message):
        on_ranks(*args, **kwargs)


def test_a_fixture_that_does_not_pickle_is_named():
    import threading

    from distlint.runtime.on_ranks_dispatch import _pickled

    assert pickle.loads(_pickled({"a": 1}, lambda n: f"fixture {n!r}", "t")) == {"a": 1}
    with pytest.raises(TypeError, match=r"^t: fixture 'lock' cannot be handed to the ranks"):
        _pickled({"a": 1, "lock": threading.Lock()}, lambda n: f"fixture {n!r}", "t")


def test_a_rank_reports_pytest_outcomes_and_assertions_as_the_dispatcher_would():
    from distlint.runtime.on_ranks_rank import classify
    from distlint.runtime.protocol import Status

    def outcome(raise_it):
        try:
            raise_it()
        except BaseException as exc:  # noqa: BLE001
            return classify(exc)

    assert outcome(lambda: pytest.skip("later")) == (Status.SKIPPED, "later")
    assert outcome(lambda: pytest.fail("bad")) == (Status.FAILED, "bad")
    status, detail = outcome(lambda: exec("assert 1 == 2"))
    assert status is Status.FAILED and "AssertionError" in detail
    status, detail = outcome(lambda: {}["missing"])
    assert status is Status.ERRORED and "KeyError" in detail


def test_a_module_imported_on_a_rank_gets_pytests_assertion_rewriting(tmp_path):
    import sys

    from distlint.runtime.on_ranks_rank import import_with_assertion_rewriting

    path = tmp_path / "rewritten_case.py"
    path.write_text("def check(x):\n    assert x == 3\n")
    module = import_with_assertion_rewriting("distlint_rewritten_case", str(path))
    try:
        with pytest.raises(AssertionError, match=r"assert 2 == 3"):
            module.check(2)
    finally:
        sys.modules.pop("distlint_rewritten_case", None)

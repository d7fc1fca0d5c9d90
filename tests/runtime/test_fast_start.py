"""Fast start (issue 11): torch's per-test MultiProcessTestCase ranks forked from the preloaded fork server.

Whole-process runs of cases/per_test_case.py (torch's own MultiProcessTestCase,
unchanged but for its main block) read outcomes from JUnit XML and where each
rank ran from the case log: a fast-start rank's parent is the fork server, a
spawned rank's is the dispatcher.  The fork server's faults (death, hang,
environment drift) are driven in this process with trivial rank targets and a
server that preloads no torch, so they cost milliseconds, not imports.
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

from .cases import fast_targets
from .cases.caselog import read
from .support import (
    CASES,
    REPO,
    alive,
    assert_run_left_nothing,
    outcomes_of,
    processes_with_token,
    read_junit,
    run_python,
    subprocess_env,
)

PER_TEST_CASE = str(CASES / "per_test_case.py")
# What every way of running per_test_case.py reports, spawn or fast start ("Class.test" -> JUnit outcome).
EXPECTED = {
    "PerTestCase.test_a_changes_process_state": "passed",
    "PerTestCase.test_abort_the_pg_and_start_another": "passed",
    "PerTestCase.test_b_sees_fresh_process_state": "passed",
    "PerTestCase.test_destroy_and_recreate_the_pg": "passed",
    "PerTestCase.test_env_set_before_spawn_reaches_the_ranks": "passed",
    "PerTestCase.test_exits_with_a_skip_code": "skipped",
    # unittest counts torch's RuntimeError("Process 1 exited with error code 10 ...") as an error,
    # pytest as a failure; the tests below say which runner they used.
    "PerTestCase.test_fails_on_rank_1": "error",
}
# Run under spawn as well (each spawned rank imports torch: seconds per test), the tests whose
# outcome depends on what a rank inherits: the environment its dispatcher set just before
# starting it, and the pipe its traceback goes back through.  The rest is torch's own logic
# on exit codes, the same whichever way the rank started.  The whole file under spawn gives
# EXPECTED too (53 s here, too long for CI):
#   DISTLINT_FAST_START=0 python tests/runtime/cases/per_test_case.py --junit-xml report.xml
SPAWN_SUBSET = ("env_set_before_spawn", "fails_on_rank_1")


def assert_same_details(report: dict) -> None:
    if "PerTestCase.test_exits_with_a_skip_code" in report:
        assert (
            report["PerTestCase.test_exits_with_a_skip_code"].message
            == "Need at least 2 CUDA devices"
        )
    failure = report["PerTestCase.test_fails_on_rank_1"].text
    assert "Process 1 exited with error code 10" in failure and "rank 1 disagrees" in failure


def forkserver_usable_here() -> bool:
    from distlint.runtime import start_method

    return start_method.forkserver_unsafe_reason() is None


def start(name, args, tmp_path, cwd=REPO, **extra_env):
    """Start python with ``args`` in its own TMPDIR (tmp_path/name/tmp) and case log; (process, env)."""
    (tmp_path / name).mkdir(exist_ok=True)
    env = subprocess_env(tmp_path / name, DISTLINT_CASE_LOG=str(tmp_path / f"{name}.log"))
    env.pop("DISTLINT_FAST_SPAWN", None)
    env.update(extra_env)
    proc = subprocess.Popen(
        [sys.executable, *args],
        env=env,
        cwd=str(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, env


def finish(proc, timeout=300):
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(
            f"the run did not end within {timeout} s (hang guard):\n{proc.communicate()[0][-3000:]}"
        )


# ---- whole runs with torch ---------------------------------------------------------


def test_a_per_test_suite_keeps_every_outcome_with_fresh_ranks_from_the_fork_server(tmp_path):
    # The spawn reference (a few tests: each spawned rank imports torch) runs beside the fast run.
    fast, fast_env = start(
        "fast", [PER_TEST_CASE, "--junit-xml", str(tmp_path / "fast.xml")], tmp_path
    )
    select = [arg for part in SPAWN_SUBSET for arg in ("-k", part)]
    spawned, spawn_env = start(
        "spawn",
        [PER_TEST_CASE, *select, "--junit-xml", str(tmp_path / "spawn.xml")],
        tmp_path,
        DISTLINT_FAST_SPAWN="0",
    )
    fast_output, spawn_output = finish(fast), finish(spawned)

    fast_report = read_junit(tmp_path / "fast.xml")
    assert outcomes_of(fast_report) == EXPECTED, fast_output
    assert_same_details(fast_report)
    spawn_report = read_junit(tmp_path / "spawn.xml")
    assert outcomes_of(spawn_report) == {
        name: outcome
        for name, outcome in EXPECTED.items()
        if any(part in name for part in SPAWN_SUBSET)
    }, spawn_output
    assert_same_details(spawn_report)
    assert fast.returncode == spawned.returncode == 1

    # Every test got two fresh processes; fast start forked them all from one server.
    records = read(fast_env["DISTLINT_CASE_LOG"])
    assert len(records) == 2 * len(EXPECTED) and len({r["pid"] for r in records}) == len(records)
    assert {r["dispatcher"] for r in records} == {fast.pid}
    if forkserver_usable_here():
        (server,) = {r["ppid"] for r in records}
        assert server != fast.pid
    else:  # e.g. torch built with CUDA >= 12.8: spawn, and a note saying why
        assert {r["ppid"] for r in records} == {fast.pid} and "fast start:" in fast_output
    spawn_records = read(spawn_env["DISTLINT_CASE_LOG"])
    assert spawn_records and all(r["ppid"] == r["dispatcher"] == spawned.pid for r in spawn_records)
    assert_run_left_nothing(fast_env)
    assert_run_left_nothing(spawn_env)


def test_pytest_plugin_runs_per_test_classes_with_fast_start_in_every_xdist_worker(tmp_path):
    report = tmp_path / "xdist.xml"
    # The ini option (here from -o) turns it on as --distlint-fast-spawn does.
    args = [
        "-m",
        "pytest",
        PER_TEST_CASE,
        "-q",
        "-p",
        "no:cacheprovider",
        "--noconftest",
        "-n",
        "2",
    ]
    proc, env = start(
        "xdist", [*args, "-o", "distlint_fast_spawn=true", f"--junit-xml={report}"], tmp_path, CASES
    )
    output = finish(proc)
    expected = dict(
        EXPECTED, **{"PerTestCase.test_fails_on_rank_1": "failure"}
    )  # pytest's word for it
    assert outcomes_of(read_junit(report)) == expected, output
    assert_same_details(read_junit(report))
    assert proc.returncode == 1, output

    records = read(env["DISTLINT_CASE_LOG"])
    workers = {r["dispatcher"] for r in records}
    assert len(workers) == 2, "both xdist workers ran tests"
    servers = {
        worker: {r["ppid"] for r in records if r["dispatcher"] == worker} for worker in workers
    }
    if forkserver_usable_here():
        # One fork server per worker, never shared, never the worker itself.
        assert all(len(ppids) == 1 for ppids in servers.values())
        assert len(set.union(*servers.values())) == 2 and not set.union(*servers.values()) & workers
    assert len({r["pid"] for r in records}) == len(records) == 2 * len(EXPECTED)
    assert_run_left_nothing(env)


def test_torchrun_a_failure_while_a_peer_waits_in_barrier_costs_seconds_and_the_class_goes_on(
    tmp_path,
):
    # The class timeout is 600 s: without the fix rank 0 sits in the barrier until then, and
    # this run's hang guard (180 s) fails the test.
    reports = tmp_path / "torchrun-{rank}.xml"
    case = str(CASES / "torchrun_failure_case.py")
    args = [
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        case,
        "--junit-xml",
        str(reports),
    ]
    proc, env = start("torchrun", args, tmp_path, OMP_NUM_THREADS="1")
    output = finish(proc, timeout=180)
    assert proc.returncode != 0, output
    for rank in (0, 1):
        report = read_junit(Path(str(reports).replace("{rank}", str(rank))))
        assert outcomes_of(report) == {
            "BarrierAfterFailure.test_a_passes": "passed",
            "BarrierAfterFailure.test_b_rank1_fails_while_rank0_waits_in_barrier": "failure",
            "BarrierAfterFailure.test_c_runs_after_the_failure": "passed",
        }, output
        failure = report["BarrierAfterFailure.test_b_rank1_fails_while_rank0_waits_in_barrier"].text
        assert "rank 1 fails before the barrier" in failure
        assert "rank 0 was still running and was stopped" in failure
    # The test after the failure ran on both launched processes.
    ran_last = [
        r for r in read(env["DISTLINT_CASE_LOG"]) if r["test"] == "test_c_runs_after_the_failure"
    ]
    assert sorted(r["rank"] for r in ran_last) == [0, 1]


def test_a_sigkilled_dispatcher_leaves_no_fast_start_rank_behind(tmp_path):
    marker = tmp_path / "marker"
    args = [PER_TEST_CASE, "-k", "test_a_changes_process_state"]
    proc, env = start("killed", args, tmp_path, DISTLINT_CASE_MARKER=str(marker))
    deadline = time.monotonic() + 120
    while not all(os.path.exists(f"{marker}.{rank}") for rank in (0, 1)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the sleeping test never started:\n{proc.communicate()[0]}")
        time.sleep(0.05)
    ranks = [int(Path(f"{marker}.{rank}").read_text()) for rank in (0, 1)]
    assert set(ranks) <= set(processes_with_token(env["DISTLINT_TEST_TOKEN"]))  # the check can fail
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert_run_left_nothing(env)


@pytest.mark.parametrize("with_pidfd", [True, False], ids=["pidfd", "pipe-then-poll"])
def test_a_rank_leaves_only_once_its_dispatcher_is_gone(with_pidfd):
    """The rank's watch of its dispatcher (not its parent: the fork server is). Without a pidfd
    the data pipe wakes it, and it may close while the dispatcher is still alive (or exiting):
    the watch keeps looking until the process is really gone."""
    import threading

    from distlint.runtime import fast_start

    dispatcher = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    read_end, write_end = os.pipe()
    pidfd = os.pidfd_open(dispatcher.pid) if with_pidfd else None
    gone = threading.Event()
    watch = threading.Thread(
        target=fast_start.watch_dispatcher,
        args=(dispatcher.pid, pidfd, None if with_pidfd else read_end, gone.set),
        daemon=True,
    )
    try:
        watch.start()
        os.close(
            write_end
        )  # the pipe closes: the dispatcher dropped its Process object, or is exiting
        assert not gone.wait(1.0), "the rank left while its dispatcher was alive"
        dispatcher.kill()
        assert gone.wait(30), "the rank did not notice its dispatcher was gone"  # hang guard
    finally:
        dispatcher.kill()
        dispatcher.wait()
        os.close(read_end)
        if pidfd is not None:
            os.close(pidfd)


# ---- the fork server's faults, in this process -----------------------------------


@pytest.fixture
def light_server(run_scope, monkeypatch):
    """Fast start's process class on a fork server that preloads no torch (it starts in a blink)."""
    from distlint.runtime import fast_start, forkserver, start_method

    monkeypatch.setattr(forkserver, "BASE_PRELOAD", ("distlint.runtime.fast_start",))
    monkeypatch.setattr(forkserver, "_server", forkserver._Server())
    monkeypatch.setattr(start_method, "_forkserver_failed", False)
    monkeypatch.setattr(fast_start, "_noted", set())
    # No torch in this server, so nothing makes forking unsafe, whatever torch build is installed.
    monkeypatch.setenv(start_method.START_METHOD_ENV, start_method.FORKSERVER)
    yield forkserver
    forkserver.stop()
    run_scope.assert_nothing_left()


def run_rank(path: Path, names=(), sleep_s=0.0, wait=True):
    from distlint.runtime.fast_start import FastStartProcess

    process = FastStartProcess(target=fast_targets.report, args=(str(path), tuple(names), sleep_s))
    process.start()
    if wait:
        process.join(60)  # hang guard
        assert process.exitcode == 0
        return fast_targets.read(str(path))
    return process


def kill_and_wait(pid: int) -> None:
    """SIGKILL ``pid`` and wait until it is dead (a zombie): a server that died, not one dying now."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_fork_server_that_dies_is_restarted_once_then_replaced_by_spawn(
    tmp_path, light_server, capfd
):
    first = run_rank(tmp_path / "1")
    server = light_server.running_pid()
    assert first["ppid"] == server
    kill_and_wait(server)
    second = run_rank(tmp_path / "2")
    assert second["ppid"] == light_server.running_pid() != server
    kill_and_wait(second["ppid"])
    third = run_rank(tmp_path / "3")
    assert third["ppid"] == os.getpid()  # spawned
    err = capfd.readouterr().err
    assert f"the fork server (pid {server}) died; starting a new one" in err
    assert "died 2 times; ranks use spawn from now on" in err


def test_a_fork_server_that_cannot_start_leaves_the_rank_to_spawn(
    tmp_path, light_server, monkeypatch, capfd
):
    """A temporary folder too long for the server's Unix socket (a deep CI workspace, pytest's
    tmp_path under xdist): the server cannot listen, and the rank spawns instead of failing."""
    from multiprocessing import process

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setitem(process.current_process()._config, "tempdir", str(deep))
    result = run_rank(tmp_path / "rank")
    assert result["ppid"] == os.getpid()  # spawned
    assert light_server.running_pid() is None
    err = capfd.readouterr().err
    assert "the fork server could not start: OSError: AF_UNIX path too long" in err
    assert "ranks use spawn from now on" in err


def test_a_fork_server_that_hangs_is_killed_at_the_bound_and_the_rank_spawns(
    tmp_path, light_server, monkeypatch, capfd
):
    monkeypatch.setattr(light_server, "START_TIMEOUT_S", 1.0)
    monkeypatch.setenv(
        "DISTLINT_CASE_HANG", "1"
    )  # the server inherits it and hangs importing the module
    light_server.start(hints=["runtime.cases.hangs_on_import"], defer=False)
    monkeypatch.delenv("DISTLINT_CASE_HANG")
    hung = light_server.running_pid()
    result = run_rank(tmp_path / "rank")
    assert result["ppid"] == os.getpid()
    assert not alive(hung)
    err = capfd.readouterr().err
    assert f"the fork server (pid {hung}) did not finish preloading within 1 s; killing it" in err
    assert "ranks use spawn from now on" in err


def test_ranks_take_the_dispatchers_environment_as_it_is_when_they_start(
    tmp_path, light_server, monkeypatch, capfd
):
    monkeypatch.setenv("DISTLINT_CASE_STALE", "server")
    light_server.start(defer=False)
    monkeypatch.delenv("DISTLINT_CASE_STALE")
    monkeypatch.setenv("DISTLINT_CASE_FRESH", "dispatcher")
    names = ("DISTLINT_CASE_STALE", "DISTLINT_CASE_FRESH")
    forked = run_rank(tmp_path / "forked", names)
    assert forked["ppid"] == light_server.running_pid()
    assert forked["env"] == {"DISTLINT_CASE_STALE": None, "DISTLINT_CASE_FRESH": "dispatcher"}
    # A variable torch reads only at import, set after the server imported torch: this rank spawns.
    monkeypatch.setenv("TORCHDYNAMO_DISTLINT_PROBE", "1")
    spawned = run_rank(tmp_path / "spawned", names)
    assert spawned["ppid"] == os.getpid() and spawned["env"] == forked["env"]
    err = capfd.readouterr().err
    assert (
        "TORCHDYNAMO_DISTLINT_PROBE differ(s) from what the fork server imported torch with" in err
    )


def test_a_rank_that_outlives_its_fork_server_is_still_running_not_exited(
    tmp_path, light_server, capfd
):
    process = run_rank(tmp_path / "rank", sleep_s=2.0, wait=False)
    deadline = time.monotonic() + 60
    while not (tmp_path / "rank").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    kill_and_wait(light_server.running_pid())
    # multiprocessing alone would now report exit code 255 for a rank that still runs, and never stop it.
    assert process.exitcode is None and process.is_alive()
    process.join(30)
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.exitcode == 255  # ended; its real code died with the server
    assert "the fork server died while ranks ran" in capfd.readouterr().err


# ---- turning it on ------------------------------------------------------------------


def test_an_unknown_multiprocesstestcase_shape_means_spawn_and_a_note(monkeypatch, capsys):
    import types

    from distlint.runtime import fast_start

    monkeypatch.setattr(fast_start, "_noted", set())
    no_start = {"_spawn_processes": lambda self: None}
    start_without_proc = dict(no_start, _start_processes=lambda self: None)
    for body in (no_start, start_without_proc):
        base = type("MultiProcessTestCase", (), dict(body))
        module = types.SimpleNamespace(MultiProcessTestCase=base)
        monkeypatch.setitem(sys.modules, fast_start.COMMON_DISTRIBUTED, module)
        assert fast_start.install() is False and not fast_start.installed()
        assert vars(base)["_spawn_processes"] is body["_spawn_processes"]  # untouched
    assert "(unknown torch internals); per-test classes use spawn" in capsys.readouterr().err
    monkeypatch.undo()
    from torch.testing._internal.common_distributed import MultiProcessTestCase

    assert (
        fast_start.shape_problem(MultiProcessTestCase) is None
    )  # the torch here is the known shape


def test_early_start_only_for_a_scripts_own_top_level_import(tmp_path):
    probe = "import json, sys\nfrom distlint.runtime import forkserver\nprint(json.dumps(forkserver.running_pid()))\n"
    top = tmp_path / "top.py"
    top.write_text("import distlint.runtime\n" + probe)
    nested = tmp_path / "nested.py"
    nested.write_text("def load():\n    import distlint.runtime\nload()\n" + probe)
    env = subprocess_env(tmp_path)
    env.pop("DISTLINT_FAST_SPAWN", None)
    env.pop("DISTLINT_START_METHOD", None)

    def server_pid(script, **extra):
        proc = run_python([str(script)], dict(env, **extra), timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.splitlines()[-1])

    started = server_pid(top)
    assert isinstance(started, int) if forkserver_usable_here() else started is None
    assert server_pid(nested) is None
    assert server_pid(top, DISTLINT_FAST_SPAWN="0") is None
    assert_run_left_nothing(env)  # the unused server was stopped at exit


def test_early_start_hints_are_the_torch_modules_a_script_imports(tmp_path):
    from distlint.runtime.early_start import torch_imports_of

    script = tmp_path / "t.py"
    script.write_text(
        "import os\nimport torch.distributed as dist\nfrom torch.testing._internal import common_utils\n"
        "from .local import x\nif True:\n    import torch._dynamo\n"
    )
    assert torch_imports_of(str(script)) == [
        "torch.distributed",
        "torch.testing._internal",
        "torch.testing._internal.common_utils",
    ]
    assert torch_imports_of(str(tmp_path / "missing.py")) == []


def test_the_plugin_is_registered_and_costs_no_torch_import_when_off(pytestconfig, tmp_path):
    from distlint.runtime import pytest_plugin

    assert pytestconfig.pluginmanager.hasplugin("distlint")  # the pytest11 entry point
    assert not pytest_plugin.requested(pytestconfig)
    code = (
        "import json, sys, distlint.runtime.pytest_plugin\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy'})))"
    )
    proc = run_python(["-c", code], subprocess_env(tmp_path), timeout=60)
    assert json.loads(proc.stdout) == [], proc.stderr


class _Config:
    def __init__(self, flag=False, ini=False, workerinput=None, numprocesses=None):
        self._flag, self._ini = flag, ini
        self.option = type("Option", (), {"numprocesses": numprocesses})()
        if workerinput is not None:
            self.workerinput = workerinput
        self.registered = []
        self.pluginmanager = type(
            "PM", (), {"register": lambda _, plugin, name: self.registered.append(name)}
        )()

    def getoption(self, name, default=None):
        return self._flag

    def getini(self, name):
        return self._ini


def test_fast_start_is_asked_for_by_flag_or_ini_and_forced_off_by_the_environment(
    monkeypatch, capsys
):
    from distlint.runtime import pytest_plugin

    assert pytest_plugin.requested(_Config(flag=True)) and pytest_plugin.requested(
        _Config(ini=True)
    )
    assert not pytest_plugin.requested(_Config())
    assert pytest_plugin.xdist_controller(_Config(numprocesses=2))
    assert not pytest_plugin.xdist_controller(_Config(numprocesses=2, workerinput={}))
    monkeypatch.setenv("DISTLINT_FAST_SPAWN", "0")
    config = _Config(flag=True)
    pytest_plugin.pytest_configure(config)
    assert config.registered == []
    assert "fast start is off (DISTLINT_FAST_SPAWN=0)" in capsys.readouterr().err


def test_xdist_workers_get_equal_disjoint_shares_of_the_gpus(monkeypatch):
    from distlint.runtime.pytest_plugin import (
        assign_gpus_to_xdist_worker,
        split_devices,
        visible_gpus,
    )

    eight = [str(i) for i in range(8)]
    shares = [split_devices(eight, worker, 4) for worker in range(4)]
    assert shares == [["0", "1"], ["2", "3"], ["4", "5"], ["6", "7"]]
    assert split_devices(["3", "5", "6"], 1, 2) == ["5"]  # the odd one out is left unused
    assert split_devices(["0"], 0, 2) is None  # fewer GPUs than workers: no equal share
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "4, 6"}) == ["4", "6"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert (
        assign_gpus_to_xdist_worker() == ["2", "3"] and os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"
    )
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert assign_gpus_to_xdist_worker() is None  # not an xdist worker: left alone


def test_fast_start_has_one_name_and_still_accepts_the_former_spellings(monkeypatch):
    from _pytest.config.argparsing import Parser

    from distlint.runtime import pytest_plugin
    from distlint.runtime.early_start import fast_spawn_disabled, fast_start_off_by

    parser = Parser(_ispytest=True)
    pytest_plugin.pytest_addoption(parser)
    for flag in ("--distlint-fast-start", "--distlint-fast-spawn"):
        assert parser.parse_known_args([flag]).distlint_fast_start is True
    assert parser.parse_known_args([]).distlint_fast_start is False
    assert {"distlint_fast_start", "distlint_fast_spawn"} <= set(parser._inidict)

    class Ini(_Config):
        def __init__(self, **ini):
            super().__init__()
            self._values = ini

        def getini(self, name):
            return self._values.get(name, False)

    assert pytest_plugin.requested(Ini(distlint_fast_start=True))
    assert pytest_plugin.requested(Ini(distlint_fast_spawn=True))
    assert not pytest_plugin.requested(Ini())

    monkeypatch.delenv("DISTLINT_FAST_SPAWN", raising=False)
    monkeypatch.delenv("DISTLINT_FAST_START", raising=False)
    assert fast_start_off_by() is None and not fast_spawn_disabled()
    for name in ("DISTLINT_FAST_START", "DISTLINT_FAST_SPAWN"):
        monkeypatch.setenv(name, "off")
        assert fast_start_off_by() == name and fast_spawn_disabled()
        monkeypatch.delenv(name)


def test_only_files_that_import_distlint_runtime_opt_in(tmp_path):
    from distlint.runtime.fast_start import uses_distlint_runtime

    cases = {
        "plain.py": "import torch\nfrom torch.testing._internal.common_utils import run_tests\n",
        "from_import.py": "from distlint.runtime import run_tests\n",
        "submodule.py": "import distlint.runtime.decorators as d\n",
        "package_name.py": "from distlint import runtime\n",
        "in_main.py": "if __name__ == '__main__':\n    from distlint.runtime import run_tests\n",
        "lookalike.py": "import distlint.runtimes\nimport distlint\n",
    }
    for name, source in cases.items():
        (tmp_path / name).write_text(source)
    assert {name for name in cases if uses_distlint_runtime(str(tmp_path / name))} == {
        "from_import.py",
        "submodule.py",
        "package_name.py",
        "in_main.py",
    }
    assert not uses_distlint_runtime(str(tmp_path / "missing.py"))


def test_plain_pytest_gives_fast_start_to_the_per_test_classes_of_a_file_importing_the_runtime(
    tmp_path,
):
    # per_test_case.py imports distlint.runtime (its main block's run_tests); no flag, no ini.
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest", PER_TEST_CASE]
    proc, env = start("opted", [*args, "-k", "test_a_changes or test_b_sees"], tmp_path, CASES)
    output = finish(proc)
    assert proc.returncode == 0, output
    records = read(env["DISTLINT_CASE_LOG"])
    assert len(records) == 4 and {r["dispatcher"] for r in records} == {proc.pid}
    if forkserver_usable_here():
        (server,) = {r["ppid"] for r in records}  # forked from one fork server
        assert server != proc.pid
    assert_run_left_nothing(env)


def test_only_the_per_test_classes_of_opted_in_files_get_fast_start_without_a_flag(tmp_path):
    import types

    from torch.testing._internal.common_distributed import MultiProcessTestCase

    from distlint.runtime.pytest_plugin import FastStartSession

    class PerTest(MultiProcessTestCase):
        pass

    def item(source: str, cls: type):
        path = tmp_path / f"case_{abs(hash(source))}.py"
        path.write_text(source)
        return types.SimpleNamespace(cls=cls, module=types.SimpleNamespace(__file__=str(path)))

    opted = "from distlint.runtime import run_tests\n"
    plain = "from torch.testing._internal.common_utils import run_tests\n"
    auto = FastStartSession.__new__(FastStartSession)
    auto.everywhere, auto.started = False, True
    assert auto._gets_fast_start(item(opted, PerTest))
    assert not auto._gets_fast_start(item(plain, PerTest))  # torch's own spawn
    assert not auto._gets_fast_start(item(opted, object))  # not a per-test class
    auto.everywhere = True  # --distlint-fast-start / distlint_fast_start = true
    assert auto._gets_fast_start(item(plain, PerTest))


START_METHOD_PROBE = """\
import json
import multiprocessing
import os

import torch.multiprocessing


def test_the_default_start_method_is_still_unchosen():
    chosen = multiprocessing.get_start_method(allow_none=True)
    torch.multiprocessing.set_start_method("spawn")  # what torch's continuous classes do first
    with open(os.environ["PROBE_OUT"], "w") as out:
        json.dump({"before": chosen, "after": multiprocessing.get_start_method()}, out)
"""


def test_the_fork_server_leaves_the_default_start_method_for_torch_to_choose(tmp_path):
    """Starting the fork server must not fix multiprocessing's default start method (CPython's
    preparation data asks for it, which fixes it to fork): torch's continuous classes set spawn,
    and would otherwise fork their ranks from a process whose OpenMP threads run."""
    (tmp_path / "test_probe.py").write_text(START_METHOD_PROBE)
    out = tmp_path / "probe.json"
    env = subprocess_env(tmp_path, PROBE_OUT=str(out))
    proc = run_python(
        ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--distlint-fast-start", "test_probe.py"],
        env,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(out.read_text()) == {"before": None, "after": "spawn"}
    assert_run_left_nothing(env)


CONTINUOUS_PROBE = """\
import os

import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcContinuousTest
from torch.testing._internal.common_utils import run_tests

# Read by the dispatcher at import; a rank re-imports this module with the environment it was
# handed, so it sees the dispatcher's pid here.
os.environ.setdefault("PROBE_DISPATCHER_PID", str(os.getpid()))


class ContinuousProbe(MultiProcContinuousTest):
    world_size = 2

    @classmethod
    def backend_str(cls):
        return "gloo"

    @classmethod
    def device_type(cls):
        return "cpu"

    def test_a_sum(self):
        tensor = torch.ones(2)
        dist.all_reduce(tensor)
        self.assertEqual(tensor.tolist(), [2.0, 2.0])

    def test_b_rank_is_not_the_dispatchers_child(self):
        self.assertNotEqual(os.getppid(), int(os.environ["PROBE_DISPATCHER_PID"]))


if __name__ == "__main__":
    run_tests()
"""


@pytest.mark.skipif(not forkserver_usable_here(), reason="the fork server is unsafe here")
def test_torchs_continuous_class_ranks_start_from_the_fork_server_with_their_outcomes(tmp_path):
    """``--runtime torch`` migrations: with fast start, the class-scope ranks of torch's
    MultiProcContinuousTest are forked from the fork server (not spawned by the dispatcher, which
    costs a torch import per rank and class) and run torch's own worker loop."""
    (tmp_path / "test_probe.py").write_text(CONTINUOUS_PROBE)
    env = subprocess_env(tmp_path)
    report = tmp_path / "report.xml"
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_probe.py"]
    proc = run_python(
        [*command, "--distlint-fast-start", f"--junit-xml={report}"], env, 180, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert outcomes_of(read_junit(report)) == {
        "ContinuousProbe.test_a_sum": "passed",
        "ContinuousProbe.test_b_rank_is_not_the_dispatchers_child": "passed",
    }
    assert_run_left_nothing(env)


def test_ranks_leave_only_when_their_peers_are_done_whether_they_skip_or_pass(tmp_path):
    """A fast-start rank leaves with os._exit at once, and torch destroys a passing rank's PG as
    soon as its test returns: a peer still in gloo's handshake then loses its connection ("Connection
    closed by peer") and fails a test that skips or passes everywhere else. So a rank first waits
    (bounded, in the test's store) for its peers, whether it skips or passes; a rank that a test
    ends with os._exit counts itself done, so that the others need not wait the bound for it.
    Measured before: 1 run in 5 of PyTorch's test_random_ops.py failed a skip; 5 of 168 tests that
    only create the PG failed, and a passing rank was gone a second after its test passed."""
    report = tmp_path / "report.xml"
    env = subprocess_env(tmp_path)
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest"]
    command += [str(CASES / "exit_wait_case.py"), "--distlint-fast-start"]
    proc = run_python([*command, f"--junit-xml={report}"], env, 180, cwd=tmp_path)
    expected = {f"SkipAfterInit.test_{name}": "skipped" for name in "abcd"}
    expected["PassAfterInit.test_a_passing_rank_stays_while_a_peer_works"] = "passed"
    expected["PassAfterInit.test_b_a_rank_ending_with_os_exit_is_counted_done"] = "passed"
    expected.update({f"PassAfterInit.test_init_only_{name}": "passed" for name in "bcdefgh"})
    assert outcomes_of(read_junit(report)) == expected, proc.stdout[-3000:]
    assert_run_left_nothing(env)


def test_a_rank_waits_for_its_peers_in_the_store_but_never_past_the_bound():
    import threading

    from torch.distributed import HashStore

    from distlint.runtime.peer_wait import await_peers

    store = HashStore()
    arrived: list[bool] = []
    waiter = threading.Thread(target=lambda: arrived.append(await_peers(store, "k", 2, 30.0)))
    waiter.start()
    time.sleep(0.2)
    assert waiter.is_alive()  # the peer has not come yet
    assert await_peers(store, "k", 2, 30.0) is True
    waiter.join(5)
    assert arrived == [True]
    started = time.monotonic()
    assert await_peers(store, "alone", 2, 0.3) is False  # a peer that never comes
    assert 0.3 <= time.monotonic() - started < 5

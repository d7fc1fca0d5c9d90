"""``distlint migrate --verify``: the comparison logic on scripted runs (no torch), and the real
thing end to end on one small gloo fixture (world size 2), a time budget that runs out, and
SIGTERM leaving no process, scratch file or folder behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from distlint.codemods.migrate_continuous import migrate_source
from distlint.codemods.verify import Verifier
from distlint.codemods.verify_run import (
    SCRATCH_PREFIX,
    BudgetExceeded,
    RunHung,
    Runner,
    RunResult,
    read_junit,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "verify" / "test_gloo_shared_state.py"
CLASS = "SharedStateTest"
MOVED = f"{CLASS}Continuous"
TESTS = ("test_a_scales", "test_b_sums", "test_c_counts", "test_d_gathers")


# -- the comparison logic, on scripted runs ------------------------------------------------------


class ScriptedRunner(Runner):
    """Answers runs from ``outcome(side, test, before, run_number)``: ``before`` are the tests of
    the same side that ran earlier in that run (what a leak on shared ranks depends on)."""

    def __init__(self, path: Path, outcome, per_test: tuple[str, ...] = ()) -> None:
        super().__init__(path, deadline=float("inf"))
        self.outcome = outcome
        self.labels: list[str] = []
        #: ``Class.test`` ids of a class that never moves, run by every whole-file run.
        self.per_test = per_test
        self.limits: list[float | None] = []

    def run(self, source, label, reverse=False, select=(), limit_s=None):
        self.labels.append(label + (" reversed" if reverse else ""))
        self.limits.append(limit_s)
        migrated = MOVED.encode() in source
        held = [t for t in TESTS if f"def {t}" in source.decode().split(f"class {MOVED}")[0]]
        ids = list(select) or [
            f"{CLASS if (not migrated or t in held) else MOVED}.{t}" for t in TESTS
        ]
        if not select:
            ids += self.per_test
        if reverse:
            ids.reverse()
        outcomes: dict[str, str] = {}
        for test_id in ids:
            cls, test = test_id.split(".")
            shared = [i.split(".")[1] for i in outcomes if i.startswith(MOVED)]
            side = "shared" if cls == MOVED else "per-test"
            outcome = self.outcome(side, test, shared if side == "shared" else [])
            if outcome == "hangs":
                first = not any(i.startswith(f"{cls}.") for i in outcomes)
                raise RunHung(label, limit_s or 0.0, test_id, first)
            outcomes[test_id] = outcome
        return RunResult(outcomes, 1.0 if not migrated else 0.5, 0, "", list(outcomes))


def _verify(outcome, per_test: tuple[str, ...] = ()):
    verifier = Verifier(str(FIXTURE), FIXTURE.read_bytes(), _config(), _options())
    verifier.runner = ScriptedRunner(FIXTURE, outcome, per_test)
    return verifier.verify(), verifier.runner.labels


def _config():
    from distlint.config import Config

    return Config()


def _options():
    from distlint.codemods.migrate_continuous import MigrateOptions

    return MigrateOptions()


def test_matching_outcomes_verify_the_file_in_three_runs():
    verdict, labels = _verify(lambda side, test, before: "passed")
    assert verdict.verified and not verdict.demoted and not verdict.flaky
    assert labels == ["original", "migrated", "migrated reversed"]
    assert verdict.tests_run == verdict.kept == verdict.moved_run == 4
    assert (verdict.seconds_before, verdict.seconds_after) == (1.0, 0.5)
    assert "verified: 4 tests run, 4 outcomes kept" in verdict.text()


def test_the_test_that_disturbs_another_is_demoted_and_named():
    def outcome(side, test, before):
        return "failed" if test == "test_d_gathers" and "test_b_sums" in before else "passed"

    verdict, labels = _verify(outcome)
    assert verdict.verified
    assert [(d.test, d.code) for d in verdict.demoted] == [(f"{CLASS}.test_b_sums", "diverged")]
    assert f"changes the outcome of {CLASS}.test_d_gathers" in verdict.demoted[0].text
    assert "passed per test, failed on shared ranks" in verdict.demoted[0].text
    assert "left   test_b_sums  [diverged]" in verdict.result.report.text()
    assert verdict.result.report.moved_count == 3
    # The demoted test carries a mark, and migrating the result again moves nothing.
    migrated = verdict.result.migrated
    assert b"    # distlint: keep-per-test (--verify: diverged)\n    def test_b_sums" in migrated
    again = migrate_source(migrated, verdict.path, _config(), _options())
    assert again.error is None and not again.changed
    # Confirmed before demoting (both sides again), then the disturber found by halves.
    assert "original, again" in labels and "migrated, again" in labels
    assert any("who disturbs" in label for label in labels)


def test_a_test_that_fails_alone_on_shared_ranks_is_itself_demoted():
    verdict, _ = _verify(
        lambda side, test, before: (
            "failed" if (side, test) == ("shared", "test_c_counts") else "passed"
        )
    )
    assert verdict.verified
    assert [d.test for d in verdict.demoted] == [f"{CLASS}.test_c_counts"]
    assert "ends differently on shared ranks" in verdict.demoted[0].text


def test_a_test_whose_outcome_alternates_is_flaky_and_stays():
    counter = {"runs": 0}

    def outcome(side, test, before):
        if test != "test_c_counts":
            return "passed"
        counter["runs"] += 1
        return "passed" if counter["runs"] % 2 else "failed"

    verdict, _ = _verify(outcome)
    assert verdict.verified and not verdict.demoted
    assert list(verdict.flaky) == [f"{CLASS}.test_c_counts"]
    assert "left   test_c_counts  [flaky]" in verdict.result.report.text()
    assert "flaky    SharedStateTest.test_c_counts  [flaky]" in verdict.text()


def test_a_test_failing_on_both_sides_that_makes_the_class_skip_the_rest_is_named_as_the_cause():
    """The real DTensor files' shape on torch's class: a test fails per test and on shared
    ranks alike, and the class then skips every later test; the reason says so."""

    def outcome(side, test, before):
        if test == "test_a_scales":
            return "failed"
        return "skipped" if side == "shared" and "test_a_scales" in before else "passed"

    verdict, _ = _verify(outcome)
    assert verdict.verified and [d.test for d in verdict.demoted] == [f"{CLASS}.test_a_scales"]
    assert verdict.failing_both == [f"{CLASS}.test_a_scales"]
    assert verdict.demoted[0].text == (
        f"fails on shared ranks, and the class then skips the tests after it, {CLASS}.test_b_sums"
        " among them (passed per test, skipped on shared ranks)"
    )


def test_a_file_whose_moved_tests_all_skip_is_not_verified():
    verdict, _ = _verify(lambda side, test, before: "skipped")
    assert not verdict.verified
    assert "no moved test ran on this machine" in verdict.why_not
    assert len(verdict.not_proven) == 4


def test_one_failure_that_makes_the_class_skip_the_rest_costs_one_demotion_not_a_search_each():
    """torch's continuous class skips every later test once one fails (its poison pill): the
    first diverged test of the class is handled, the others wait for the next round."""

    def outcome(side, test, before):
        if side == "shared" and test == "test_a_scales":
            return "failed"
        return "skipped" if "test_a_scales" in before else "passed"

    verdict, labels = _verify(outcome)
    assert verdict.verified
    assert [d.test for d in verdict.demoted] == [f"{CLASS}.test_a_scales"]
    assert verdict.result.report.moved_count == 3
    assert [label for label in labels if "alone" in label or "disturbs" in label] == [
        f"migrated, {CLASS}.test_a_scales alone"
    ]


def test_tests_that_fail_on_both_sides_are_kept_and_named():
    verdict, _ = _verify(
        lambda side, test, before: "failed" if test == "test_a_scales" else "passed"
    )
    assert verdict.verified and not verdict.demoted
    assert verdict.kept == 4 and verdict.failing_both == [f"{CLASS}.test_a_scales"]
    assert (
        f"fail on both sides (counted as kept; the original fails here too): {CLASS}.test_a_scales"
        in (verdict.text())
    )


def test_a_budget_that_runs_out_after_a_full_run_reports_that_runs_figures():
    class OutOfTime(ScriptedRunner):
        def run(self, source, label, reverse=False, select=(), limit_s=None):
            if reverse:
                raise BudgetExceeded(label + ", reversed")
            return super().run(source, label, reverse, select, limit_s)

    verifier = Verifier(str(FIXTURE), FIXTURE.read_bytes(), _config(), _options())
    verifier.runner = OutOfTime(FIXTURE, lambda side, test, before: "passed")
    verdict = verifier.verify()
    assert not verdict.verified
    assert "ran out (during: migrated, reversed)" in verdict.why_not
    assert (verdict.tests_run, verdict.kept, verdict.moved_run) == (4, 4, 4)
    assert "4 tests run, 4 outcomes kept (last run)" in verdict.text()


@pytest.mark.parametrize(
    "on_shared_ranks, why",
    [
        ("failed", f"every test of {MOVED} ends differently"),
        # Its first test hangs: the run is stopped, and the class stays behind as a whole.
        ("hangs", f"its class {MOVED} hangs on shared ranks"),
    ],
)
def test_a_class_that_fails_as_a_whole_is_demoted_at_once_and_nothing_is_left_to_move(
    on_shared_ranks, why
):
    verdict, labels = _verify(
        lambda side, test, before: on_shared_ranks if side == "shared" else "passed"
    )
    assert not verdict.verified
    assert verdict.why_not == "every moved test was demoted: nothing left to move"
    assert [d.test for d in verdict.demoted] == [f"{CLASS}.{t}" for t in TESTS]
    assert all(why in d.text for d in verdict.demoted)
    # One run decides for the class, not one run per test: its first test alone (a failure), or
    # the run it hung in.
    alone = [label for label in labels if "alone" in label]
    assert alone == (
        [f"migrated, {CLASS}.test_a_scales alone"] if on_shared_ranks == "failed" else []
    )


def test_pytest_junit_report_is_read_per_class_and_test(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text(
        textwrap.dedent("""\
        <testsuites><testsuite name="pytest">
          <testcase classname="pkg._distlint_verify_1_test_x.ATest" name="test_ok" time="0.1"/>
          <testcase classname="pkg._distlint_verify_1_test_x.ATest" name="test_skip">
            <skipped message="no gpu"/></testcase>
          <testcase classname="pkg._distlint_verify_1_test_x.ATest" name="test_bad">
            <failure message="boom"/></testcase>
          <testcase classname="pkg._distlint_verify_1_test_x.ATest" name="test_bad">
            <error message="teardown"/></testcase>
          <testcase classname="" name="pkg._distlint_verify_1_test_x"><error/></testcase>
        </testsuite></testsuites>""")
    )
    outcomes, order = read_junit(report)
    assert outcomes == {
        "ATest.test_ok": "passed",
        "ATest.test_skip": "skipped",
        "ATest.test_bad": "error",
    }
    assert order == ["ATest.test_ok", "ATest.test_skip", "ATest.test_bad"]
    assert read_junit(tmp_path / "missing.xml") == ({}, [])


def test_the_started_log_names_the_test_a_killed_run_was_in(tmp_path):
    from distlint.codemods.verify_run import _last_started

    (tmp_path / "test_hang.py").write_text(
        "import time, unittest\n\n"
        "class ATest(unittest.TestCase):\n"
        "    def test_1(self): pass\n\n"
        "class BTest(unittest.TestCase):\n"
        "    def test_2(self): time.sleep(60)\n"
    )
    log = tmp_path / "started.jsonl"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_hang.py"]
    process = subprocess.Popen(
        [*command, f"--distlint-started-log={log}"], cwd=tmp_path, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60  # a hang guard: pytest starts in a second or two
    while "BTest" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    process.kill()
    process.wait()
    assert _last_started(log) == ("BTest.test_2", True)
    assert _last_started(tmp_path / "missing.jsonl") == (None, False)


def test_reverse_order_option_runs_the_tests_last_to_first(tmp_path):
    (tmp_path / "test_order.py").write_text(
        "import unittest\n\n"
        "class ATest(unittest.TestCase):\n"
        "    def test_1(self): pass\n"
        "    def test_2(self): pass\n\n"
        "class BTest(unittest.TestCase):\n"
        "    def test_3(self): pass\n"
    )
    report = tmp_path / "report.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_order.py",
            "--distlint-reverse-order",
            f"--junit-xml={report}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_junit(report)[1] == ["BTest.test_3", "ATest.test_2", "ATest.test_1"]


# -- the real thing -----------------------------------------------------------------------------


@pytest.fixture
def env():
    """The environment of a ``distlint migrate --verify`` process, with a temporary directory of
    its own (short: the fork server's socket path must fit), which must be empty when it ends."""
    folder = Path(tempfile.mkdtemp(prefix="dlv-"))
    env = dict(os.environ, TMPDIR=str(folder))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    yield env
    left = sorted(p.name for p in folder.iterdir())
    shutil.rmtree(folder)
    assert not left, f"left in TMPDIR: {left}"


def _migrate_command(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "distlint", "migrate", *args]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _copy_fixture(tmp_path: Path) -> Path:
    target = tmp_path / "suite" / FIXTURE.name
    target.parent.mkdir()
    shutil.copyfile(FIXTURE, target)
    return target


def test_verify_write_demotes_the_leaking_test_and_keeps_the_flaky_one_behind(tmp_path, env):
    pytest.importorskip("torch")
    target = _copy_fixture(tmp_path)
    done = _migrate_command(["--verify", "--write", str(target)], tmp_path, env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    migrated = target.read_text()
    assert f"class {MOVED}" in migrated
    assert f"{target}: verified" in done.stdout, done.stdout
    assert (
        f"demoted  {CLASS}.test_a_scales  [diverged] changes the outcome of {CLASS}.test_b_sums"
        in done.stdout
    )
    assert f"flaky    {CLASS}.test_c_counts  [flaky]" in done.stdout
    # Both stay per test; the other two moved.
    per_test = migrated.split(f"class {MOVED}")[0]
    assert "def test_a_scales" in per_test and "def test_c_counts" in per_test
    assert "def test_b_sums" not in per_test and "def test_d_gathers" not in per_test
    # What the runs found is written on the tests, so CI's `migrate --check` stays green.
    assert "    # distlint: keep-per-test (--verify: diverged)\n    def test_a_scales" in per_test
    assert "    # distlint: keep-per-test (--verify: flaky)\n    def test_c_counts" in per_test
    check = _migrate_command(["--check", "--no-cache", str(target)], tmp_path, env, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "left   test_a_scales  [kept]" in check.stdout
    assert sorted(p.name for p in target.parent.iterdir()) == [FIXTURE.name, "verify_counter.txt"]


def test_a_budget_that_runs_out_writes_nothing(tmp_path, env):
    pytest.importorskip("torch")
    target = _copy_fixture(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "distlint",
            "migrate",
            "--verify",
            "--write",
            "--verify-budget",
            "0.5",
            str(target),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "NOT verified, not written" in done.stdout
    assert "the time budget of 0.5 s ran out (during: original)" in done.stdout
    assert target.read_bytes() == FIXTURE.read_bytes()
    assert [p.name for p in target.parent.iterdir()] == [FIXTURE.name]


SLEEPER = """
import os
import time

import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase


class SleepTest(MultiProcessTestCase):
    world_size = 2

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_sleeps(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
        with open(os.environ["SLEEPER_PIDS"], "a") as handle:
            handle.write(f"{os.getpid()}\\n")
        time.sleep(300)
        dist.destroy_process_group()
"""


def test_sigterm_stops_at_once_and_leaves_nothing_behind(tmp_path, env):
    pytest.importorskip("torch")
    suite = tmp_path / "suite"
    suite.mkdir()
    target = suite / "test_sleeper.py"
    target.write_text(SLEEPER)
    pids = tmp_path / "pids.txt"
    env["SLEEPER_PIDS"] = str(pids)
    process = subprocess.Popen(
        [sys.executable, "-m", "distlint", "migrate", "--verify", str(target)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and len(_pids(pids)) < 2 and process.poll() is None:
            time.sleep(0.2)
        ranks = _pids(pids)
        assert len(ranks) == 2, process.communicate(timeout=30)
        assert any(p.name.startswith(SCRATCH_PREFIX) for p in suite.iterdir())
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        os.killpg(process.pid, signal.SIGKILL) if process.poll() is None else None
    assert process.returncode == 130, err
    assert b"interrupted" in err
    time.sleep(0.5)
    for pid in ranks:
        assert not _alive(pid), f"rank {pid} outlived distlint migrate --verify"
    assert [p.name for p in suite.iterdir()] == ["test_sleeper.py"]


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead (its parent, the killed pytest, is gone: init reaps it)
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_budget_that_is_not_a_positive_number_is_a_usage_error(run_cli, tmp_path, capsys):
    (tmp_path / "test_x.py").write_text("x = 1\n")
    with pytest.raises(SystemExit) as exited:
        run_cli("migrate", "--verify", "--verify-budget", "0", "test_x.py")
    assert exited.value.code == 2
    assert "not a positive number of seconds: '0'" in capsys.readouterr().err
    # A file with nothing to move is not run: nothing to verify, exit 0.
    assert run_cli("migrate", "--verify", "--check", "test_x.py")[0] == 0


def test_a_migrated_file_that_reports_no_test_is_not_verified():
    verifier = Verifier(str(FIXTURE), FIXTURE.read_bytes(), _config(), _options())
    runner = ScriptedRunner(FIXTURE, lambda side, test, before: "passed")
    plain_run = runner.run

    def run(source, label, reverse=False, select=(), limit_s=None):
        found = plain_run(source, label, reverse, select, limit_s)
        if MOVED.encode() in source:  # an import error: pytest collects nothing
            return RunResult({}, 0.1, 2, "E   ImportError: cannot import name 'X'\n")
        return found

    runner.run = run
    verifier.runner = runner
    verdict = verifier.verify()
    assert not verdict.verified
    assert verdict.why_not == (
        "the migrated file reported no test (pytest exit 2): ImportError: cannot import name 'X'"
    )


def test_an_original_that_cannot_be_collected_is_not_verified_and_the_error_is_named():
    """A stored file newer than the installed torch: the report names the import that failed."""
    verifier = Verifier(str(FIXTURE), FIXTURE.read_bytes(), _config(), _options())
    tail = (
        "ImportError while importing test module 'test_x.py'.\n"
        "E   ImportError: cannot import name '_helper' from 'torch.distributed.tensor'\n"
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
        "=============================== 1 error in 2.96s ===============================\n"
    )
    runner = ScriptedRunner(FIXTURE, lambda side, test, before: "passed")
    runner.run = lambda source, label, reverse=False, select=(), limit_s=None: RunResult(
        {}, 3.0, 2, tail
    )
    verifier.runner = runner
    verdict = verifier.verify()
    assert not verdict.verified
    assert verdict.why_not == (
        "the original reported no test (pytest exit 2): ImportError: cannot import name '_helper'"
        " from 'torch.distributed.tensor' (1 error in 2.96s)"
    )


def test_a_difference_that_is_only_flaky_still_gets_the_reversed_run():
    """A flaky test that does not move explains the file-order difference; the reversed order
    must still be run (and compared) before the file counts as verified."""
    counter = {"runs": 0}

    def outcome(side, test, before):
        if test == "test_d_gathers" and side == "shared" and "test_a_scales" not in before:
            return "failed"  # only in reversed order: test_d runs first
        if test != "test_other":
            return "passed"
        counter["runs"] += 1
        return "passed" if counter["runs"] % 2 else "failed"

    verdict, labels = _verify(outcome, per_test=("OtherTest.test_other",))
    assert labels[:4] == ["original", "migrated", "migrated, again", "migrated reversed"]
    assert list(verdict.flaky) == ["OtherTest.test_other"]
    assert [d.test for d in verdict.demoted] == [f"{CLASS}.test_d_gathers"]


def test_a_moved_test_is_found_under_the_class_it_moved_to_among_options_variants():
    from distlint.codemods.verify import migrated_in

    # One class's tests go to two classes (its options value and another): both map back to it.
    renamed = {"XContinuous": "X", "XThreads8Continuous": "X"}
    run = RunResult(
        {"XContinuous.test_a": "passed", "XThreads8Continuous.test_b": "failed"},
        1.0,
        1,
        order=["XContinuous.test_a", "XThreads8Continuous.test_b"],
    )
    assert migrated_in(run, "X.test_a", renamed) == "XContinuous.test_a"
    assert migrated_in(run, "X.test_b", renamed) == "XThreads8Continuous.test_b"


def test_the_disturbing_test_found_by_the_last_allowed_probe_is_named():
    from distlint.codemods import verify

    candidates = [f"{MOVED}.test_{i:02d}" for i in range(2**verify.MAX_SEARCH_RUNS)]
    culprit = candidates[-1]
    verifier = Verifier(str(FIXTURE), FIXTURE.read_bytes(), _config(), _options())

    def probe(source, label, select=()):
        outcome = "failed" if culprit in select else "passed"
        return RunResult({f"{MOVED}.test_z": outcome}, 0.1, 0, order=[f"{MOVED}.test_z"])

    verifier._run = probe
    original = RunResult({f"{CLASS}.test_z": "passed"}, 0.1, 0)
    found = verifier._search(
        _migration(),
        {MOVED: CLASS},
        f"{CLASS}.test_z",
        f"{MOVED}.test_z",
        candidates,
        original,
    )
    assert found == culprit


def _migration():
    from distlint.codemods.migrate_continuous import migrate_source

    return migrate_source(FIXTURE.read_bytes(), str(FIXTURE))


def test_a_test_inherited_by_several_moved_classes_is_demoted_once_naming_the_others():
    from distlint.codemods.migrate_continuous import migrate_source
    from distlint.codemods.verify import FileVerdict

    path = ROOT / "fixtures" / "migrate" / "test_gloo_subclass_env.py"
    result = migrate_source(path.read_bytes(), str(path))
    verifier = Verifier(str(path), path.read_bytes(), _config(), _options())
    verdict = FileVerdict(str(path), result)
    for cls in ("GlooCollectivesTest", "GlooCollectivesWideTest", "GlooCollectivesFlagTest"):
        verifier._hold(verdict, result, f"{cls}.test_all_reduce", "ends differently")
    assert [(d.test, d.also) for d in verdict.demoted] == [
        (
            "GlooCollectivesTest.test_all_reduce",
            ["GlooCollectivesWideTest.test_all_reduce", "GlooCollectivesFlagTest.test_all_reduce"],
        )
    ]
    assert verifier.hold == {
        "GlooCollectivesTest.test_all_reduce": ("diverged", "ends differently")
    }
    assert verdict.text().count("demoted  ") == 1
    assert (
        "(also GlooCollectivesWideTest.test_all_reduce, GlooCollectivesFlagTest" in verdict.text()
    )


def test_a_migrated_run_that_hangs_in_a_moved_test_is_stopped_and_that_test_left_behind():
    from distlint.codemods import verify

    verifier = Verifier(str(FIXTURE), FIXTURE.read_bytes(), _config(), _options())
    runner = verifier.runner = ScriptedRunner(
        FIXTURE,
        lambda side, test, before: (
            "hangs" if (side, test) == ("shared", "test_c_counts") else "passed"
        ),
    )
    verdict = verifier.verify()
    assert verdict.verified
    assert [d.test for d in verdict.demoted] == [f"{CLASS}.test_c_counts"]
    assert "hangs on shared ranks (its run was stopped after 180 s)" in verdict.demoted[0].text
    assert verdict.result.report.moved_count == 3
    # The original runs under the budget alone; every migrated run under the hang limit (the
    # original's 1 s times HANG_FACTOR, but at least the minimum).
    assert runner.labels[0] == "original" and runner.limits[0] is None
    assert set(runner.limits[1:]) == {max(verify.MIN_HANG_LIMIT_S, verify.HANG_FACTOR * 1.0)}

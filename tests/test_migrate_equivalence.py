"""Proof that migrated files still test the same thing: run them.

For every gloo fixture in ``fixtures/migrate``, the original file and the migrated file
(``distlint.runtime``; for some fixtures also torch's continuous classes, ``--runtime torch``;
with ``DISTLINT_TEST_TORCH_RUNTIME=1`` for more) run on gloo, CPU: the originals together in
one ``python -m pytest`` process, their ``--runtime distlint`` migrations together in another
(as a user's suite runs: one torch import, pools shared across files), and each ``--runtime
torch`` migration as ``python FILE`` through its own ``__main__`` block. Per-test tests (all of
an original's, those a migrated file keeps) run with distlint's fast start: torch's own
``_run``, fresh ranks and a fresh PG per test, only the start method differs, so a DTensor file
of 9 tests at world size 4 takes seconds instead of minutes; so do the class-scope ranks of
torch's continuous classes (torch's own worker loop, forked from the fork server). Outcomes are read from structured
reports (pytest's JUnit XML, the JSON report ``tests/outcome_recorder.py`` writes), never from
a run's output (any library can print there: torch warns when numpy is missing). Then: no
failure or error anywhere, and the same test ids pass and skip in the original and in each
migrated file, once a migrated class name is mapped back to the class it came from (from the
migration report).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from outcome_recorder import read_outcomes

from distlint.codemods.migrate_continuous import MigrateOptions, migrate_source
from distlint.codemods.verify import renamed_classes
from distlint.codemods.verify_run import read_junit_cases

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "migrate"
GLOO_FIXTURES = sorted(FIXTURES.glob("test_gloo_*.py"))
RUNTIMES = ("distlint", "torch")
#: Fixtures also run on torch's continuous class (``--runtime torch``), in the default run: the
#: subclass/environment structure torch's class needs (a tests mixin, the environment set around
#: torch's spawn) is only proven by running it; DISTLINT_TEST_TORCH_RUNTIME=1 adds the others.
TORCH_RUNTIME_FIXTURES = ("test_gloo_subclass_env.py", "test_gloo_c10d_shaped.py") + (
    ("test_gloo_helper_pg.py",) if os.environ.get("DISTLINT_TEST_TORCH_RUNTIME") == "1" else ()
)
#: Fixtures always also run on torch's continuous base: the DTensor ones (torch's
#: DTensorContinuousTestBase and LocalDTensorContinuousTestBase are what PyTorch's own files
#: convert to; a twin reads the class's world_size before any instance exists). The FSDP and
#: DistributedTestBase ones with DISTLINT_TEST_TORCH_RUNTIME=1.
TORCH_RUNTIME_FIXTURES += ("test_gloo_dtensor_ops.py", "test_gloo_dtensor_world_size.py") + (
    ("test_gloo_fsdp_style.py", "test_gloo_distributed_base.py")
    if os.environ.get("DISTLINT_TEST_TORCH_RUNTIME") == "1"
    else ()
)
#: Fixtures whose every test needs an accelerator per rank (FSDPTest's world size): on a CPU
#: machine the proof is that the same tests skip, on both sides, through the skip registry.
NEEDS_ACCELERATORS = ("test_gloo_fsdp_style.py",)
#: A hang guard only: a whole file takes well under a minute.
RUN_TIMEOUT_S = 300
PARALLEL_RUNS = 2
RECORDER = Path(__file__).resolve().parent / "outcome_recorder.py"


@dataclass
class Run:
    """One file's run: its outcomes by ``Class.test`` id (from the recorder's report), exit status, output."""

    outcomes: dict[str, str]
    code: int
    output: str
    renamed: dict[str, str] = field(default_factory=dict)

    def tail(self, chars: int = 4000) -> str:
        return self.output[-chars:]


def _run(script: Path, fast_start: bool = False) -> Run:
    report = script.with_suffix(".outcomes.jsonl")
    command = [
        sys.executable,
        str(RECORDER),
        *(["--fast-start"] if fast_start else []),
        str(report),
        script.name,
    ]
    # Its own session, so that a timeout kills the workers too.
    process = subprocess.Popen(
        command,
        cwd=script.parent,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    output = _communicate(process, script)
    return Run(read_outcomes(report), process.returncode, output)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # Run the files as a developer would: under CI=true torch's run_tests() switches to
    # XML reports (needs xmlrunner) and CI-only test filtering, which is not what we compare;
    # and the inner pytest is not a worker of this run's xdist.
    for name in list(env):
        if name in ("CI", "GITHUB_ACTIONS", "PYTORCH_TEST_CUDA_MEM_LEAK_CHECK"):
            env.pop(name)
        elif name.startswith("PYTEST_"):
            env.pop(name)
    return env


def _communicate(process: subprocess.Popen, what: Path) -> str:
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as timeout:
        _kill_session(process)
        output, _ = process.communicate()
        raise AssertionError(
            f"{what} did not finish in {RUN_TIMEOUT_S} s:\n{output.decode(errors='replace')[-4000:]}"
        ) from timeout
    finally:
        _kill_session(process)  # leftovers of a run that exited (workers must not outlive it)
    return output.decode(errors="replace")


def _kill_session(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[tuple[str, str], Run]:
    """Every gloo fixture, original and migrated for each runtime.

    The originals run together in one ``python -m pytest`` process, and so do their
    ``--runtime distlint`` migrations (one torch import and one pool per world size for all of
    them, as a user's suite runs); the ``--runtime torch`` ones each as ``python FILE`` through
    their main blocks (torch 2.13's continuous classes mis-order subclasses under pytest,
    pytorch/pytorch#191745).
    """
    base = tmp_path_factory.mktemp("equivalence")
    batches = {side: base / side for side in ("original", "distlint")}
    for directory in batches.values():
        directory.mkdir()
        _copy_siblings(directory)
    renamed_by_side: dict[tuple[str, str], dict[str, str]] = {}
    scripts: dict[tuple[str, str], Path] = {}
    for fixture in GLOO_FIXTURES:
        source = fixture.read_bytes()
        (batches["original"] / fixture.name).write_bytes(source)
        renamed_by_side[(fixture.name, "original")] = {}
        for runtime in _runtimes(fixture.name):
            result = migrate_source(source, str(fixture), options=MigrateOptions(runtime=runtime))
            assert result.error is None and result.changed, (
                f"{fixture.name} ({runtime}) must migrate"
            )
            if runtime in batches:
                directory = batches[runtime]
            else:
                directory = base / fixture.stem / runtime
                directory.mkdir(parents=True)
                _copy_siblings(directory)
                scripts[(fixture.name, runtime)] = directory / fixture.name
            (directory / fixture.name).write_bytes(result.migrated)
            # Moved classes and their create_local_tensor_test_class twins -> their originals.
            renamed = renamed_classes(result)
            renamed_by_side[(fixture.name, runtime)] = renamed
            # Migrating again: the original has continuous classes already; named alike on both sides.
            renamed_by_side[(fixture.name, "original")].update(renamed)
    results: dict[tuple[str, str], Run] = {}
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        # Every side with fast start: the per-test tests a migrated file keeps run exactly as the
        # original's do (torch's own _run, fresh ranks per test), so the comparison stays fair and
        # a file that keeps a few per-test tests costs seconds, not minutes, of torch spawns.
        batch_futures = {side: pool.submit(_run_batch, d) for side, d in batches.items()}
        script_futures = {key: pool.submit(_run, script, True) for key, script in scripts.items()}
        for side, future in batch_futures.items():
            by_module, code, output = future.result()
            for fixture in GLOO_FIXTURES:
                if (fixture.name, side) in renamed_by_side:
                    results[(fixture.name, side)] = Run(
                        by_module.get(fixture.stem, {}), code, output
                    )
        for key, future in script_futures.items():
            results[key] = future.result()
    for key, run in results.items():
        run.renamed = renamed_by_side[key]
    return results


def _run_batch(directory: Path) -> tuple[dict[str, dict[str, str]], int, str]:
    """Every test file of ``directory`` in one ``python -m pytest`` run with fast start: outcomes
    by module and ``Class.test`` (from its JUnit XML), exit status, output."""
    report = directory / "report.xml"
    files = sorted(p.name for p in directory.glob("test_*.py"))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    command += ["--distlint-fast-start", "--junit-xml", str(report), *files]
    process = subprocess.Popen(
        command,
        cwd=directory,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    output = _communicate(process, directory)
    by_module: dict[str, dict[str, str]] = {}
    for module, test_id, outcome in read_junit_cases(report):
        by_module.setdefault(module, {})[test_id] = outcome
    return by_module, process.returncode, output


def _copy_siblings(directory: Path) -> None:
    """The modules fixtures import their bases from (``common_*.py``, like test_c10d_common.py)."""
    for sibling in FIXTURES.glob("common_*.py"):
        (directory / sibling.name).write_bytes(sibling.read_bytes())


def _by_outcome(run: Run) -> dict[str, Counter]:
    """outcome -> Counter of ``Class.test`` ids, migrated classes named as their originals."""
    found: dict[str, Counter] = {}
    for test_id, outcome in run.outcomes.items():
        cls, test = test_id.split(".")
        found.setdefault(outcome, Counter())[f"{run.renamed.get(cls, cls)}.{test}"] += 1
    return found


def _accelerators() -> int:
    import torch

    return torch.accelerator.device_count()


def _runtimes(fixture: str) -> tuple[str, ...]:
    return RUNTIMES if fixture in TORCH_RUNTIME_FIXTURES else RUNTIMES[:1]


@pytest.mark.parametrize(
    "fixture, runtime", [(f.name, r) for f in GLOO_FIXTURES for r in _runtimes(f.name)]
)
def test_migrated_file_passes_and_skips_the_same_tests(runs, fixture: str, runtime: str) -> None:
    original, migrated = runs[(fixture, "original")], runs[(fixture, runtime)]
    for name, run in (("original", original), (runtime, migrated)):
        outcomes = _by_outcome(run)
        assert run.outcomes, f"{fixture} ({name}) reported no test:\n{run.tail()}"
        if fixture in NEEDS_ACCELERATORS and _accelerators() < 2:  # FSDPTest: every test skips
            assert set(outcomes) == {"skipped"}, f"{fixture} ({name}): {outcomes}\n{run.tail()}"
        else:
            assert outcomes.get("passed"), f"{fixture} ({name}): no test passed:\n{run.tail()}"
        assert not outcomes.get("failed") and not outcomes.get("error"), (
            f"{fixture} ({name}) had failures: {outcomes}\n{run.tail(6000)}"
        )
        assert run.code == 0, f"{fixture} ({name}) exited {run.code}:\n{run.tail()}"
    before, after = _by_outcome(original), _by_outcome(migrated)
    assert after.get("passed") == before.get("passed")
    assert after.get("skipped", Counter()) == before.get("skipped", Counter())
    # Something really moved: a test of a migrated class ran.
    assert migrated.renamed, "no class was migrated"
    assert any(test_id.split(".")[0] in migrated.renamed for test_id in migrated.outcomes)


def test_fixtures_exercise_skips_and_subclasses(runs) -> None:
    """The gloo fixtures cover a skipped moved test and a subclass with a continuous counterpart."""
    skipped_moved = any(
        outcome == "skipped" and test_id.split(".")[0] in run.renamed
        for fixture in GLOO_FIXTURES
        for run in [runs[(fixture.name, "distlint")]]
        for test_id, outcome in run.outcomes.items()
    )
    assert skipped_moved
    helper = runs[("test_gloo_helper_pg.py", "distlint")].renamed
    assert helper.get("ProcessGroupGlooLazyInitTestContinuous") == "ProcessGroupGlooLazyInitTest"


def test_recorder_reports_each_outcome_of_the_main_block_run(tmp_path) -> None:
    """The recorder runs a file's own main block (argv and all) and reports every outcome; a
    test reported several times (a failed subtest) counts its worst outcome."""
    script = tmp_path / "test_sample.py"
    script.write_text(
        textwrap.dedent("""
        import sys
        import unittest

        class ATest(unittest.TestCase):
            def test_pass(self):
                pass

            @unittest.skip("no gloo")
            def test_skip(self):
                pass

            def test_fail(self):
                self.fail("boom")

            def test_error(self):
                raise RuntimeError("broken")

            def test_subtest(self):
                for value in (1, 2):
                    with self.subTest(value=value):
                        self.assertEqual(value, 1)

        if __name__ == "__main__":
            print("a library warning on stdout: ran 99 tests, OK")
            unittest.main(argv=sys.argv)
    """)
    )
    report = tmp_path / "report.jsonl"
    done = subprocess.run(
        [sys.executable, str(RECORDER), str(report), script.name, "ATest"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert read_outcomes(report) == {
        "ATest.test_pass": "passed",
        "ATest.test_skip": "skipped",
        "ATest.test_fail": "failed",
        "ATest.test_error": "error",
        "ATest.test_subtest": "failed",
    }
    assert read_outcomes(tmp_path / "missing.jsonl") == {}

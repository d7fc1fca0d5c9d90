"""Proof that migrated files still test the same thing: run them.

For every gloo fixture in ``fixtures/migrate``, the original file and the migrated file
(``distlint.runtime``; with ``DISTLINT_TEST_TORCH_RUNTIME=1`` also torch's
``MultiProcContinuousTest``, ``--runtime torch``, for the fixture with a subclass and an
``opts()``) run as separate processes through
their own ``__main__`` blocks (gloo, world size 2, CPU), two at a time (two cores). A ``sitecustomize`` on their ``PYTHONPATH`` records every test
outcome of the main process (pass, skip, failure, error) to a file, whatever runner the
main block uses. Then: no failure or error anywhere, and the same test ids pass and skip
in the original and in each migrated file, once a migrated class name is mapped back to
the class it came from (from the migration report).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from distlint.codemods.migrate_continuous import MigrateOptions, migrate_source

pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch.testing._internal needs it

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "migrate"
GLOO_FIXTURES = sorted(FIXTURES.glob("test_gloo_*.py"))
RUNTIMES = ("distlint", "torch")
#: Fixtures also run on torch's continuous class (``--runtime torch``). Not cheap (about
#: 25 s more on two cores: every class's workers import torch.testing._internal), so only
#: with DISTLINT_TEST_TORCH_RUNTIME=1; the golden and collection tests cover its code.
TORCH_RUNTIME_FIXTURES = ("test_gloo_helper_pg.py",) if os.environ.get("DISTLINT_TEST_TORCH_RUNTIME") == "1" else ()
#: A whole file must finish well within this (per-test originals cost ~4 s per test).
RUN_TIMEOUT_S = 300
PARALLEL_RUNS = 2

RECORDER = textwrap.dedent('''
    """Test-outcome recorder for distlint's equivalence test (loaded as sitecustomize)."""
    import json
    import os
    import unittest

    _PATH = os.environ.get("DISTLINT_OUTCOMES")
    # Only the process the test starts records: its workers inherit this variable.
    os.environ.setdefault("DISTLINT_OUTCOMES_OWNER", str(os.getpid()))


    def _record(test, outcome):
        if not _PATH or os.environ["DISTLINT_OUTCOMES_OWNER"] != str(os.getpid()):
            return
        with open(_PATH, "a") as handle:
            handle.write(json.dumps({"id": test.id(), "outcome": outcome}) + "\\n")


    def _wrap(name, outcome):
        original = getattr(unittest.TestResult, name)

        def method(self, test, *args):
            _record(test, outcome)
            return original(self, test, *args)

        setattr(unittest.TestResult, name, method)


    _wrap("addSuccess", "passed")
    _wrap("addSkip", "skipped")
    _wrap("addFailure", "failed")
    _wrap("addError", "error")
    _wrap("addExpectedFailure", "passed")
    _wrap("addUnexpectedSuccess", "failed")
''')


def _run(script: Path, recorder_dir: Path) -> Tuple[List[dict], str, int]:
    outcomes = script.with_suffix(".outcomes.jsonl")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(recorder_dir), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["DISTLINT_OUTCOMES"] = str(outcomes)
    env.pop("DISTLINT_OUTCOMES_OWNER", None)
    # Run the files as a developer would: under CI=true torch's run_tests() switches to
    # XML reports (needs xmlrunner) and CI-only test filtering, which is not what we compare.
    for name in ("CI", "GITHUB_ACTIONS", "PYTORCH_TEST_CUDA_MEM_LEAK_CHECK"):
        env.pop(name, None)
    # Its own session, so that a timeout kills the workers too.
    process = subprocess.Popen([sys.executable, script.name], cwd=script.parent, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_session(process)
        output, _ = process.communicate()
        raise AssertionError(f"{script} did not finish in {RUN_TIMEOUT_S} s:\n{output.decode(errors='replace')[-4000:]}")
    finally:
        _kill_session(process)  # leftovers of a run that exited (workers must not outlive it)
    records = [json.loads(line) for line in outcomes.read_text().splitlines()] if outcomes.exists() else []
    return records, output.decode(errors="replace"), process.returncode


def _kill_session(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Dict[Tuple[str, str], dict]:
    """Every gloo fixture, original and migrated for each runtime, run concurrently."""
    base = tmp_path_factory.mktemp("equivalence")
    recorder_dir = base / "recorder"
    recorder_dir.mkdir()
    (recorder_dir / "sitecustomize.py").write_text(RECORDER)
    jobs: Dict[Tuple[str, str], Tuple[Path, Dict[str, str]]] = {}
    for fixture in GLOO_FIXTURES:
        source = fixture.read_bytes()
        original_dir = base / fixture.stem / "original"
        original_dir.mkdir(parents=True)
        (original_dir / fixture.name).write_bytes(source)
        jobs[(fixture.name, "original")] = (original_dir / fixture.name, {})
        for runtime in _runtimes(fixture.name):
            result = migrate_source(source, fixture.name, options=MigrateOptions(runtime=runtime))
            assert result.error is None and result.changed, f"{fixture.name} ({runtime}) must migrate"
            directory = base / fixture.stem / runtime
            directory.mkdir()
            (directory / fixture.name).write_bytes(result.migrated)
            renamed = {c.continuous: c.name for c in result.report.classes if c.continuous}
            jobs[(fixture.name, runtime)] = (directory / fixture.name, renamed)
    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS) as pool:
        futures = {key: pool.submit(_run, script, recorder_dir) for key, (script, _) in jobs.items()}
        results = {}
        for key, future in futures.items():
            records, output, code = future.result()
            results[key] = {"records": records, "output": output, "code": code, "renamed": jobs[key][1]}
    return results


def _by_outcome(records: List[dict], renamed: Dict[str, str]) -> Dict[str, Counter]:
    """outcome -> Counter of ``Class.test`` ids, migrated classes named as their originals."""
    found: Dict[str, Counter] = {}
    for record in records:
        *_, cls, test = record["id"].split(".")
        found.setdefault(record["outcome"], Counter())[f"{renamed.get(cls, cls)}.{test}"] += 1
    return found


def _runtimes(fixture: str) -> Tuple[str, ...]:
    return RUNTIMES if fixture in TORCH_RUNTIME_FIXTURES else RUNTIMES[:1]


@pytest.mark.parametrize("fixture, runtime", [(f.name, r) for f in GLOO_FIXTURES for r in _runtimes(f.name)])
def test_migrated_file_passes_and_skips_the_same_tests(runs, fixture: str, runtime: str) -> None:
    original, migrated = runs[(fixture, "original")], runs[(fixture, runtime)]
    for name, run in (("original", original), (runtime, migrated)):
        outcomes = _by_outcome(run["records"], run["renamed"])
        assert run["records"], f"{fixture} ({name}) recorded no test:\n{run['output'][-4000:]}"
        assert not outcomes.get("failed") and not outcomes.get("error"), (
            f"{fixture} ({name}) had failures:\n{run['output'][-6000:]}")
        assert run["code"] == 0, f"{fixture} ({name}) exited {run['code']}:\n{run['output'][-4000:]}"
    before = _by_outcome(original["records"], {})
    after = _by_outcome(migrated["records"], migrated["renamed"])
    assert after.get("passed") == before.get("passed")
    assert after.get("skipped", Counter()) == before.get("skipped", Counter())
    # Something really moved, and the skip path is exercised by the fixtures.
    assert migrated["renamed"], "no class was migrated"
    assert any(cls in migrated["renamed"] for r in migrated["records"] for cls in r["id"].split(".")[-2:-1])


def test_fixtures_exercise_skips_and_subclasses(runs) -> None:
    """The gloo fixtures cover a skipped moved test and a subclass with a continuous counterpart."""
    skipped_moved = False
    for fixture in GLOO_FIXTURES:
        run = runs[(fixture.name, "distlint")]
        for record in run["records"]:
            cls = record["id"].split(".")[-2]
            if record["outcome"] == "skipped" and cls in run["renamed"]:
                skipped_moved = True
    assert skipped_moved
    helper = runs[("test_gloo_helper_pg.py", "distlint")]["renamed"]
    assert helper.get("ProcessGroupGlooLazyInitTestContinuous") == "ProcessGroupGlooLazyInitTest"

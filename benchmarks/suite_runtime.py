"""Benchmark: the same distributed suite on torch's per-test spawn, torch's continuous class, and distlint.runtime.

    python benchmarks/suite_runtime.py            # full run (the per-test case takes minutes)
    python benchmarks/suite_runtime.py --quick    # 1 repeat, no torch per-test case

Case 1 — one suite written three ways: 3 classes x 8 tests, one all_reduce each, gloo,
world size 2.  Each file runs as a whole process (``python file.py``), median of N runs.
Case 2 — per-test dispatch cost: a class with 201 trivial tests; the time per test after
the first (pool start-up excluded), measured inside each run.
Case 3 — import cost: ``import torch`` vs ``import torch, distlint.runtime``.

Prints one side-by-side table per case and the targets from issue 4.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent
CLASSES, TESTS = 3, 8

HEADER_TORCH_PER_TEST = """\
import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests
"""

CLASS_TORCH_PER_TEST = """
class Suite{c}(MultiProcessTestCase):
    @property
    def world_size(self):
        return 2

    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def _all_reduce(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)
        t = torch.ones(2) * (self.rank + 1)
        dist.all_reduce(t)
        self.assertEqual(t.tolist(), [3.0, 3.0])
"""

HEADER_TORCH_CONTINUOUS = """\
import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcContinuousTest
from torch.testing._internal.common_utils import run_tests
"""

HEADER_DISTLINT = """\
import torch
import torch.distributed as dist
from distlint.runtime import MultiProcContinuousTest, run_tests
"""

CLASS_CONTINUOUS = """
class Suite{c}(MultiProcContinuousTest):
    world_size = 2

    @classmethod
    def backend_str(cls):
        return "gloo"

    def _all_reduce(self):
        t = torch.ones(2) * (self.rank + 1)
        dist.all_reduce(t)
        self.assertEqual(t.tolist(), [3.0, 3.0])
"""

TEST_METHOD = """
    def test_{t:03d}(self):
        self._all_reduce()
"""

TRIVIAL_METHOD = """
    def test_{t:03d}(self):
        pass
"""

MAIN = """

if __name__ == "__main__":
    run_tests()
"""

# Runs one generated module's tests with unittest and times the tests after the
# first: pool start-up and class set-up are behind it, so what remains per test
# is the dispatch (send, run a trivial body on each rank, collect, decide).
DISPATCH_PROBE = """
import importlib, sys, time, unittest

class Timed(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.stops = []

    def stopTest(self, test):
        super().stopTest(test)
        self.stops.append(time.perf_counter())

if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    module = importlib.import_module(sys.argv[2])
    result = Timed()
    unittest.defaultTestLoader.loadTestsFromModule(module).run(result)
    ok = result.wasSuccessful() and not result.skipped
    per_test_ms = (result.stops[-1] - result.stops[0]) / (len(result.stops) - 1) * 1000
    print(f"DISPATCH tests={result.testsRun} ok={ok} ms_per_test={per_test_ms:.4f}")
"""


def suite_source(header: str, class_template: str, method: str, classes: int, tests: int) -> str:
    parts = [header]
    for c in range(classes):
        parts.append(class_template.format(c=c))
        parts.extend(method.format(t=t) for t in range(tests))
    parts.append(MAIN)
    return "".join(parts)


def run_file(path: Path, env: Dict[str, str], expect_tests: int, timeout: float) -> Tuple[float, float]:
    """Wall time of ``python path`` and the runner's own "Ran N tests in X s"; fails loudly on a bad run."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(path)], env=env, cwd=path.parent, capture_output=True, text=True, timeout=timeout
    )
    wall = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    ran = re.search(r"Ran (\d+) tests? in ([\d.]+)s", output)
    if proc.returncode != 0 or ran is None or int(ran.group(1)) != expect_tests or "OK" not in output:
        raise SystemExit(f"benchmark run of {path.name} did not pass all {expect_tests} tests:\n{output[-3000:]}")
    return wall, float(ran.group(2))


def measure(
    path: Path, env: Dict[str, str], expect_tests: int, repeats: int, timeout: float
) -> List[Tuple[float, float]]:
    runs = []
    for _ in range(repeats):
        runs.append(run_file(path, env, expect_tests, timeout))
        print(f"  {path.name}: {runs[-1][0]:.2f} s wall", file=sys.stderr, flush=True)
    return runs


def median(values) -> float:
    return statistics.median(values)


def dispatch_ms(probe: Path, module: Path, env: Dict[str, str], repeats: int) -> Tuple[List[float], List[float]]:
    """Per-test dispatch (ms, measured inside the run after the first test) and whole-run wall, per repeat."""
    per_test, walls = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, str(probe), str(module.parent), module.stem],
            env=env, cwd=module.parent, capture_output=True, text=True, timeout=900,
        )
        walls.append(time.perf_counter() - start)
        found = re.search(r"DISPATCH tests=(\d+) ok=(\w+) ms_per_test=([\d.]+)", proc.stdout)
        if proc.returncode != 0 or found is None or found.group(1) != "201" or found.group(2) != "True":
            raise SystemExit(f"dispatch probe on {module.name} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
        per_test.append(float(found.group(3)))
        print(f"  {module.name}: {per_test[-1]:.3f} ms/test, {walls[-1]:.2f} s wall", file=sys.stderr, flush=True)
    return per_test, walls


def own_import_seconds(env: Dict[str, str], repeats: int) -> float:
    """distlint.runtime's cumulative import time when torch is already imported (python -X importtime)."""
    samples = []
    for _ in range(repeats):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import torch; import distlint.runtime"],
            env=env, capture_output=True, text=True, check=True,
        )
        line = [l for l in proc.stderr.splitlines() if l.rstrip().endswith("| distlint.runtime")][-1]
        samples.append(int(line.split("|")[1]) / 1e6)
    return median(samples)


def import_time(statement: str, env: Dict[str, str], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], env=env, check=True)
        walls.append(time.perf_counter() - start)
    return median(walls)


def table(rows: List[Tuple[str, ...]], header: Tuple[str, ...]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = lambda row: "| " + " | ".join(str(v).ljust(w) for v, w in zip(row, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per case (median reported)")
    parser.add_argument("--quick", action="store_true", help="1 repeat and skip torch's per-test case")
    parser.add_argument("--skip-per-test", action="store_true", help="skip torch's per-test case (minutes)")
    parser.add_argument("--cases", default="1,2,3", help="which cases to run, e.g. 2,3")
    args = parser.parse_args(argv)
    cases = {int(c) for c in args.cases.split(",")}
    repeats = 1 if args.quick else args.repeats
    skip_per_test = args.skip_per_test or args.quick

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.pop("DISTLINT_START_METHOD", None)
    env.pop("DISTLINT_TEST_TIMEOUT", None)
    spawn_env = dict(env, DISTLINT_START_METHOD="spawn")
    total = CLASSES * TESTS
    load_before = os.getloadavg()[0]  # other work on the machine shows in every figure

    with tempfile.TemporaryDirectory(prefix="distlint-bench-") as tmp:
        root = Path(tmp)

        def write(name: str, source: str) -> Path:
            path = root / name
            path.write_text(textwrap.dedent(source))
            return path

        per_test = write(
            "torch_per_test.py",
            suite_source(HEADER_TORCH_PER_TEST, CLASS_TORCH_PER_TEST, TEST_METHOD, CLASSES, TESTS),
        )
        torch_cont = write(
            "torch_continuous.py",
            suite_source(HEADER_TORCH_CONTINUOUS, CLASS_CONTINUOUS, TEST_METHOD, CLASSES, TESTS),
        )
        ours = write(
            "distlint_continuous.py", suite_source(HEADER_DISTLINT, CLASS_CONTINUOUS, TEST_METHOD, CLASSES, TESTS)
        )
        ours_201 = write(
            "distlint_trivial_201.py", suite_source(HEADER_DISTLINT, CLASS_CONTINUOUS, TRIVIAL_METHOD, 1, 201)
        )
        torch_201 = write(
            "torch_trivial_201.py", suite_source(HEADER_TORCH_CONTINUOUS, CLASS_CONTINUOUS, TRIVIAL_METHOD, 1, 201)
        )

        results: Dict[str, List[Tuple[float, float]]] = {}
        if 1 in cases:
            print(f"case 1: {CLASSES} classes x {TESTS} tests, one all_reduce each", file=sys.stderr)
            results["distlint.runtime (fork server)"] = measure(ours, env, total, repeats, 600)
            results["distlint.runtime (DISTLINT_START_METHOD=spawn)"] = measure(ours, spawn_env, total, repeats, 600)
            results["torch MultiProcContinuousTest"] = measure(torch_cont, env, total, repeats, 900)
            if not skip_per_test:
                results["torch MultiProcessTestCase (per-test spawn)"] = measure(per_test, env, total, repeats, 3600)

        dispatch = {}
        if 2 in cases:
            print("case 2: per-test dispatch, 201 trivial tests", file=sys.stderr)
            probe = write("dispatch_probe.py", DISPATCH_PROBE)
            dispatch["distlint.runtime"] = dispatch_ms(probe, ours_201, env, repeats)
            dispatch["torch MultiProcContinuousTest"] = dispatch_ms(probe, torch_201, env, repeats)

        import_repeats = max(5, repeats)
        if 3 in cases:
            print("case 3: import time", file=sys.stderr)
            t_python = import_time("pass", env, import_repeats)
            t_torch = import_time("import torch", env, import_repeats)
            t_both = import_time("import torch, distlint.runtime", env, import_repeats)
            t_ours = import_time("import distlint.runtime", env, import_repeats)
            t_own = own_import_seconds(env, import_repeats)

    load_after = os.getloadavg()[0]
    print(
        f"\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"load average {load_before:.1f} before / {load_after:.1f} after"
    )
    if 1 in cases:
        ours_wall = median(w for w, _ in results["distlint.runtime (fork server)"])
        rows = []
        for name, runs in results.items():
            wall = median(w for w, _ in runs)
            ran = median(r for _, r in runs)
            runs_text = " ".join(f"{w:.1f}" for w, _ in runs)
            rows.append((name, f"{wall:.2f}", f"{ran:.2f}", runs_text, f"{wall / ours_wall:.2f}x"))
        print(f"\nCase 1: {CLASSES} classes x {TESTS} tests (one all_reduce each), gloo, world size 2, ", end="")
        print(f"median of {repeats}\n")
        print(table(rows, ("runtime", "wall s", "unittest 'Ran' s", "runs (wall s)", "wall / distlint")))

        torch_cont_wall = median(w for w, _ in results["torch MultiProcContinuousTest"])
        print("\nTargets:")
        if "torch MultiProcessTestCase (per-test spawn)" in results:
            per_test_wall = median(w for w, _ in results["torch MultiProcessTestCase (per-test spawn)"])
            speedup = per_test_wall / ours_wall
            verdict = "met" if speedup >= 15 else "MISSED"
            print(f"  per-test spawn / distlint = {speedup:.1f}x   (target >= 15x: {verdict})")
        ratio = ours_wall / torch_cont_wall
        print(f"  distlint / torch continuous = {ratio:.2f}   (target <= 0.5: {'met' if ratio <= 0.5 else 'MISSED'})")

    if 2 in cases:
        rows = []
        for name, (per_test, walls) in dispatch.items():
            runs_text = " ".join(f"{v:.3f}" for v in per_test)
            rows.append((name, f"{median(per_test):.3f}", runs_text, f"{median(walls):.2f}"))
        print(f"\nCase 2: per-test dispatch, 201 trivial tests, world size 2, median of {repeats}")
        print("(measured inside each run from the end of test 1 to the end of test 201: start-up excluded)\n")
        print(table(rows, ("runtime", "ms/test", "runs (ms/test)", "whole run wall s")))
        ms = median(dispatch["distlint.runtime"][0])
        print(f"\n  distlint dispatch = {ms:.3f} ms/test   (target < 2 ms: {'met' if ms < 2 else 'MISSED'})")

    if 3 in cases:
        print(f"\nCase 3: import time (median of {import_repeats} fresh interpreters, start-up subtracted)\n")
        rows = [
            ("import torch", f"{t_torch - t_python:.3f}"),
            ("import distlint.runtime (torch imported lazily)", f"{t_ours - t_python:.3f}"),
            ("import torch, distlint.runtime", f"{t_both - t_python:.3f}"),
            ("distlint.runtime after torch (-X importtime, cumulative)", f"{t_own:.3f}"),
        ]
        print(table(rows, ("statement", "seconds")))
        print(
            f"\n  distlint.runtime on top of torch = {t_own:.3f} s by -X importtime, {t_both - t_torch:+.3f} s by wall"
            f"   (target <= 0.2 s: {'met' if t_own <= 0.2 else 'MISSED'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the same distributed suite on torch's per-test spawn, torch's continuous class, and distlint.runtime.

    python benchmarks/suite_runtime.py --repeats 3 --per-test-repeats 1   # about 10 min on 2 cores
    python benchmarks/suite_runtime.py --quick    # 1 repeat, no torch per-test case

Case 1 — one suite written three ways: 3 classes x 8 tests, one all_reduce each, gloo,
world size 2.  Each file runs as a whole process (``python file.py``), median of N runs.
Case 2 — per-test dispatch cost: a class with 201 trivial tests; the time per test after
the first (pool start-up excluded), measured inside each run.
Case 3 — import cost: ``import torch`` vs ``import torch, distlint.runtime``.

Variants are interleaved: every repeat runs each variant once (A B C, A B C, ...), so
load that drifts during the run reaches every variant alike.  A run counts only if
every test passed: the tests record themselves in a log file (and the dispatch probe
writes its result as JSON), which the script checks instead of the runners' text; a
run in which anything failed or skipped stops the benchmark with a non-zero exit.

Prints one side-by-side table of medians per case and the targets from issue 4.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
CLASSES, TESTS = 3, 8
# Each test that passed appends "Class.test" here (rank 0 only): what the script checks.
BENCH_LOG_ENV = "DISTLINT_BENCH_LOG"

RECORD = """\
import os


def _record(test):
    if test.rank == 0:
        with open(os.environ["DISTLINT_BENCH_LOG"], "a") as log:
            log.write(f"{type(test).__name__}.{test._testMethodName}\\n")

"""

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
        _record(self)
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
import importlib, json, sys, time, unittest

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
    per_test_ms = (result.stops[-1] - result.stops[0]) / (len(result.stops) - 1) * 1000
    summary = {
        "tests": result.testsRun,
        "problems": len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses),
        "skipped": len(result.skipped),
        "ms_per_test": per_test_ms,
    }
    with open(sys.argv[3], "w") as handle:
        json.dump(summary, handle)
"""


def suite_source(header: str, class_template: str, method: str, classes: int, tests: int) -> str:
    parts = [header, RECORD]
    for c in range(classes):
        parts.append(class_template.format(c=c))
        parts.extend(method.format(t=t) for t in range(tests))
    parts.append(MAIN)
    return "".join(parts)


def expected_tests(classes: int, tests: int) -> list[str]:
    return sorted(f"Suite{c}.test_{t:03d}" for c in range(classes) for t in range(tests))


def run_file(
    path: Path, env: dict[str, str], expect: list[str], timeout: float
) -> tuple[float, float | None]:
    """Wall time of ``python path`` (and, for the table only, the runner's "Ran N tests in X s").

    The run counts only if it exited 0 and every expected test recorded that it
    passed, each once; anything else (a failure, a skip, a test that never ran)
    stops the benchmark.
    """
    log = path.with_suffix(".log")
    log.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(path)],
        env=dict(env, **{BENCH_LOG_ENV: str(log)}),
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    wall = time.perf_counter() - start
    passed = sorted(log.read_text().splitlines()) if log.exists() else []
    if proc.returncode != 0 or passed != expect:
        missing = sorted(set(expect) - set(passed))
        raise SystemExit(
            f"error: benchmark run of {path.name} did not pass all {len(expect)} tests "
            f"(exit {proc.returncode}; {len(passed)} recorded a pass; not passed: {', '.join(missing[:5]) or '-'}"
            f"{' ...' if len(missing) > 5 else ''}):\n{(proc.stdout + proc.stderr)[-3000:]}"
        )
    ran = re.search(r"Ran \d+ tests? in ([\d.]+)s", proc.stdout + proc.stderr)
    return wall, float(ran.group(1)) if ran else None


def interleaved(
    variants: dict[str, Callable[[], object]], repeats: dict[str, int]
) -> dict[str, list]:
    """Run every variant once per repeat, in turn (A B C, A B C, ...); each variant's results in order."""
    results: dict[str, list] = {name: [] for name in variants}
    for round_ in range(max(repeats.values())):
        for name, run in variants.items():
            if round_ < repeats[name]:
                results[name].append(run())
                shown = results[name][-1]
                shown = " ".join(
                    "-" if v is None else f"{v:.3f}"
                    for v in (shown if isinstance(shown, tuple) else [shown])
                )
                print(f"  repeat {round_ + 1}: {name}: {shown}", file=sys.stderr, flush=True)
    return results


def median(values) -> float:
    return statistics.median(values)


def dispatch_ms(probe: Path, module: Path, env: dict[str, str]) -> tuple[float, float]:
    """Per-test dispatch (ms, measured inside the run after the first test) and whole-run wall of one run."""
    result = module.with_suffix(".json")
    result.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(probe), str(module.parent), module.stem, str(result)],
        env=env,
        cwd=module.parent,
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall = time.perf_counter() - start
    summary = json.loads(result.read_text()) if result.exists() else {}
    if (
        proc.returncode != 0
        or summary.get("tests") != 201
        or summary.get("problems")
        or summary.get("skipped")
    ):
        raise SystemExit(
            f"error: dispatch probe on {module.name} did not pass all 201 tests ({summary or 'no result'}):\n"
            f"{(proc.stdout + proc.stderr)[-3000:]}"
        )
    return summary["ms_per_test"], wall


def own_import_seconds(env: dict[str, str]) -> float:
    """distlint.runtime's cumulative import time when torch is already imported (python -X importtime)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import torch; import distlint.runtime"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    line = [
        entry for entry in proc.stderr.splitlines() if entry.rstrip().endswith("| distlint.runtime")
    ][-1]
    return int(line.split("|")[1]) / 1e6


def import_time(statement: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], env=env, check=True)
    return time.perf_counter() - start


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = lambda row: "| " + " | ".join(str(v).ljust(w) for v, w in zip(row, widths)) + " |"  # noqa: E731
    return "\n".join(
        [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per variant (median reported)")
    parser.add_argument(
        "--per-test-repeats",
        type=int,
        help="runs of torch's per-test case (minutes each), in the first repeats; default: --repeats",
    )
    parser.add_argument(
        "--quick", action="store_true", help="1 repeat and skip torch's per-test case"
    )
    parser.add_argument(
        "--skip-per-test", action="store_true", help="skip torch's per-test case (minutes)"
    )
    parser.add_argument("--cases", default="1,2,3", help="which cases to run, e.g. 2,3")
    args = parser.parse_args(argv)
    cases = {int(c) for c in args.cases.split(",")}
    repeats = 1 if args.quick else args.repeats
    per_test_repeats = (
        0 if args.skip_per_test or args.quick else min(repeats, args.per_test_repeats or repeats)
    )
    if repeats < 1:
        parser.error("--repeats must be at least 1")

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.pop("DISTLINT_START_METHOD", None)
    env.pop("DISTLINT_TEST_TIMEOUT", None)
    spawn_env = dict(env, DISTLINT_START_METHOD="spawn")
    expect = expected_tests(CLASSES, TESTS)
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
            "distlint_continuous.py",
            suite_source(HEADER_DISTLINT, CLASS_CONTINUOUS, TEST_METHOD, CLASSES, TESTS),
        )
        ours_201 = write(
            "distlint_trivial_201.py",
            suite_source(HEADER_DISTLINT, CLASS_CONTINUOUS, TRIVIAL_METHOD, 1, 201),
        )
        torch_201 = write(
            "torch_trivial_201.py",
            suite_source(HEADER_TORCH_CONTINUOUS, CLASS_CONTINUOUS, TRIVIAL_METHOD, 1, 201),
        )

        results: dict[str, list] = {}
        if 1 in cases:
            print(
                f"case 1: {CLASSES} classes x {TESTS} tests, one all_reduce each", file=sys.stderr
            )
            variants: dict[str, Callable[[], object]] = {
                "distlint.runtime (fork server)": lambda: run_file(ours, env, expect, 600),
                "distlint.runtime (DISTLINT_START_METHOD=spawn)": lambda: run_file(
                    ours, spawn_env, expect, 600
                ),
                "torch MultiProcContinuousTest": lambda: run_file(torch_cont, env, expect, 900),
                "torch MultiProcessTestCase (per-test spawn)": lambda: run_file(
                    per_test, env, expect, 3600
                ),
            }
            counts = {name: repeats for name in variants}
            counts["torch MultiProcessTestCase (per-test spawn)"] = per_test_repeats
            results = {name: runs for name, runs in interleaved(variants, counts).items() if runs}

        dispatch: dict[str, list] = {}
        if 2 in cases:
            print("case 2: per-test dispatch, 201 trivial tests", file=sys.stderr)
            probe = write("dispatch_probe.py", DISPATCH_PROBE)
            dispatch = interleaved(
                {
                    "distlint.runtime": lambda: dispatch_ms(probe, ours_201, env),
                    "torch MultiProcContinuousTest": lambda: dispatch_ms(probe, torch_201, env),
                },
                {"distlint.runtime": repeats, "torch MultiProcContinuousTest": repeats},
            )

        import_repeats = max(5, repeats)
        imports: dict[str, list] = {}
        if 3 in cases:
            print("case 3: import time", file=sys.stderr)
            statements = {
                "pass": "pass",
                "torch": "import torch",
                "both": "import torch, distlint.runtime",
                "ours": "import distlint.runtime",
            }
            variants = {key: (lambda s=s: import_time(s, env)) for key, s in statements.items()}
            variants["own"] = lambda: own_import_seconds(env)
            imports = interleaved(variants, {key: import_repeats for key in variants})

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
            reported = [r for _, r in runs if r is not None]
            ran = f"{median(reported):.2f}" if reported else "-"
            runs_text = " ".join(f"{w:.1f}" for w, _ in runs)
            rows.append((name, f"{wall:.2f}", ran, runs_text, f"{wall / ours_wall:.2f}x"))
        print(
            f"\nCase 1: {CLASSES} classes x {TESTS} tests (one all_reduce each), gloo, world size 2, ",
            end="",
        )
        print(f"median of {repeats} interleaved repeats (per-test spawn: {per_test_repeats})\n")
        print(
            table(
                rows, ("runtime", "wall s", "unittest 'Ran' s", "runs (wall s)", "wall / distlint")
            )
        )

        torch_cont_wall = median(w for w, _ in results["torch MultiProcContinuousTest"])
        print("\nTargets:")
        if "torch MultiProcessTestCase (per-test spawn)" in results:
            per_test_wall = median(
                w for w, _ in results["torch MultiProcessTestCase (per-test spawn)"]
            )
            speedup = per_test_wall / ours_wall
            verdict = "met" if speedup >= 15 else "MISSED"
            print(f"  per-test spawn / distlint = {speedup:.1f}x   (target >= 15x: {verdict})")
        ratio = ours_wall / torch_cont_wall
        print(
            f"  distlint / torch continuous = {ratio:.2f}   (target <= 0.5: {'met' if ratio <= 0.5 else 'MISSED'})"
        )

    if 2 in cases:
        rows = []
        for name, runs in dispatch.items():
            per_test_ms = [ms for ms, _ in runs]
            runs_text = " ".join(f"{v:.3f}" for v in per_test_ms)
            rows.append(
                (name, f"{median(per_test_ms):.3f}", runs_text, f"{median(w for _, w in runs):.2f}")
            )
        print(
            f"\nCase 2: per-test dispatch, 201 trivial tests, world size 2, median of {repeats} interleaved repeats"
        )
        print(
            "(measured inside each run from the end of test 1 to the end of test 201: start-up excluded)\n"
        )
        print(table(rows, ("runtime", "ms/test", "runs (ms/test)", "whole run wall s")))
        ms = median(ms for ms, _ in dispatch["distlint.runtime"])
        print(
            f"\n  distlint dispatch = {ms:.3f} ms/test   (target < 2 ms: {'met' if ms < 2 else 'MISSED'})"
        )

    if 3 in cases:
        t = {key: median(values) for key, values in imports.items()}
        print(
            f"\nCase 3: import time (median of {import_repeats} interleaved fresh interpreters, start-up subtracted)\n"
        )
        rows = [
            ("import torch", f"{t['torch'] - t['pass']:.3f}"),
            ("import distlint.runtime (torch imported lazily)", f"{t['ours'] - t['pass']:.3f}"),
            ("import torch, distlint.runtime", f"{t['both'] - t['pass']:.3f}"),
            ("distlint.runtime after torch (-X importtime, cumulative)", f"{t['own']:.3f}"),
        ]
        print(table(rows, ("statement", "seconds")))
        print(
            f"\n  distlint.runtime on top of torch = {t['own']:.3f} s by -X importtime, "
            f"{t['both'] - t['torch']:+.3f} s by wall   (target <= 0.2 s: {'met' if t['own'] <= 0.2 else 'MISSED'})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

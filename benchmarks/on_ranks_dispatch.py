"""Benchmark: ``@on_ranks`` tests on a shared pool vs the same tests with per-test ``mp.spawn``.

    python benchmarks/on_ranks_dispatch.py                 # 16 tests, 200 dispatches
    python benchmarks/on_ranks_dispatch.py --tests 8 --calls 100

1. **Dispatch cost.**  A module with one ``@on_ranks(2, backend="gloo")`` test that does nothing
   is imported in a fresh process; its dispatcher is called once (the pool starts) and then
   ``--calls`` times: the median and 90th percentile of one call is the whole round trip of a
   passing test on a warm pool (pickling its fixtures, one message to each rank, the rank finding
   and calling the function, the answers, the one outcome decision), pytest not included.
2. **Whole runs.**  ``--tests`` tests, each one ``all_reduce`` of world size 2 on gloo, written
   twice: as ``@on_ranks`` tests, and as plain pytest tests that each ``torch.multiprocessing.
   spawn`` two ranks that create a gloo PG (``FileStore``), all-reduce, check and destroy it
   (how plain-pytest suites write them by hand).  Each file runs as a whole process,
   ``python -m pytest -q``; every test must pass (read from its JUnit XML report), else the
   script stops with a non-zero status.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ON_RANKS_FILE = """
import torch
import torch.distributed as dist
from distlint.runtime import on_ranks
{tests}
"""
ON_RANKS_TEST = """

@on_ranks(2, backend="gloo")
def test_all_reduce_{i}(rank):
    t = torch.ones(1) * (rank + 1)
    dist.all_reduce(t)
    assert t.item() == 3
"""

SPAWN_FILE = """
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _all_reduce(rank, world_size, path):
    store = dist.FileStore(path, world_size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size)
    try:
        t = torch.ones(1) * (rank + 1)
        dist.all_reduce(t)
        assert t.item() == 3
    finally:
        dist.destroy_process_group()
{tests}
"""
SPAWN_TEST = """

def test_all_reduce_{i}(tmp_path):
    mp.spawn(_all_reduce, args=(2, str(tmp_path / "store")), nprocs=2, join=True)
"""

DISPATCH_MODULE = """
from distlint.runtime import on_ranks


@on_ranks(2, backend="gloo")
def test_noop(rank):
    pass
"""

DISPATCH_DRIVER = """
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
os.environ["PYTEST_CURRENT_TEST"] = "bench_dispatch.py::test_noop (call)"
import bench_dispatch
start = time.perf_counter()
bench_dispatch.test_noop()
cold = time.perf_counter() - start
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    bench_dispatch.test_noop()
    times.append(time.perf_counter() - start)
print(json.dumps({"cold": cold, "times": times}))
"""


def run_pytest(path: Path, env: dict, expected: int) -> float:
    report = path.with_suffix(".xml")
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(path),
            f"--junit-xml={report}",
        ],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.perf_counter() - start
    cases = list(ET.parse(report).getroot().iter("testcase"))
    passed = [
        c for c in cases if not any(child.tag in ("failure", "error", "skipped") for child in c)
    ]
    if len(cases) != expected or len(passed) != expected:
        sys.exit(f"{path.name}: {len(passed)} of {expected} tests passed\n{proc.stdout[-3000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=16, help="tests per file")
    parser.add_argument("--calls", type=int, default=200, help="warm dispatches timed")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    for name in (
        "DISTLINT_START_METHOD",
        "DISTLINT_TEST_TIMEOUT",
        "DISTLINT_FAST_START",
        "DISTLINT_FAST_SPAWN",
    ):
        env.pop(name, None)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="distlint-bench-") as tmp:
        root = Path(tmp)
        (root / "bench_dispatch.py").write_text(textwrap.dedent(DISPATCH_MODULE))
        proc = subprocess.run(
            [sys.executable, "-c", DISPATCH_DRIVER, str(root), str(args.calls)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            sys.exit(f"dispatch run failed:\n{proc.stderr[-3000:]}")
        import json

        dispatch = json.loads(proc.stdout.strip().splitlines()[-1])
        times = sorted(dispatch["times"])
        median_ms = statistics.median(times) * 1000
        p90_ms = times[int(0.9 * (len(times) - 1))] * 1000

        tests_on = "".join(ON_RANKS_TEST.format(i=i) for i in range(args.tests))
        tests_spawn = "".join(SPAWN_TEST.format(i=i) for i in range(args.tests))
        on_ranks_file = root / "test_bench_on_ranks.py"
        on_ranks_file.write_text(ON_RANKS_FILE.format(tests=tests_on))
        spawn_file = root / "test_bench_spawn.py"
        spawn_file.write_text(SPAWN_FILE.format(tests=tests_spawn))
        on_ranks_wall = run_pytest(on_ranks_file, env, args.tests)
        spawn_wall = run_pytest(spawn_file, env, args.tests)

    print(
        f"load average before: {load_before:.1f}, after: {os.getloadavg()[0]:.1f} "
        f"({os.cpu_count()} cores)"
    )
    print(
        f"dispatch of a passing @on_ranks test, warm pool of 2 (gloo), {args.calls} calls: "
        f"median {median_ms:.2f} ms, p90 {p90_ms:.2f} ms (first call, pool start: "
        f"{dispatch['cold']:.2f} s)"
    )
    print(
        f"{args.tests} tests, one all_reduce each, world size 2, python -m pytest, whole process:"
    )
    print(f"  @on_ranks on a shared pool: {on_ranks_wall:.1f} s")
    print(f"  per-test mp.spawn:          {spawn_wall:.1f} s")
    print(f"  speed-up: {spawn_wall / on_ranks_wall:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

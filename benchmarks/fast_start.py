"""Benchmark: per-test classes with torch's spawn vs distlint's fast start, beside the migrated suite.

    python benchmarks/fast_start.py --repeats 3 --spawn-repeats 1    # about 10 min on 2 cores
    python benchmarks/fast_start.py --quick                          # 1 repeat, no DTensor case

Case 1 - the suite of benchmarks/suite_runtime.py (3 classes x 8 tests, one all_reduce each,
gloo, world size 2) as torch's per-test ``MultiProcessTestCase``, run four ways as whole
processes (``python file.py``), variants interleaved in every repeat:

* torch spawn: the file as PyTorch writes it (``common_utils.run_tests``);
* distlint fast start: the same file, ``run_tests`` imported from ``distlint.runtime`` in
  place of torch's (what ``distlint migrate`` leaves for classes it does not move);
* distlint fast start, ``distlint.runtime`` imported first: the fork server then starts
  before the file imports torch and imports it on the other core meanwhile;
* distlint continuous: the suite migrated to ``MultiProcContinuousTest`` (one pool, one PG).

Case 2 - a ``DTensorTestBase`` file (world size 4, gloo on CPU, ``@with_comms``): torch spawn
vs fast start.

A run counts only if every test recorded its own pass (rank 0 appends to a log, as in
suite_runtime.py); anything else stops the benchmark.  Prints one table per case and the
targets of issue 11: fast start >= 6x torch spawn (whole process), within 2x of continuous.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Callable

from suite_runtime import (
    CLASS_CONTINUOUS,
    CLASS_TORCH_PER_TEST,
    CLASSES,
    HEADER_DISTLINT,
    HEADER_TORCH_PER_TEST,
    REPO,
    TEST_METHOD,
    TESTS,
    expected_tests,
    interleaved,
    median,
    run_file,
    suite_source,
    table,
)

TORCH_RUN_TESTS = "from torch.testing._internal.common_utils import run_tests\n"
DISTLINT_RUN_TESTS = "from distlint.runtime import run_tests\n"

DTENSOR_TESTS = 6
HEADER_DTENSOR = """\
import torch
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.testing._internal.distributed._tensor.common_dtensor import DTensorTestBase, with_comms
from torch.testing._internal.common_utils import run_tests
"""

CLASS_DTENSOR = """
class DTensorSuite{c}(DTensorTestBase):
    @property
    def world_size(self):
        return 4

    def _redistribute(self):
        mesh = self.build_device_mesh()
        full = torch.arange(16.0).reshape(4, 4)
        sharded = distribute_tensor(full, mesh, [Shard(0)])
        self.assertEqual(sharded.to_local().shape, (1, 4))
        self.assertEqual(sharded.redistribute(mesh, [Replicate()]).to_local(), full)
"""

DTENSOR_METHOD = """
    @with_comms
    def test_{t:03d}(self):
        self._redistribute()
        _record(self)
"""


def fast_start_variants(torch_source: str) -> dict[str, str]:
    """The torch per-test file with distlint's run_tests: in place, and imported first."""
    assert TORCH_RUN_TESTS in torch_source
    in_place = torch_source.replace(TORCH_RUN_TESTS, DISTLINT_RUN_TESTS)
    first = DISTLINT_RUN_TESTS + torch_source.replace(TORCH_RUN_TESTS, "")
    return {"in place": in_place, "first": first}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per variant (median reported)")
    parser.add_argument(
        "--spawn-repeats", type=int, help="runs of the torch spawn variants (minutes each)"
    )
    parser.add_argument("--quick", action="store_true", help="1 repeat, case 1 only")
    parser.add_argument("--cases", default="1,2", help="which cases to run")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    spawn_repeats = min(repeats, args.spawn_repeats or repeats)
    cases = {1} if args.quick else {int(c) for c in args.cases.split(",")}

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    for name in (
        "DISTLINT_START_METHOD",
        "DISTLINT_TEST_TIMEOUT",
        "DISTLINT_FAST_SPAWN",
        "DISTLINT_FAST_START",
    ):
        env.pop(name, None)
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="distlint-bench-") as tmp:
        root = Path(tmp)

        def write(name: str, source: str) -> Path:
            path = root / name
            path.write_text(textwrap.dedent(source))
            return path

        results: dict[int, dict[str, list]] = {}
        if 1 in cases:
            torch_source = suite_source(
                HEADER_TORCH_PER_TEST, CLASS_TORCH_PER_TEST, TEST_METHOD, CLASSES, TESTS
            )
            fast = fast_start_variants(torch_source)
            files = {
                "torch spawn": write("torch_spawn.py", torch_source),
                "distlint fast start": write("fast_start.py", fast["in place"]),
                "distlint fast start, distlint imported first": write(
                    "fast_start_first.py", fast["first"]
                ),
                "distlint continuous (migrated)": write(
                    "continuous.py",
                    suite_source(HEADER_DISTLINT, CLASS_CONTINUOUS, TEST_METHOD, CLASSES, TESTS),
                ),
            }
            expect = expected_tests(CLASSES, TESTS)
            print(
                f"case 1: {CLASSES} classes x {TESTS} per-test tests, one all_reduce each",
                file=sys.stderr,
            )
            variants: dict[str, Callable[[], object]] = {
                name: (lambda path=path: run_file(path, env, expect, 3600))
                for name, path in files.items()
            }
            counts = {name: repeats for name in variants}
            counts["torch spawn"] = spawn_repeats
            results[1] = interleaved(variants, counts)
        if 2 in cases:
            torch_source = suite_source(
                HEADER_DTENSOR, CLASS_DTENSOR, DTENSOR_METHOD, 1, DTENSOR_TESTS
            )
            files = {
                "torch spawn": write("dtensor_spawn.py", torch_source),
                "distlint fast start": write(
                    "dtensor_fast.py", fast_start_variants(torch_source)["in place"]
                ),
            }
            expect = expected_tests(1, DTENSOR_TESTS)
            expect = [name.replace("Suite0", "DTensorSuite0") for name in expect]
            print(f"case 2: DTensorTestBase, world size 4, {DTENSOR_TESTS} tests", file=sys.stderr)
            variants = {
                name: (lambda path=path: run_file(path, env, expect, 3600))
                for name, path in files.items()
            }
            results[2] = interleaved(
                variants, {"torch spawn": spawn_repeats, "distlint fast start": repeats}
            )

    load_after = os.getloadavg()[0]
    print(
        f"\nmachine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"load average {load_before:.1f} before / {load_after:.1f} after"
    )
    titles = {
        1: f"Case 1: {CLASSES} classes x {TESTS} per-test tests (one all_reduce each), gloo, world size 2",
        2: f"Case 2: DTensorTestBase, {DTENSOR_TESTS} tests (distribute, redistribute), gloo, world size 4",
    }
    for case, runs_by_variant in results.items():
        walls = {name: median(w for w, _ in runs) for name, runs in runs_by_variant.items()}
        spawn = walls["torch spawn"]
        rows = []
        for name, runs in runs_by_variant.items():
            reported = [r for _, r in runs if r is not None]
            rows.append(
                (
                    name,
                    f"{walls[name]:.2f}",
                    f"{median(reported):.2f}" if reported else "-",
                    " ".join(f"{w:.1f}" for w, _ in runs),
                    f"{spawn / walls[name]:.1f}x",
                )
            )
        print(
            f"\n{titles[case]}; median of {repeats} interleaved repeats (torch spawn: {spawn_repeats})\n"
        )
        print(
            table(
                rows,
                ("variant", "wall s", "unittest 'Ran' s", "runs (wall s)", "torch spawn / variant"),
            )
        )
        fast = walls["distlint fast start"]
        print("\nTargets:")
        verdict = "met" if spawn / fast >= 6 else "MISSED"
        print(f"  torch spawn / fast start = {spawn / fast:.1f}x   (target >= 6x: {verdict})")
        if "distlint continuous (migrated)" in walls:
            for name in ("distlint fast start", "distlint fast start, distlint imported first"):
                ratio = walls[name] / walls["distlint continuous (migrated)"]
                verdict = "met" if ratio <= 2 else "MISSED"
                print(
                    f"  {name[len('distlint ') :]} / continuous = {ratio:.2f}x   (target <= 2x: {verdict})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

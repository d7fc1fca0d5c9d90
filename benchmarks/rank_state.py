"""Per-test cost of giving each test on a shared rank a fresh process's state (``rank_state``).

What every test on a continuous class's ranks pays: ``rank_state.take()`` before it and
``rank_state.restore()`` after it. Measured in one process that is a rank as the pool's are
(torch imported, a gloo default group of world size 1 initialised, the environment of the
shell), CPU time per snapshot + restore, the variants interleaved in every repeat
(``interleave.py``), median of ``--repeat`` repeats of ``--tests`` calls each:

* clean    - the test changed nothing (the usual case: nothing is restored or formatted);
* leaky    - the test set the default dtype and one environment variable (both restored);
* group    - the test created a process group and left it (destroyed by ``restore``).

Usage: python benchmarks/rank_state.py [--repeat 5] [--tests 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from interleave import interleaved_medians  # noqa: E402

from distlint.runtime import rank_state  # noqa: E402


def _per_test(tests: int, leak) -> float:
    """CPU seconds of take + restore only (the leak itself is not counted), for ``tests`` tests."""
    spent = 0.0
    for _ in range(tests):
        start = time.process_time()
        before = rank_state.take()
        spent += time.process_time() - start
        leak()
        start = time.process_time()
        rank_state.restore(before)
        spent += time.process_time() - start
    return spent


def _nothing() -> None:
    pass


def _dtype_and_environ() -> None:
    torch.set_default_dtype(torch.float64)
    os.environ["DISTLINT_BENCH_PROBE"] = "1"


def _group() -> None:
    dist.new_group([0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tests", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = dist.FileStore(os.path.join(folder, "store"), 1)
        dist.init_process_group("gloo", rank=0, world_size=1, store=store)
        try:
            variants = {
                "clean": lambda: _per_test(args.tests, _nothing),
                "leaky": lambda: _per_test(args.tests, _dtype_and_environ),
                # Creating a group costs milliseconds itself: fewer of them.
                "group": lambda: _per_test(max(1, args.tests // 20), _group) * 20,
            }
            medians = interleaved_medians(variants, args.repeat)
        finally:
            dist.destroy_process_group()
    print(f"environment: {len(os.environ)} variables; torch {torch.__version__}")
    print(f"{'variant':<8} {'us per test':>12}")
    for name, seconds in medians.items():
        print(f"{name:<8} {seconds / args.tests * 1e6:>12.1f}")


if __name__ == "__main__":
    main()

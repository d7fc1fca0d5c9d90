"""A user's own test file under plain ``python -m pytest``, before and after ``distlint migrate``.

No flag, no ini option: the original runs as its users run it today (torch's per-test spawn),
the migrated file (``--runtime distlint``) as it is written, and gets fast start for the classes
that stay per-test because it imports ``distlint.runtime`` (the opt-in rule). Both run from copies
of the folder given (the file's sibling modules, such as ``test_c10d_common.py``, come along), the
same ``-k`` selection, outcomes read from pytest's JUnit XML and compared per test id (moved
classes named as their originals). A run whose outcomes differ from the other side's is reported
and the script exits 1.

Usage: python benchmarks/plain_pytest_speedup.py --source DIR --file test_c10d_gloo.py
       [-k "ProcessGroupGlooTest"] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from distlint.codemods.migrate_continuous import MigrateOptions, migrate_source  # noqa: E402
from distlint.codemods.verify import mapped, renamed_classes  # noqa: E402
from distlint.codemods.verify_run import RunResult, read_junit  # noqa: E402


def run_pytest(folder: Path, file: str, selection: str) -> tuple[dict[str, str], float, float]:
    """Outcomes by ``Class.test``, wall and CPU seconds (the run and its children) of one run."""
    report = folder / "report.xml"
    report.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISTLINT_FAST")}
    env.pop("CI", None)  # torch's run_tests switches to CI behaviour under CI=true
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", file]
    command += ["--junit-xml", str(report), *(["-k", selection] if selection else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return read_junit(report)[0], wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="folder holding the file")
    parser.add_argument("--file", required=True, help="test file name inside --source")
    parser.add_argument("-k", dest="selection", default="", help="pytest -k, both sides")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="plain_pytest_speedup_"))
    try:
        sides = {"original": work / "original", "migrated": work / "migrated"}
        for folder in sides.values():
            shutil.copytree(args.source, folder)
        migrated_path = sides["migrated"] / args.file
        result = migrate_source(
            migrated_path.read_bytes(), str(migrated_path), options=MigrateOptions()
        )
        if result.error or not result.changed:
            print(f"{args.file}: nothing to compare ({result.error or 'migrate changes nothing'})")
            return 1
        migrated_path.write_bytes(result.migrated or b"")
        renamed = renamed_classes(result)
        print(
            f"{args.file}: {result.report.moved_count} tests moved, {result.report.left_count} left"
        )

        walls: dict[str, list[float]] = {side: [] for side in sides}
        cpus: dict[str, list[float]] = {side: [] for side in sides}
        outcomes: dict[str, dict[str, str]] = {}
        for repeat in range(args.repeat):
            order = list(sides) if repeat % 2 == 0 else list(reversed(sides))
            for side in order:
                found, wall, cpu = run_pytest(sides[side], args.file, args.selection)
                if side == "migrated":
                    found = mapped(RunResult(found, wall, 0), renamed)
                walls[side].append(wall)
                cpus[side].append(cpu)
                outcomes[side] = found
                print(
                    f"  {side}: {len(found)} tests {dict(Counter(found.values()))}, "
                    f"wall {wall:.1f} s, CPU {cpu:.1f} s",
                    flush=True,
                )
        before, after = outcomes["original"], outcomes["migrated"]
        differ = sorted(t for t in set(before) | set(after) if before.get(t) != after.get(t))
        wall_before, wall_after = (statistics.median(walls[s]) for s in sides)
        cpu_before, cpu_after = (statistics.median(cpus[s]) for s in sides)
        print("| side | tests | wall (median) | CPU (median) |\n| --- | ---: | ---: | ---: |")
        for side in sides:
            print(
                f"| {side} | {len(outcomes[side])} | {statistics.median(walls[side]):.1f} s "
                f"| {statistics.median(cpus[side]):.1f} s |"
            )
        print(
            f"speed-up: {wall_before / wall_after:.1f}x wall, {cpu_before / cpu_after:.1f}x CPU; "
            f"outcomes kept {len(before) - len(differ)} of {len(before)}"
        )
        for test_id in differ:
            print(f"  differs: {test_id}: {before.get(test_id)} -> {after.get(test_id)}")
        return 1 if differ or not before else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

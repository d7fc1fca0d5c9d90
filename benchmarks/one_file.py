"""One file, cold: what a pre-commit hook pays for a change to that file, this tree beside another.

``distlint check --no-cache FILE`` as a fresh process (interpreter start-up and imports
included), this tree's package and, with ``--other DIR``, the package in ``DIR/distlint``
(an earlier version), alternated run by run so a busy moment of a shared machine hits both;
the table gives each version's median, least and most wall seconds and its CPU median. Both
versions must report the same findings (JSON output), or the script stops.

Usage: python benchmarks/one_file.py FILE [--runs 11] [--other DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lint_throughput import findings, snapshot_distlint, timed_process  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path, help="the file to lint")
    parser.add_argument("--runs", type=int, default=11, help="runs per version (default 11)")
    parser.add_argument("--other", type=Path, metavar="DIR", help="also run DIR/distlint")
    args = parser.parse_args()
    path = args.file.resolve()
    work = Path(tempfile.mkdtemp(prefix="distlint-one-file-"))
    try:
        versions = {"this tree": snapshot_distlint(work / "snapshot")}
        if args.other:
            versions["other (--other)"] = {**os.environ, "PYTHONPATH": str(args.other.resolve())}
        for env in versions.values():
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package, with .pyc files
        command = [sys.executable, "-m", "distlint", "check", "--no-cache", "--format", "json"]
        seen: dict[str, object] = {}
        for label, env in versions.items():  # untimed: compiles the .pyc files
            seen[label] = findings(
                timed_process([*command, str(path)], path.parent, env, (0, 1))[2]
            )
        if len(set(map(repr, seen.values()))) != 1:
            raise SystemExit(f"the versions report different findings: {seen}")
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in versions}
        for repeat in range(args.runs):
            order = list(versions) if repeat % 2 == 0 else list(reversed(versions))
            for label in order:
                wall, cpu, _ = timed_process(
                    [*command, str(path)], path.parent, versions[label], (0, 1)
                )
                runs[label].append((wall, cpu))
        size = path.stat().st_size / 1024
        print(
            f"{path.name} ({size:.0f} KB), {args.runs} runs per version, alternated; load average "
            f"{os.getloadavg()[0]:.1f} at the end; findings: {len(next(iter(seen.values())))}\n"
        )
        print("| version | wall s median | wall s min-max | CPU s median |")
        print("| --- | ---: | --- | ---: |")
        for label, timings in runs.items():
            walls, cpus = [w for w, _ in timings], [c for _, c in timings]
            print(
                f"| {label} | {statistics.median(walls):.2f} | {min(walls):.2f}-{max(walls):.2f} | "
                f"{statistics.median(cpus):.2f} |"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

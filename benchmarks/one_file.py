"""One file, cold: what a pre-commit hook pays for a change to that file, this tree beside another.

``distlint check --no-cache FILE`` as a fresh process (interpreter start-up and imports
included), this tree's package and, with ``--other DIR``, the package in ``DIR/distlint``
(an earlier version), alternated run by run so a busy moment of a shared machine hits both;
the table gives each version's median, least and most wall seconds and its CPU median. Both
versions must report the same findings (JSON output), or the script stops.

Two references run in the same rotation, so that a figure taken while this shared machine is
slow reads as such (its speed drifts 2x within minutes):

* floor: a fresh interpreter that parses the file with stdlib ``ast`` and stops, the least any
  Python linter of that file pays;
* PyTorch's TEST_HAS_MAIN linter as it ships (``pytorch_test_has_main.py``) on the file alone.

Usage: python benchmarks/one_file.py FILE [--runs 11] [--other DIR] [--no-references]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lint_throughput import (  # noqa: E402
    BASELINE,
    alternated_runs,
    findings,
    print_version_table,
    snapshot_distlint,
    timed_process,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path, help="the file to lint")
    parser.add_argument("--runs", type=int, default=11, help="runs per version (default 11)")
    parser.add_argument("--other", type=Path, metavar="DIR", help="also run DIR/distlint")
    parser.add_argument(
        "--no-references",
        action="store_true",
        help="leave out the parse floor and PyTorch's linter",
    )
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
        seen: dict[str, tuple[tuple[str, int, int, str], ...]] = {}
        for label, env in versions.items():  # untimed: compiles the .pyc files
            seen[label] = findings(
                timed_process([*command, str(path)], path.parent, env, (0, 1))[2]
            )
        if len(set(map(repr, seen.values()))) != 1:
            raise SystemExit(f"the versions report different findings: {seen}")

        commands = {label: [*command, str(path)] for label in versions}
        if not args.no_references:
            parse = "import ast, sys; ast.parse(open(sys.argv[1], 'rb').read())"
            references = {
                "floor: interpreter + ast.parse": [sys.executable, "-c", parse, str(path)],
                "PyTorch's TEST_HAS_MAIN linter": [sys.executable, str(BASELINE), str(path)],
            }
            for label, reference in references.items():
                commands[label] = reference
                versions[label] = dict(os.environ)

        def run(label: str) -> tuple[float, float]:
            wall, cpu, _ = timed_process(commands[label], path.parent, versions[label], (0, 1))
            return wall, cpu

        results = alternated_runs(list(commands), args.runs, run)
        size = path.stat().st_size / 1024
        print(
            f"{path.name} ({size:.0f} KB), {args.runs} runs per version, alternated; load average "
            f"{os.getloadavg()[0]:.1f} at the end; findings: {len(next(iter(seen.values())))}\n"
        )
        print_version_table(results, 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

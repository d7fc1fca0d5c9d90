"""Warm ``distlint check`` on a large unchanged tree: what a pre-commit or editor re-run costs.

Builds the generated corpus (``lint_corpus.py``, ``--files`` test modules, seeded) in a
temporary project with a ``pyproject.toml`` holding a ``[tool.distlint]`` table (as a real
checkout has, so its parse is paid), fills the cache, records the stats (files written less
than 2 s before a run are checked by content, so one more run after a pause), then times
``--runs`` warm runs: a fresh ``python -m distlint check`` process each, interpreter
start-up and imports included. With ``--other DIR`` the distlint package in ``DIR/distlint``
(an earlier version) runs too, interleaved run by run, each version with its own cache.

Bytecode: the runs may write ``__pycache__`` (``PYTHONDONTWRITEBYTECODE`` is cleared), as an
installed package has its ``.pyc`` files; the first, untimed runs compile them.

Usage: python benchmarks/warm_run.py [--files 2000] [--runs 11] [--other DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lint_corpus import build_corpus  # noqa: E402
from lint_throughput import (  # noqa: E402
    alternated_runs,
    print_version_table,
    snapshot_distlint,
    timed_process,
)

PYPROJECT = """[project]
name = "warm-run-corpus"
version = "0"

[tool.distlint]
runners = ["run_tests"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--files", type=int, default=2000, help="generated test modules (default 2000)"
    )
    parser.add_argument(
        "--runs", type=int, default=11, help="timed warm runs of each version (default 11)"
    )
    parser.add_argument(
        "--other", type=Path, metavar="DIR", help="also run DIR/distlint, interleaved"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="distlint-warm-"))
    try:
        project = work / "project"
        build_corpus(project / "tests", args.files)
        (project / "pyproject.toml").write_text(PYPROJECT)
        env = snapshot_distlint(work / "snapshot")
        versions: dict[str, dict[str, str]] = {"this tree": env}
        if args.other:
            versions["other (--other)"] = {**os.environ, "PYTHONPATH": str(args.other.resolve())}
        for version_env in versions.values():
            version_env.pop("PYTHONDONTWRITEBYTECODE", None)

        def run(label: str) -> tuple[float, float]:
            cache = work / f"cache-{list(versions).index(label)}"
            command = [
                sys.executable,
                "-m",
                "distlint",
                "check",
                "--cache-dir",
                str(cache),
                "tests",
            ]
            wall, cpu, _ = timed_process(command, project, versions[label], (0, 1))
            return wall, cpu

        for label in versions:  # fill, then record the stats once the files are > 2 s old
            run(label)
        time.sleep(2.5)
        for label in versions:
            run(label)
        results = alternated_runs(list(versions), args.runs, run)
        print(
            f"{args.files} files, {args.runs} warm runs per version, interleaved; load average "
            f"{os.getloadavg()[0]:.1f} at the end; Python {sys.version.split()[0]}\n"
        )
        print_version_table(results, 3)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

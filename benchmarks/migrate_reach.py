"""How many of the tests DL201 reports ``distlint migrate`` moves, and why the rest stay.

On a corpus of real test files (every file named explicitly, so helpers that are not named
``test_*.py`` count too):

* DL201 tests  - ``distlint check --select DL201 --no-cache`` findings (one per test that
                 spawns its ranks and creates a PG per test), and how many it calls migratable;
* moved        - the tests ``distlint migrate`` (dry run, both runtimes) moves, split by target
                 (the class's shared PG, or reused workers with a fresh PG per test);
* left         - the tests it leaves, by the report's reason code, counted only where DL201
                 reported the test (``no-pg`` tests are not DL201's and are counted apart).

Usage: python benchmarks/migrate_reach.py --corpus DIR [--pattern GLOB] [--runtime distlint|torch]
                                          [--json OUT]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from distlint.codemods.migrate_tree import TreeOptions, migrate_tree  # noqa: E402
from distlint.codemods.options import MigrateOptions  # noqa: E402

# "`test_x` creates its own PG ...": the test a DL201 finding names.
_DL201_TEST = re.compile(r"^`([A-Za-z_][A-Za-z0-9_]*)`")
_MOVED_TO_REUSED = "reused workers"


def dl201_tests(paths: list[Path]) -> tuple[collections.Counter, int, int]:
    """(path, test) -> number of DL201 findings, how many say "migratable", and how many say the
    test keeps its own PG on reused workers."""
    proc = subprocess.run(
        [sys.executable, "-m", "distlint", "check", "--no-cache", "--select", "DL201"]
        + ["--format", "json", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"distlint check failed ({proc.returncode}):\n{proc.stderr}")
    tests: collections.Counter = collections.Counter()
    migratable = on_reused = 0
    for finding in json.loads(proc.stdout or "[]"):
        match = _DL201_TEST.match(finding["message"])
        if match:
            tests[(finding["path"], match.group(1))] += 1
            migratable += "migratable" in finding["message"]
            on_reused += "on reused workers" in finding["message"]
    return tests, migratable, on_reused


def reach(paths: list[Path], runtime: str) -> dict:
    reported, migratable, on_reused = dl201_tests(paths)
    tree = migrate_tree(
        TreeOptions(
            paths=[str(p) for p in paths], migrate=MigrateOptions(runtime=runtime), use_cache=False
        )
    )
    moved: collections.Counter = collections.Counter()
    left: collections.Counter = collections.Counter()
    outside = collections.Counter()  # left tests DL201 did not report (no-pg and the like)
    outside_reused: collections.Counter = collections.Counter()
    errors = []
    for result in tree.results:
        if result.error:
            errors.append(result.error)
        for cls in result.report.classes:
            moved["shared PG"] += len(cls.moved)
            for entry in getattr(cls, "reused", ()):  # an earlier distlint has no such target
                if (result.path, entry.test) in reported:
                    moved[_MOVED_TO_REUSED] += 1
                else:
                    outside_reused[entry.code] += 1
            for entry in cls.left:
                if (result.path, entry.test) in reported:
                    left[entry.code] += 1
                else:
                    outside[entry.code] += 1
    total = sum(reported.values())
    return {
        "files": len(paths),
        "runtime": runtime,
        "dl201_tests": total,
        "dl201_migratable": migratable,
        "dl201_on_reused_workers": on_reused,
        "moved": dict(moved),
        "moved_total": sum(moved.values()),
        "left_by_reason": dict(left.most_common()),
        "left_not_dl201": dict(outside.most_common()),
        "reused_not_dl201": dict(outside_reused.most_common()),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--pattern", default="*.py")
    parser.add_argument("--runtime", choices=("distlint", "torch"), default="distlint")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    paths = sorted(args.corpus.rglob(args.pattern))
    figures = reach(paths, args.runtime)
    total, moved = figures["dl201_tests"], figures["moved_total"]
    print(f"{figures['files']} files, runtime {args.runtime}")
    print(
        f"DL201 tests: {total} ({figures['dl201_migratable']} called migratable, "
        f"{figures['dl201_on_reused_workers']} on reused workers)"
    )
    share = f"{100 * moved / total:.1f}%" if total else "-"
    print(
        f"moved: {moved} ({share}): " + ", ".join(f"{k} {v}" for k, v in figures["moved"].items())
    )
    print("left (DL201 tests), by reason:")
    for code, count in figures["left_by_reason"].items():
        print(f"  {code:<28} {count:>5}")
    if figures["left_not_dl201"]:
        print(
            "left, not DL201 tests: "
            + ", ".join(f"{k} {v}" for k, v in figures["left_not_dl201"].items())
        )
    if figures["reused_not_dl201"]:
        print(
            "on reused workers, not DL201 tests: "
            + ", ".join(f"{k} {v}" for k, v in figures["reused_not_dl201"].items())
        )
    for error in figures["errors"]:
        print(f"error: {error}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""``distlint migrate`` (dry run) at tree scale, beside ``distlint check`` and PyTorch's linter.

Every variant is a fresh process started by this script, given the same files through an
``@paths`` file (as ``lint_throughput.py`` does):

* baseline        - PyTorch's TEST_HAS_MAIN linter as it ships (``pytorch_test_has_main.py``);
* check cold      - ``distlint check --no-cache`` (default jobs);
* migrate cold    - ``distlint migrate --no-cache`` (dry run: diffs and reports, default jobs);
* migrate -j1     - the same in one process;
* migrate warm    - ``distlint migrate`` twice with a fresh cache; the second run is timed;
* other migrate   - with ``--other DIR``: ``distlint migrate --no-cache`` (dry run) run from another copy
                    of the package (``DIR/distlint``, e.g. ``git archive main distlint`` unpacked
                    there), an earlier version measured side by side;
* ast floor       - stdlib ``ast.parse`` of every file in this process (CPU seconds).

Every migrate run must print the same diffs and reports (stdout) and the same per-file
errors (stderr, minus the summary's timing-free last line, which is compared too), and every
check run the same findings; the script stops on any difference, so a faster migrate that
moves other tests, or gives other reasons, fails here.

Usage: python benchmarks/migrate_throughput.py --corpus DIR [--pattern GLOB] [--repeat 3]
                                               [--other DIR] [--pair]

``--pair`` runs only check and migrate (and ``--other``), alternated: the last row, each repeat's
migrate against its check, is the figure that holds when the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lint_throughput import (  # noqa: E402
    BASELINE,
    BASELINE_LABEL,
    Variant,
    corpus_files,
    findings,
    package_env,
    snapshot_distlint,
    timed_process,
)

CHECK = "distlint check --no-cache (default jobs)"
MIGRATE = "distlint migrate --no-cache, dry run (default jobs)"


class MigrateBench:
    def __init__(self, corpus: Path, paths: list[Path], work: Path, other: Path | None) -> None:
        self.corpus, self.paths, self.work = corpus, paths, work
        self.env = snapshot_distlint(work / "snapshot")
        self.other_env = package_env(other.resolve()) if other else None
        self.argfile = work / "paths.txt"
        self.argfile.write_text("".join(f"{p}\n" for p in paths))
        self.variants: dict[str, Variant] = {}
        #: label #run -> digest of what a migrate run printed; label #run -> check findings.
        self.migrations: dict[str, tuple[str, str]] = {}
        self.checks: dict[str, tuple] = {}
        self.summary = ""

    def add(self, label: str, wall: float, cpu: float, compare_to: str | None) -> None:
        variant = self.variants.setdefault(
            label, Variant(label, len(self.paths), compare_to=compare_to)
        )
        variant.add(wall, cpu)

    def baseline(self) -> None:
        wall, cpu, _ = timed_process(
            [sys.executable, str(BASELINE), f"@{self.argfile}"], self.corpus, self.env, (0,)
        )
        self.add(BASELINE_LABEL, wall, cpu, None)

    def check(self) -> None:
        command = [sys.executable, "-m", "distlint", "check", "--format", "json", "--no-cache"]
        wall, cpu, out = timed_process(
            [*command, f"@{self.argfile}"], self.corpus, self.env, (0, 1)
        )
        self.add(CHECK, wall, cpu, BASELINE_LABEL)
        self.checks[f"{CHECK} #{len(self.variants[CHECK].walls)}"] = findings(out)

    def migrate(self, label: str, *flags: str, env: dict[str, str] | None = None) -> None:
        import subprocess

        from lint_throughput import _children_cpu

        command = [sys.executable, "-m", "distlint", "migrate", *flags, f"@{self.argfile}"]
        start, cpu_start = time.perf_counter(), _children_cpu()
        done = subprocess.run(command, cwd=self.corpus, env=env or self.env, capture_output=True)
        wall, cpu = time.perf_counter() - start, _children_cpu() - cpu_start
        if done.returncode not in (0, 1):
            raise SystemExit(f"{label} failed ({done.returncode}):\n{done.stderr[-3000:]!r}")
        self.add(label, wall, cpu, CHECK)
        printed = hashlib.sha256(done.stdout).hexdigest()
        errors = hashlib.sha256(done.stderr).hexdigest()
        self.migrations[f"{label} #{len(self.variants[label].walls)}"] = (printed, errors)
        self.summary = done.stderr.decode().strip().splitlines()[-1]

    def warm(self) -> None:
        cache = self.work / "cache"
        shutil.rmtree(cache, ignore_errors=True)
        flags = ("--cache-dir", str(cache))
        self.migrate("distlint migrate, cache fill (cold, writes the cache)", *flags)
        self.migrate("distlint migrate warm (cache, nothing changed)", *flags)

    def ast_floor(self) -> None:
        start = time.process_time()
        for path in self.paths:
            try:
                ast.parse(path.read_bytes())
            except SyntaxError:
                pass
        cpu = time.process_time() - start
        self.add("floor: ast.parse every file (this process, 1 core)", cpu, cpu, None)

    def run(self, repeats: int, pair_only: bool = False) -> None:
        units = [
            ("baseline", self.baseline),
            ("check", self.check),
            ("migrate", lambda: self.migrate(MIGRATE, "--no-cache")),
            ("migrate -j1", lambda: self.migrate(f"{MIGRATE[:-15]} --jobs 1", "--no-cache", "-j1")),
            ("migrate fill + warm", self.warm),
            ("ast floor", self.ast_floor),
        ]
        if pair_only:
            units = units[1:3]
        if self.other_env:
            units.append(
                (
                    "other",
                    # --no-cache: both copies carry the same version, and so the same cache keys.
                    lambda: self.migrate(
                        "other distlint migrate --no-cache, dry run",
                        "--no-cache",
                        env=self.other_env,
                    ),
                )
            )
        for repeat in range(repeats):
            shift = repeat % len(units)
            for name, unit in units[shift:] + units[:shift]:
                unit()
                print(f"  repeat {repeat + 1}: {name} done", file=sys.stderr, flush=True)
        for what, outputs in (("migrate", self.migrations), ("check", self.checks)):
            if len(set(outputs.values())) != 1:
                raise SystemExit(
                    f"distlint {what} runs disagree (output digests):\n"
                    + "\n".join(f"{label}: {value}" for label, value in outputs.items())
                )

    def table(self) -> list[str]:
        rows = [
            "| run | files | wall s (median) | runs (wall s) | files/s | vs | CPU s | CPU ms/file |",
            "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for v in self.variants.values():
            wall, cpu = statistics.median(v.walls), statistics.median(v.cpus)
            ratio = ""
            if v.compare_to in self.variants:
                other = statistics.median(self.variants[v.compare_to].walls)
                ratio = f"{other / wall:.2f}x {'baseline' if v.compare_to == BASELINE_LABEL else 'check'}"
            runs = " ".join(f"{w:.2f}" for w in v.walls)
            rows.append(
                f"| {v.label} | {v.files} | {wall:.2f} | {runs} | {v.files / wall:.1f} | {ratio} | "
                f"{cpu:.1f} | {cpu / v.files * 1e3:.1f} |"
            )
        if CHECK in self.variants and MIGRATE in self.variants:
            # The machine's speed drifts between repeats: each repeat's migrate against the check
            # run next to it says more than the ratio of the two medians.
            pairs = zip(self.variants[MIGRATE].walls, self.variants[CHECK].walls)
            ratios = [m / c for m, c in pairs]
            rows.append(
                f"| migrate / check, each repeat's pair (median) | | {statistics.median(ratios):.2f}x | "
                + " ".join(f"{r:.2f}" for r in ratios)
                + " | | | | |"
            )
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--pattern", default="*.py")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--other", type=Path, default=None)
    parser.add_argument(
        "--pair", action="store_true", help="run check and migrate alone (and --other), alternated"
    )
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    paths = corpus_files(corpus, [args.pattern])
    if not paths:
        raise SystemExit(f"{corpus}: no files match {args.pattern}")
    with tempfile.TemporaryDirectory() as tmp:
        bench = MigrateBench(corpus, paths, Path(tmp), args.other)
        size = sum(p.stat().st_size for p in paths)
        print(f"corpus: {len(paths)} files, {size / 1e6:.1f} MB in {corpus} ({args.pattern})")
        print(
            f"machine: {len(os.sched_getaffinity(0))} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        bench.run(args.repeat, args.pair)
        print(f"load average {os.getloadavg()[0]:.1f} at the end; migrate: {bench.summary}")
        print("\n".join(bench.table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

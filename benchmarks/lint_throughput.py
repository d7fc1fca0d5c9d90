"""Throughput of ``distlint check`` against PyTorch's TEST_HAS_MAIN linter as it ships, side by side.

Every variant is a fresh process started by this script (interpreter start-up and
imports included), given the same files through an ``@paths`` file, as lintrunner does:

* baseline    - PyTorch's linter (``pytorch_test_has_main.py``: libcst parse, a match
                inside the top-level ``__main__`` block only, ``multiprocessing.Pool(8)``);
* cold        - ``distlint check --no-cache`` (default jobs: the CPUs available);
* cold -j1    - ``distlint check --no-cache --jobs 1``;
* cache fill  - ``distlint check`` with an empty cache (cold, writing it), then
* warm        - ``distlint check`` again, nothing changed;
* one file    - the baseline and ``distlint check --no-cache`` on one file alone (what a
                pre-commit hook does for a one-file change): the median-size file and
                the largest one;
* other       - with ``--other DIR``: ``distlint check --no-cache`` (default jobs, and on one file) run
                from another copy of the package (``DIR/distlint``, e.g. ``git archive main distlint``
                unpacked there): an earlier version measured side by side with this one;
* ast floor   - stdlib ``ast.parse`` of every file in this process, one core: the least
                any Python linter pays to read the files (CPU seconds; informational).
* parse floor - the issue's "parse-only floor": ``ast.parse`` of every file plus
                ``libcst.parse_module`` of the files distlint's screen sends to libcst (chosen
                before the clock starts), in this process; its CPU seconds divided by the CPUs
                this machine has is the least wall time a parallel linter could take, and the
                table's "floor" row says how far distlint's cold wall time is from it.

Each repeat runs every variant once, the order rotated from repeat to repeat, so a busy
moment on a shared machine hits every variant alike; the table gives medians, each run's
wall time, and CPU seconds (workers included), which stay comparable under load.
distlint runs with the default rules (``--select`` to change) from a copy of the package
taken at the start (an edit to the tree during the run would otherwise invalidate the
cache between the fill and the warm run); all its whole-corpus runs must report the same
findings, and the script stops otherwise.

The corpus is generated (``lint_corpus.py``, seeded: ``--files`` test modules) unless
``--corpus DIR`` names a checkout: then its files matching ``--pattern`` (default
``test_*.py``, PyTorch's include pattern for this linter) are linted, and nothing is
written into it (the cache lives in a temporary folder).

Usage: python benchmarks/lint_throughput.py [--files 1000] [--repeat 3] [--corpus DIR] [--pattern GLOB]
                                            [--select CODES] [--per-kind N] [--other DIR]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from lint_corpus import build_corpus  # noqa: E402
from pytorch_test_has_main import check_file  # noqa: E402

BASELINE = HERE / "pytorch_test_has_main.py"
BASELINE_LABEL = "baseline: PyTorch's TEST_HAS_MAIN (main block only, Pool(8))"
#: Folders never linted in a checkout.
SKIPPED_DIRS = {"site-packages", "node_modules", "__pycache__", "build", "dist"}


@dataclass
class Variant:
    """One row of the table: its runs' wall and CPU seconds, and the files each run covered."""

    label: str
    files: int
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    compare_to: str | None = BASELINE_LABEL  # the row whose median wall time "vs baseline" divides

    def add(self, wall: float, cpu: float) -> None:
        self.walls.append(wall)
        self.cpus.append(cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_process(
    command: Sequence[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...]
) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process and every worker it reaped) and stdout of one run."""
    start, cpu_start = time.perf_counter(), _children_cpu()
    done = subprocess.run(list(command), cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu_start
    if done.returncode not in ok:
        raise SystemExit(
            f"{' '.join(command[:4])} ... failed ({done.returncode}):\n{done.stderr[-3000:]}"
        )
    return wall, cpu, done.stdout


def alternated_runs(
    labels: Sequence[str], runs: int, run: Callable[[str], tuple[float, float]]
) -> dict[str, list[tuple[float, float]]]:
    """``run(label)`` (wall, CPU seconds) ``runs`` times per label, the order reversed every
    other repeat, so a busy moment of a shared machine hits every version alike."""
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in labels}
    for repeat in range(runs):
        for label in labels if repeat % 2 == 0 else list(reversed(labels)):
            results[label].append(run(label))
    return results


def print_version_table(results: dict[str, list[tuple[float, float]]], digits: int) -> None:
    """Each version's median, least and most wall seconds, and its median CPU seconds."""
    print("| version | wall s median | wall s min-max | CPU s median |")
    print("| --- | ---: | --- | ---: |")
    for label, timings in results.items():
        walls, cpus = [w for w, _ in timings], [c for _, c in timings]
        print(
            f"| {label} | {statistics.median(walls):.{digits}f} | "
            f"{min(walls):.{digits}f}-{max(walls):.{digits}f} | {statistics.median(cpus):.{digits}f} |"
        )


def snapshot_distlint(directory: Path) -> dict[str, str]:
    """Copy distlint's package aside; the environment that runs that copy.

    Every run then measures the same code: the cache key includes a hash of distlint's
    sources, so an edit to the working tree between the cache fill and the warm run
    would otherwise (correctly) turn the warm run into a cold one.
    """
    shutil.copytree(
        ROOT / "distlint", directory / "distlint", ignore=shutil.ignore_patterns("__pycache__")
    )
    return package_env(directory)


def package_env(directory: Path) -> dict[str, str]:
    """The environment that runs the distlint package in ``directory`` as an installed one runs:
    with its ``.pyc`` files (written on the first run: ``PYTHONDONTWRITEBYTECODE`` is cleared),
    not compiled again by every process measured."""
    env = {**os.environ, "PYTHONPATH": str(directory)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def corpus_files(root: Path, patterns: Sequence[str]) -> list[Path]:
    found = {p for pattern in patterns for p in root.rglob(pattern) if p.is_file()}
    return sorted(
        p
        for p in found
        if not any(
            part.startswith(".") or part in SKIPPED_DIRS for part in p.relative_to(root).parts[:-1]
        )
    )


def findings(json_output: str) -> tuple[tuple[str, int, int, str], ...]:
    """Every finding of a ``--format json`` run, comparable across runs (path, line, column, code)."""
    return tuple(
        sorted((f["path"], f["line"], f["column"], f["code"]) for f in json.loads(json_output))
    )


class Bench:
    """The variants of one benchmark run and the commands behind them."""

    def __init__(
        self,
        corpus: Path,
        paths: list[Path],
        work: Path,
        select: str | None,
        other: Path | None = None,
    ) -> None:
        self.corpus, self.paths, self.work = corpus, paths, work
        self.env = snapshot_distlint(work / "snapshot")
        self.other_env = package_env(other.resolve()) if other else None
        self.argfile = work / "paths.txt"
        self.argfile.write_text("".join(f"{p}\n" for p in paths))
        self.cache = work / "cache"
        self.select = ("--select", select) if select else ()
        self.variants: dict[str, Variant] = {}
        self.outputs: dict[str, tuple[tuple[str, int, int, str], ...]] = {}
        self.baseline_messages: set = set()  # how many files the baseline reports, per run
        self._libcst_files: list[Path] | None = None
        self.floor_label = ""
        by_size = sorted(paths, key=lambda p: (p.stat().st_size, str(p)))
        self.single = {"median-size file": by_size[len(by_size) // 2], "largest file": by_size[-1]}

    def variant(self, label: str, files: int, compare_to: str | None = BASELINE_LABEL) -> Variant:
        return self.variants.setdefault(label, Variant(label, files, compare_to=compare_to))

    def baseline(self, target: str, label: str) -> None:
        wall, cpu, out = timed_process(
            [sys.executable, str(BASELINE), target], self.corpus, self.env, (0,)
        )
        everything = target.startswith("@")
        self.variant(label, len(self.paths) if everything else 1, compare_to=None).add(wall, cpu)
        if everything:
            self.baseline_messages.add(len(out.splitlines()))

    def distlint(
        self,
        label: str,
        target: str,
        *flags: str,
        compare_to: str = BASELINE_LABEL,
        env: dict[str, str] | None = None,
    ) -> None:
        command = [
            sys.executable,
            "-m",
            "distlint",
            "check",
            "--format",
            "json",
            *self.select,
            *flags,
            target,
        ]
        wall, cpu, out = timed_process(command, self.corpus, env or self.env, (0, 1))
        files = len(self.paths) if target.startswith("@") else 1
        self.variant(label, files, compare_to).add(wall, cpu)
        if target.startswith("@"):
            self.outputs[label + f" #{len(self.variants[label].walls)}"] = findings(out)

    def units(self) -> list[tuple[str, Callable[[], None]]]:
        """The interleaved units of one repeat (the cache fill and the warm run stay a pair)."""
        everything = f"@{self.argfile}"

        def fill_then_warm() -> None:
            shutil.rmtree(self.cache, ignore_errors=True)
            self.distlint(
                "distlint cache fill (cold, writes the cache)",
                everything,
                "--cache-dir",
                str(self.cache),
            )
            self.distlint(
                "distlint warm (cache, nothing changed)", everything, "--cache-dir", str(self.cache)
            )

        units = [
            ("baseline", lambda: self.baseline(everything, BASELINE_LABEL)),
            (
                "cold",
                lambda: self.distlint(
                    "distlint cold --no-cache (default jobs)", everything, "--no-cache"
                ),
            ),
            (
                "cold -j1",
                lambda: self.distlint(
                    "distlint cold --no-cache --jobs 1", everything, "--no-cache", "--jobs", "1"
                ),
            ),
            ("fill + warm", fill_then_warm),
            ("ast floor", self.ast_floor),
            ("parse floor", self.parse_floor),
        ]
        if self.other_env:
            units.append(
                (
                    "other",
                    lambda: self.distlint(
                        "other distlint cold --no-cache (default jobs)",
                        everything,
                        "--no-cache",
                        env=self.other_env,
                    ),
                )
            )
        for name, path in self.single.items():
            units.append((f"one {name}", lambda name=name, path=path: self.one_file(name, path)))
        return units

    def one_file(self, name: str, path: Path) -> None:
        """The baseline, then distlint, on one file alone (a pre-commit run for a one-file change)."""
        base_label = f"baseline, one file ({name}, {path.stat().st_size / 1e3:.1f} KB)"
        self.baseline(str(path), base_label)
        self.distlint(
            f"distlint --no-cache, one file ({name})",
            str(path),
            "--no-cache",
            compare_to=base_label,
        )
        if self.other_env:
            self.distlint(
                f"other distlint --no-cache, one file ({name})",
                str(path),
                "--no-cache",
                compare_to=base_label,
                env=self.other_env,
            )

    def ast_floor(self) -> None:
        start = time.process_time()
        for path in self.paths:
            try:
                ast.parse(path.read_bytes())
            except SyntaxError:  # syntax newer than this Python: it still had to be read
                pass
        cpu = time.process_time() - start
        self.variant(
            "floor: ast.parse every file (this process, 1 core)", len(self.paths), compare_to=None
        ).add(cpu, cpu)

    def libcst_files(self) -> list[Path]:
        """The files distlint's screen cannot settle without libcst (the ones it parses twice)."""
        if self._libcst_files is None:
            from distlint.config import Config
            from distlint.screening import screen_file

            config = Config.from_table({"select": [self.select[1]]}) if self.select else Config()
            self._libcst_files = [
                p for p in self.paths if screen_file(p.read_bytes(), str(p), config).result is None
            ]
        return self._libcst_files

    def parse_floor(self) -> None:
        import libcst

        needs_libcst = set(self.libcst_files())
        start = time.process_time()
        for path in self.paths:
            source = path.read_bytes()
            try:
                ast.parse(source)
            except SyntaxError:
                pass
            if path in needs_libcst:
                libcst.parse_module(source)
        cpu = time.process_time() - start
        cpus = len(os.sched_getaffinity(0))
        label = (
            f"floor: ast.parse every file + libcst for the {len(needs_libcst)} that need it "
            f"(CPU s / {cpus} CPUs = least wall)"
        )
        self.variant(label, len(self.paths), compare_to=None).add(cpu / cpus, cpu)
        self.floor_label = label

    def run(self, repeats: int) -> None:
        units = self.units()
        for repeat in range(repeats):
            shift = repeat % len(units)
            for name, unit in units[shift:] + units[:shift]:
                unit()
                print(f"  repeat {repeat + 1}: {name} done", file=sys.stderr, flush=True)
        if len(set(self.outputs.values())) != 1:
            raise SystemExit(
                "distlint's whole-corpus runs disagree: the cache or the pool changed a result:\n"
                + "\n".join(
                    f"{label}: {len(found)} findings" for label, found in self.outputs.items()
                )
            )

    def table(self) -> list[str]:
        rows = [
            "| run | files | wall s (median) | runs (wall s) | files/s | vs baseline | CPU s | CPU ms/file |",
            "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for v in self.variants.values():
            wall, cpu = statistics.median(v.walls), statistics.median(v.cpus)
            ratio = ""
            if v.compare_to:
                ratio = f"{statistics.median(self.variants[v.compare_to].walls) / wall:.2f}x"
            runs = " ".join(f"{w:.2f}" for w in v.walls)
            rows.append(
                f"| {v.label} | {v.files} | {wall:.2f} | {runs} | {v.files / wall:.1f} | {ratio} | "
                f"{cpu:.1f} | {cpu / v.files * 1e3:.1f} |"
            )
        if self.floor_label:
            floor = statistics.median(self.variants[self.floor_label].walls)
            label = "distlint cold --no-cache (default jobs)"
            wall = statistics.median(self.variants[label].walls)
            rows.append(
                f"| {label}: wall / parse floor's least wall | | | | | {wall / floor:.2f}x | | |"
            )
        return rows


def per_kind_costs(paths: list[Path], sample: int, select: str | None) -> list[str]:
    """Per file kind, CPU ms per file of the baseline's per-file logic and of distlint's linter (one
    process each, file by file alternately, so both see the same load); the last row weighs the
    kinds by their share of the corpus."""
    from distlint.config import Config
    from distlint.linter import lint_source

    config = Config.from_table({"select": [select]}) if select else Config()
    by_kind: dict[str, list[Path]] = {}
    for path in paths:
        parts = path.stem.split("_", 2)
        by_kind.setdefault(
            parts[2] if len(parts) == 3 and parts[1].isdigit() else "all", []
        ).append(path)
    lines, total_base, total_distlint = [], 0.0, 0.0
    for kind, files in sorted(by_kind.items()):
        chosen = files[:sample]
        base = ours = 0.0
        for path in chosen:
            start = time.process_time()
            check_file(str(path))
            middle = time.process_time()
            lint_source(path.read_bytes(), str(path), config)
            base, ours = base + middle - start, ours + time.process_time() - middle
        base_ms, ours_ms = base / len(chosen) * 1e3, ours / len(chosen) * 1e3
        total_base += base_ms * len(files)
        total_distlint += ours_ms * len(files)
        lines.append(
            f"| {kind} | {len(files)} | {base_ms:.1f} | {ours_ms:.1f} | {base_ms / ours_ms:.2f}x |"
        )
    count = len(paths)
    lines.append(
        f"| whole corpus (weighted) | {count} | {total_base / count:.1f} | {total_distlint / count:.1f} | "
        f"{total_base / total_distlint:.2f}x |"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--files", type=int, default=1000, help="generated corpus size (default 1000)"
    )
    parser.add_argument(
        "--corpus", type=Path, help="lint this checkout instead of a generated corpus"
    )
    parser.add_argument(
        "--pattern", action="append", help="with --corpus: file globs (default test_*.py)"
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of every variant, interleaved (default 3)"
    )
    parser.add_argument("--select", help="distlint's --select (default: the default rules)")
    parser.add_argument(
        "--other",
        type=Path,
        metavar="DIR",
        help="also run the distlint package in DIR/distlint (an earlier version), interleaved",
    )
    parser.add_argument(
        "--per-kind",
        type=int,
        default=0,
        metavar="N",
        help="also compare the CPU cost per file kind, baseline vs distlint, on N files of each",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="distlint-bench-"))
    try:
        if args.corpus:
            corpus = args.corpus.resolve()
            patterns = args.pattern or ["test_*.py"]
            paths = corpus_files(corpus, patterns)
            if not paths:
                raise SystemExit(f"{corpus}: no file matches {' '.join(patterns)}")
            mix = "its files matching " + " ".join(patterns)
        else:
            corpus = work / "corpus"
            counts = build_corpus(corpus, args.files)
            paths = corpus_files(corpus, ["test_*.py"])
            mix = "generated: " + ", ".join(f"{count} {name}" for name, count in counts.items())
        sizes = [p.stat().st_size for p in paths]
        print(
            f"corpus: {len(paths)} files, {sum(sizes) / 1e6:.1f} MB, {min(sizes) / 1e3:.1f}-{max(sizes) / 1e3:.1f} KB "
            f"(median {statistics.median(sizes) / 1e3:.1f} KB) in {corpus} ({mix})"
        )
        print(
            f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, load average "
            f"{os.getloadavg()[0]:.1f} at the start",
            flush=True,
        )
        bench = Bench(corpus, paths, work, args.select, args.other)
        bench.run(args.repeat)
        by_rule = Counter(code for *_, code in next(iter(bench.outputs.values())))
        print(
            f"load average {os.getloadavg()[0]:.1f} at the end; distlint findings (every whole-corpus run): "
            f"{sum(by_rule.values())}" + "".join(f", {c} {n}" for c, n in sorted(by_rule.items()))
        )
        if len(bench.baseline_messages) != 1:
            raise SystemExit(
                f"the baseline's runs disagree: {sorted(bench.baseline_messages)} files reported"
            )
        print(
            f"baseline: {next(iter(bench.baseline_messages))} of {len(paths)} files reported "
            "(no main block that runs or raises)\n"
        )
        print("\n".join(bench.table()))
        if args.per_kind:
            print(
                "\n| kind | files | baseline CPU ms/file | distlint CPU ms/file | per-CPU ratio |"
            )
            print("| --- | ---: | ---: | ---: | ---: |")
            print("\n".join(per_kind_costs(paths, args.per_kind, args.select)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Cost of the process-group analysis (DL201/DL202/DL203) and of DL301, side by side.

For every fixture file (default: ``fixtures/``), in one process, median of ``--repeat`` runs,
in CPU time of this process (``time.process_time``: steadier than wall time on a shared machine),
the variants interleaved in every repeat (``interleave.py``):

* screen   - the pre-screen of the PG and skip-code rules (word set + ``may_report``);
* parse    - ``ast.parse`` alone;
* analysis - parse + ``analyze_module`` (on the stdlib ``ast`` tree, as the rules run it)
             (what DL2xx pay when the screen lets a file through); the last column splits off
             ``analyze_module`` alone;
* lint     - ``lint_source`` with DL201, DL202, DL203, DL301 selected (screen, parse, analysis, positions).

Prints one row per file, then totals: how many files the screen lets through per rule, and
files/s for parse, analysis and lint over all files.

With ``--corpus-files N`` it also builds ``benchmarks/lint_corpus.py``'s corpus (N files,
same seed) and prints the CPU cost of ``lint_source`` per file with every rule, with every
rule but DL201-DL203/DL301, and with those alone (the three alternating file by file):
what these rules add to a cold run.

Usage: python benchmarks/pg_analysis.py [--repeat 5] [--corpus-files 300] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from interleave import interleaved_medians, whole  # noqa: E402

from distlint.analysis.external_bases import ExternalBases  # noqa: E402
from distlint.analysis.pg import analyze_module  # noqa: E402
from distlint.config import Config  # noqa: E402
from distlint.linter import lint_source  # noqa: E402
from distlint.rules import rules_by_code  # noqa: E402
from distlint.source import PreScreen  # noqa: E402

CODES = ("DL201", "DL202", "DL203", "DL301")


def _analysis(source: bytes, config: Config) -> float:
    """Parse and the analysis; returns the CPU seconds of ``analyze_module`` alone."""
    tree = ast.parse(source)
    start = time.process_time()
    analyze_module(tree, source.decode("utf-8"), config, ExternalBases(None))
    return time.process_time() - start


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "fixtures")])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus-files", type=int, default=0)
    args = parser.parse_args(argv)
    files = sorted(
        p
        for root in args.paths
        for p in (Path(root).rglob("*.py") if Path(root).is_dir() else [Path(root)])
    )
    rules = [rules_by_code()[code] for code in CODES]
    config = Config(select=("DL2", "DL3"))
    through: dict[str, int] = {code: 0 for code in CODES}
    totals = {"screen": 0.0, "parse": 0.0, "analysis": 0.0, "lint": 0.0, "analyze_module": 0.0}
    print(
        f"{'file':44} {'KB':>5} {'screen ms':>9} {'parse ms':>9} {'analysis ms':>11} {'lint ms':>8} "
        f"{'analyze_module ms':>17}  rules through"
    )
    for path in files:
        source = path.read_bytes()

        # Bound as defaults (B023): each closure is timed within this iteration only.
        def screen(source: bytes = source, path: Path = path) -> list[str]:
            prescreen = PreScreen(source, str(path))
            return [rule.code for rule in rules if rule.may_report(prescreen, config)]

        passed = screen()
        for code in passed:
            through[code] += 1
        row = interleaved_medians(
            {
                "screen": whole(screen),
                "parse": whole(lambda source=source: ast.parse(source)),
                # the whole call counts
                "analysis": whole(lambda source=source: _analysis(source, config)),
                "lint": whole(
                    lambda source=source, path=path: lint_source(source, str(path), config, rules)
                ),
                # analyze_module's own seconds
                "analyze_module": lambda source=source: _analysis(source, config),
            },
            args.repeat,
        )
        for key, value in row.items():
            totals[key] += value
        name = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
        print(
            f"{name[-44:]:44} {len(source) / 1024:5.1f} {row['screen'] * 1e3:9.2f} {row['parse'] * 1e3:9.1f} "
            f"{row['analysis'] * 1e3:11.1f} {row['lint'] * 1e3:8.1f} {row['analyze_module'] * 1e3:17.1f}  "
            f"{','.join(passed) or '-'}"
        )
    count = len(files)
    print()
    print(
        f"{count} files; the pre-screen lets through: "
        + ", ".join(f"{c} {n}" for c, n in through.items())
    )
    for key in ("parse", "analysis", "lint", "analyze_module"):
        print(f"{key:9} {count / totals[key]:7.1f} files/s (all files, {totals[key]:.2f} s)")
    print(f"screen    {totals['screen'] / count * 1e3:7.2f} ms/file")
    if args.corpus_files:
        corpus_costs(args.corpus_files)
    return 0


def corpus_costs(files: int) -> None:
    """CPU ms/file of lint_source on the throughput corpus, with and without these rules."""
    import tempfile

    from lint_corpus import build_corpus

    with tempfile.TemporaryDirectory(prefix="distlint-pg-corpus-") as directory:
        counts = build_corpus(Path(directory), files)
        sources = [(p, p.read_bytes()) for p in sorted(Path(directory).rglob("test_*.py"))]
        print()
        print(
            f"corpus: {len(sources)} files ("
            + ", ".join(f"{n} {kind}" for kind, n in counts.items())
            + ")"
        )
        configs = [
            ("every rule", Config(select=("DL",))),
            ("every rule but " + "/".join(CODES), Config(select=("DL",), ignore=CODES)),
            ("only " + "/".join(CODES), Config(select=CODES)),
        ]
        spent = dict.fromkeys((label for label, _ in configs), 0.0)
        for path, source in sources:  # the three configurations alternate file by file
            for label, config in configs:
                start = time.process_time()
                lint_source(source, str(path), config)
                spent[label] += time.process_time() - start
        for label, seconds in spent.items():
            print(f"{label:40} CPU {seconds:6.1f} s  {seconds / len(sources) * 1e3:6.1f} ms/file")


if __name__ == "__main__":
    raise SystemExit(main())

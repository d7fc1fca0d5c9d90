"""How much does name resolution cost the main-block rules? (interleaved per file)

    python benchmarks/mainblock_names.py [FILES...]
    # default: fixtures/**/*.py + torch/testing/_internal/**/*.py sized 5-60 KB

For every file, in turn: libcst parse; then, on that parsed module, ScopeProvider,
QualifiedNameProvider, distlint's own module-wide resolver (``NameResolver``, what the PG
rules use: what an ``ImportTable`` built on it would cost before any main-block work),
distlint's own import-table analysis (``analyze_main_block`` with its on-demand facts
forced), and stdlib ``ast`` parse + the pre-screen. Each step is
timed separately and interleaved file by file, so load on a shared machine hits all
steps alike; the table gives each step's cost relative to the parse and files/s. The
garbage of one step is collected before the next starts (outside the timing), so a step
that allocates much (the resolver) does not bill its collection to the step after it.
"""

from __future__ import annotations

import ast
import gc
import sys
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, QualifiedNameProvider, ScopeProvider

from distlint.analysis.mainblock import analyze_main_block, screen_shape
from distlint.analysis.names.resolver import NameResolver


def corpus(argv):
    if argv:
        return [Path(p) for p in argv]
    import torch.testing._internal as internal  # only to locate files; distlint never imports torch

    files = sorted(Path("fixtures").rglob("*.py")) + sorted(
        Path(internal.__file__).parent.rglob("*.py")
    )
    return [f for f in files if 5_000 <= f.stat().st_size <= 60_000]


def full_analysis(module):
    facts = analyze_main_block(module)
    _ = (facts.uses_convention_runner, facts.nested_guards)  # the on-demand parts too


STEPS = {
    "ScopeProvider": lambda m, s: MetadataWrapper(m, unsafe_skip_copy=True).resolve(ScopeProvider),
    "QualifiedNameProvider": lambda m, s: MetadataWrapper(m, unsafe_skip_copy=True).resolve(
        QualifiedNameProvider
    ),
    "NameResolver (whole module)": lambda m, s: NameResolver(m)._prepare(),
    "analyze_main_block (import table)": lambda m, s: full_analysis(m),
    "ast parse + screen_shape (pre-screen)": lambda m, s: screen_shape(
        ast.parse(s), ("run_tests",)
    ),
}


def main():
    files = corpus(sys.argv[1:])
    sources = [f.read_bytes() for f in files]
    print(f"{len(files)} files, {sum(map(len, sources)) / 1e6:.2f} MB")
    totals = dict.fromkeys(["libcst parse", *STEPS], 0.0)
    for source in sources:
        gc.collect()
        start = time.perf_counter()
        # Kept alive: freeing the tree is not part of the parse time.
        _parsed = cst.parse_module(source)
        totals["libcst parse"] += time.perf_counter() - start
        for name, step in STEPS.items():
            fresh = cst.parse_module(source)  # metadata caches must not carry over
            gc.collect()
            start = time.perf_counter()
            step(fresh, source)
            totals[name] += time.perf_counter() - start
    parse = totals["libcst parse"]
    print(f"{'step':<40} {'x parse':>8} {'files/s':>9}")
    for name, seconds in totals.items():
        print(f"{name:<40} {seconds / parse:8.2f} {len(sources) / seconds:9.1f}")


if __name__ == "__main__":
    main()

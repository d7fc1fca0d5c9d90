"""Where ``distlint migrate`` (dry run) spends its CPU over a tree, beside the ``ast.parse`` floor.

One process, every file through ``migrate_source`` as a worker runs it (garbage collector off),
each phase timed by wrapping the function that does it:

* libcst parse    - ``distlint.source.parse`` as the migration calls it;
* analysis        - the DL2xx analysis (on the stdlib ``ast`` tree);
* frozen          - which per-test classes cannot change (``Freezer.frozen``: left out of libcst);
* twins           - pairing the ``ast`` statements with the libcst ones (``Twins``);
* plan            - ``Planner.plan`` (what moves where);
* emit            - ``Emitter.module`` (the new classes, the import edits);
* code            - ``Emitter.code`` (the new module's text);
* verify python   - ``verify_python`` (``compile()`` of the result);
* rest            - the pre-screens, the stand-ins, the ``ast`` trees, reading the result.

Beside them: ``ast.parse`` of every file (the floor any ``check`` pays). What a libcst-free
``check`` leaves ``migrate`` to stay within 2x of it: migrate's libcst work (parse, emit,
code, verify) may cost at most what check costs.

Usage: python benchmarks/migrate_phases.py --corpus DIR [--pattern '*.py'] [--runtime distlint]
"""

from __future__ import annotations

import argparse
import ast
import gc
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from distlint.codemods import emit, frozen, migrate_continuous, plan  # noqa: E402
from distlint.codemods.options import MigrateOptions  # noqa: E402
from distlint.config import Config  # noqa: E402

SPENT: Counter[str] = Counter()


def _timed(owner: Any, name: str, phase: str) -> None:
    original: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[phase] += time.process_time() - start

    setattr(owner, name, timed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, type=Path)
    parser.add_argument("--pattern", default="*.py")
    parser.add_argument("--runtime", default="distlint", choices=("distlint", "torch"))
    args = parser.parse_args(argv)
    sources = [(str(p), p.read_bytes()) for p in sorted(args.corpus.rglob(args.pattern))]
    _timed(migrate_continuous, "parse", "libcst parse")
    _timed(migrate_continuous, "_analyze", "analysis")
    _timed(frozen.Freezer, "frozen", "frozen")
    _timed(migrate_continuous, "Twins", "twins")
    _timed(plan.Planner, "plan", "plan")
    _timed(emit.Emitter, "module", "emit")
    _timed(emit.Emitter, "code", "code")
    _timed(migrate_continuous, "verify_python", "verify python")
    options = MigrateOptions(runtime=args.runtime)
    gc.disable()  # as the engine's workers run
    start = time.process_time()
    changed = sum(
        migrate_continuous.migrate_source(source, path, Config(), options).changed
        for path, source in sources
    )
    total = time.process_time() - start
    start = time.process_time()
    for _, source in sources:
        ast.parse(source)
    floor = time.process_time() - start
    SPENT["rest"] = total - sum(SPENT.values())
    libcst_work = sum(SPENT[p] for p in ("libcst parse", "emit", "code", "verify python"))
    print(f"{len(sources)} files, {changed} would change; CPU s, one process, gc off")
    print(f"{'migrate (dry run), all phases':32} {total:7.2f}")
    for phase in (
        "libcst parse",
        "analysis",
        "frozen",
        "twins",
        "plan",
        "emit",
        "code",
        "verify python",
        "rest",
    ):
        print(f"  {phase:30} {SPENT[phase]:7.2f}  {SPENT[phase] / total:6.1%}")
    print(f"{'  of which libcst work':32} {libcst_work:7.2f}  (parse, emit, code, verify python)")
    print(f"{'floor: ast.parse every file':32} {floor:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

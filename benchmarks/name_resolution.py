"""Cost of qualified names: libcst's provider (as the linter used it) vs ``NameResolver``, side by side.

For every file (default: ``fixtures/pg``), median of ``--repeat`` runs, CPU time of this process,
the five variants interleaved in every repeat (``interleave.py``):

* parse         - ``libcst.parse_module`` alone;
* provider      - parse + libcst's own ``QualifiedNameProvider`` resolved for the module;
* resolver      - parse + ``NameResolver`` (``qualified_name_map``), each name asked once;
* lint old/new  - ``lint_source`` with DL301, DL302 selected (the libcst rules that read names;
                  the PG rules read the ``ast`` tree's, ``benchmarks/ast_names.py``): the rules
                  declaring ``QualifiedNameProvider`` under ``use_libcst_provider()`` (old) and as
                  shipped (new).

Usage: python benchmarks/name_resolution.py [--repeat 5] [PATH ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import libcst as cst  # noqa: E402
from interleave import MediansTable, interleaved_medians, whole  # noqa: E402
from libcst.metadata import MetadataWrapper, QualifiedNameProvider  # noqa: E402

from distlint.analysis.names import qualified_name_map, use_libcst_provider  # noqa: E402
from distlint.config import Config  # noqa: E402
from distlint.linter import lint_source  # noqa: E402
from distlint.rules import rules_by_code  # noqa: E402

CODES = ("DL301", "DL302")


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "fixtures" / "pg")])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    files = sorted(
        p
        for root in args.paths
        for p in (Path(root).rglob("test_*.py") if Path(root).is_dir() else [Path(root)])
    )
    config = Config(select=("DL3",))
    rules = [rules_by_code()[code] for code in CODES]

    def provider(source: bytes) -> None:
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        for found in wrapper.resolve(QualifiedNameProvider).values():
            found() if callable(found) else found

    def resolver(source: bytes) -> None:
        wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        names = qualified_name_map(wrapper)
        for node in list(names):
            names.get(node)

    def lint_old(source: bytes, path: str) -> None:
        # The rules declaring QualifiedNameProvider: the linter resolves libcst's provider,
        # which qualified_name_map then returns.
        old = [
            type(rule.__name__, (rule,), {"METADATA_DEPENDENCIES": (QualifiedNameProvider,)})
            for rule in rules
        ]
        with use_libcst_provider():
            lint_source(source, path, config, old)

    table = MediansTable(
        ("parse", "provider", "resolver", "lint old", "lint new"),
        ("lint speedup", "lint old", "lint new"),
        ROOT,
    )
    table.header()
    for path in files:
        source = path.read_bytes()
        row = interleaved_medians(
            {
                # Bound as defaults (B023): each closure is timed within this iteration only.
                "parse": whole(lambda source=source: cst.parse_module(source)),
                "provider": lambda source=source: provider(source),
                "resolver": lambda source=source: resolver(source),
                "lint old": lambda source=source, path=path: lint_old(source, str(path)),
                "lint new": whole(
                    lambda source=source, path=path: lint_source(source, str(path), config, rules)
                ),
            },
            args.repeat,
        )
        table.row(path, len(source), row)
    table.total()
    return 0


if __name__ == "__main__":
    sys.exit(main())

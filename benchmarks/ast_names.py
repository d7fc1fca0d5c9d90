"""Qualified names from the stdlib ``ast`` tree beside the libcst resolver, side by side.

Every name, attribute and call of each file is asked for its names, as a lint asking about
every one of them would (the PG analysis asks about a few thousand of a large file's). For
every file, median CPU ms of ``--repeat`` runs, the variants interleaved (``interleave.py``),
with the garbage collector off as in ``distlint check``'s workers:

* ast parse      - ``ast.parse`` alone;
* ast names      - ``ast.parse`` + ``build_ast_names`` + ``names_of`` every Name/Attribute/Call
                   (``distlint/syntax/ast_names.py``: no libcst);
* libcst parse   - ``libcst.parse_module`` alone;
* libcst names   - ``libcst.parse_module`` + ``qualified_name_map`` + ``node_names`` every
                   Name/Attribute/Call (``distlint/analysis/names/``, what the PG analysis uses).

Before timing, the two must give the same names for every node they both have, paired by
node kind and position (``tests/test_ast_names.py`` pairs them exactly, by span); the script
stops on a difference.

Usage: python benchmarks/ast_names.py [--repeat 5] [PATH ...]   (default: fixtures/pg)
"""

from __future__ import annotations

import argparse
import ast
import gc
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import libcst as cst  # noqa: E402
from interleave import MediansTable, interleaved_medians, whole  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from distlint.analysis.names import node_names, qualified_name_map, qualified_names  # noqa: E402
from distlint.analysis.walk import code_children  # noqa: E402
from distlint.syntax.ast_names import build_ast_names  # noqa: E402

AST_KINDS = (ast.Name, ast.Attribute, ast.Call)
CST_KINDS = {cst.Name: "Name", cst.Attribute: "Attribute", cst.Call: "Call"}


def ast_names(source: bytes) -> list[frozenset[str]]:
    tree = ast.parse(source)
    names = build_ast_names(tree)
    return [names.names_of(node) for node in ast.walk(tree) if isinstance(node, AST_KINDS)]


def _cst_nodes(module: cst.Module) -> list[cst.CSTNode]:
    """Every Name, Attribute and Call, found with the analyses' own walk (libcst's visitor
    would rebuild every node, and time that, not the names)."""
    found, stack = [], [module]
    while stack:
        node = stack.pop()
        if type(node) in CST_KINDS:
            found.append(node)
        stack.extend(code_children(node))
    return found


def libcst_names(source: bytes) -> None:
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    names = qualified_name_map(wrapper)
    for node in _cst_nodes(module):
        (qualified_names if isinstance(node, cst.Call) else node_names)(names, node)


def _answers_by_place(source: bytes) -> tuple[Counter, Counter]:
    """Both resolvers' answers as a multiset of (kind, start line, names): the same multiset
    where they agree (columns differ in meaning: ast counts bytes, libcst characters)."""
    tree = ast.parse(source)
    found = build_ast_names(tree)
    ast_side = Counter(
        (type(node).__name__, node.lineno, found.names_of(node))
        for node in ast.walk(tree)
        if isinstance(node, AST_KINDS) and found.names_of(node)
    )
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    names = qualified_name_map(wrapper)
    positions = wrapper.resolve(PositionProvider)
    cst_side: Counter = Counter()
    for node in _cst_nodes(wrapper.module):
        answer = (qualified_names if isinstance(node, cst.Call) else node_names)(names, node)
        if answer:
            cst_side[(CST_KINDS[type(node)], positions[node].start.line, answer)] += 1
    return ast_side, cst_side


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "fixtures" / "pg")])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    files = sorted(
        p
        for root in args.paths
        for p in (Path(root).rglob("*.py") if Path(root).is_dir() else [Path(root)])
    )
    gc.disable()  # as the engine's workers run (distlint/engine.py)
    table = MediansTable(
        ("ast parse", "ast names", "libcst parse", "libcst names"),
        ("names speed-up", "libcst names", "ast names"),
        ROOT,
        width=15,
    )
    table.header()
    for path in files:
        source = path.read_bytes()
        ast_side, cst_side = _answers_by_place(source)
        # libcst names some nodes ast keeps as strings (a def's name): compare ast's answers.
        missing = ast_side - cst_side
        if missing:
            print(f"{path}: the resolvers differ: {sorted(missing)[:5]}", file=sys.stderr)
            return 1
        row = interleaved_medians(
            {
                "ast parse": whole(lambda source=source: ast.parse(source)),
                "ast names": whole(lambda source=source: ast_names(source)),
                "libcst parse": whole(lambda source=source: cst.parse_module(source)),
                "libcst names": whole(lambda source=source: libcst_names(source)),
            },
            args.repeat,
        )
        table.row(path, len(source), row)
    table.total()
    return 0


if __name__ == "__main__":
    sys.exit(main())

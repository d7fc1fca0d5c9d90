"""Statements of the stdlib ``ast`` tree grouped as libcst groups them
(``distlint/syntax/ast_lines.py``), and each paired with its libcst twin
(``distlint/codemods/twins.py``): what ``distlint migrate`` edits, found from the analysis's facts."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from distlint.codemods.twins import Twins
from distlint.syntax.ast_lines import SimpleLine, else_units, is_one_line, prepare, units

ROOT = Path(__file__).resolve().parent.parent

SHAPES = textwrap.dedent(
    """\
    import os; import sys
    x = 1 ;  y = 2
    a = (1,
         2); b = 3
    c = 4; \\
    d = 5
    if x: y = 1; z = 2
    elif y:
        pass
    else:
        if z: pass
    try: w = 1
    except (ValueError, KeyError) as e: pass
    else:
        pass
    finally: del w
    for i in range(3): pass
    else: pass
    while False:
        break
    with open(__file__) as f: pass
    if x: \\
        y = 3


    class C:
        '''Doc.'''

        @staticmethod
        @other( 1 )
        def f(): return 1

        async def g(self):
            async with a as b:
                async for i in b:
                    match i:
                        case 1:
                            pass
                        case _: pass
    """
)


def _trees(text: str) -> tuple[ast.Module, cst.Module]:
    tree = ast.parse(text)
    prepare(tree, text)
    return tree, cst.parse_module(text)


def test_simple_statements_are_grouped_by_line_as_libcst_groups_them():
    tree, _ = _trees(SHAPES)
    top = units(tree)
    lines = [u for u in top if isinstance(u, SimpleLine)]
    # ``a; b`` is one line; a parenthesized first statement and a backslash do not split it.
    assert [len(line.body) for line in lines] == [2, 2, 2, 2]
    assert [line.lineno for line in lines] == [1, 2, 3, 5]


def test_one_line_blocks_and_elif_are_told_apart():
    tree, _ = _trees(SHAPES)
    first_if, try_, for_, while_, with_, backslash_if = (
        u for u in units(tree) if not isinstance(u, (SimpleLine, ast.ClassDef))
    )
    assert is_one_line(first_if) and not is_one_line(while_)
    assert is_one_line(try_) and not is_one_line(try_, "orelse") and is_one_line(try_, "finalbody")
    assert is_one_line(for_) and is_one_line(for_, "orelse") and is_one_line(with_)
    assert is_one_line(backslash_if)  # ``if x: \\`` then the body: libcst's one-line suite
    elif_ = else_units(first_if)
    assert isinstance(elif_, ast.If)
    nested = else_units(elif_)
    assert isinstance(nested, list) and isinstance(nested[0], ast.If)  # ``else:`` + ``if``


def test_every_unit_def_class_and_decorator_has_its_libcst_twin():
    tree, module = _trees(SHAPES)
    twins = Twins(tree, module, SHAPES)
    kinds = {}
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list) and getattr(node, field):
                if isinstance(getattr(node, field)[0], ast.stmt):
                    for unit in units(node, field):
                        kinds[type(unit).__name__] = type(twins.libcst_of(unit)).__name__
    assert kinds["SimpleLine"] in ("SimpleStatementLine", "SimpleStatementSuite")
    cls = next(u for u in units(tree) if isinstance(u, ast.ClassDef))
    assert twins.libcst_class(cls).name.value == "C"
    f = next(u for u in units(cls) if isinstance(u, ast.FunctionDef))
    twin = twins.libcst_def(f)
    assert twin.name.value == "f" and twins.ast_of(twin) is f
    decorators = [twins.libcst_of(d) for d in f.decorator_list]
    assert decorators == list(twin.decorators)
    # A one-line block's statements pair with libcst's suite, which holds them.
    assert isinstance(twins.libcst_of(units(f)[0]), cst.SimpleStatementSuite)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "fixtures").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_trees_of_every_fixture_pair(path):
    text = path.read_text(encoding="utf-8")
    tree, module = _trees(text)
    Twins(tree, module, text)  # raises TwinMismatch where the blocks disagree

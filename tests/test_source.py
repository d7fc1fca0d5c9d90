"""distlint.source.parse: libcst's trees without libcst's construction-time validation, and
nothing else changed (the same trees; nodes built afterwards validate again)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from distlint.source import parse

ROOT = Path(__file__).resolve().parents[1]


def _parses(path: Path) -> bool:
    try:
        cst.parse_module(path.read_bytes())
    except Exception:  # bad-input fixtures
        return False
    return True


FILES = [
    p
    for p in sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "distlint").rglob("*.py")])
    if _parses(p)
]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_tree_equals_libcsts_validated_one(path: Path) -> None:
    source = path.read_bytes()
    tree = parse(source, str(path))
    assert tree.deep_equals(cst.parse_module(source))
    assert tree.bytes == source


def _validates() -> bool:
    try:
        cst.Name("not a name")
    except cst.CSTValidationError:
        return True
    return False


def test_nodes_built_after_a_parse_validate_again() -> None:
    assert _validates()
    parse(b"x = 1\n", "ok.py")
    assert _validates()
    with pytest.raises(ValueError, match="syntax error"):
        parse(b"def f(:\n", "bad.py")
    assert _validates()


# -- PreScreen.parses: the syntax check of a file no rule needs a tree for ----------------------


def test_a_valid_file_is_judged_without_building_its_tree(monkeypatch) -> None:
    import ast

    from distlint.config import Config
    from distlint.screening import screen_file
    from distlint.source import PreScreen

    # A pytest-style module: no runner, main block or PG word, so no rule's screen needs
    # the tree, and the syntax check builds none.
    source = b"import pytest\n\n\ndef test_add():\n    assert 1 + 1 == 2\n"
    screen = PreScreen(source, "test_add.py")
    assert screen.parses() and screen._ast is None
    trees: list[object] = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: trees.append(1) or real_parse(*a, **k))
    screened = screen_file(source, "test_add.py", Config())
    assert trees == []
    assert screened.result is not None and screened.result.error is None
    assert screened.result.findings == []


@pytest.mark.parametrize(
    "source,parses",
    [
        (b"x = 1\n", True),
        (b"# -*- coding: latin-1 -*-\nx = '\xe9'\n", True),  # the cookie decides, as for ast
        # Only the compiler rejects it, as symtable does; ast.parse accepts it, as before.
        (b"nonlocal x\n", True),
        (b"def f(:\n    pass\n", False),
        (b"x = 1\0\n", False),
    ],
    ids=["plain", "coding-cookie", "compiler-only-error", "syntax-error", "null-byte"],
)
def test_parses_says_what_ast_says(source: bytes, parses: bool) -> None:
    from distlint.source import PreScreen

    screen = PreScreen(source, "t.py")
    assert screen.parses() is parses
    reference = PreScreen(source, "t.py")
    assert (reference.ast_module is not None) is parses
    assert screen.syntax_error == reference.syntax_error

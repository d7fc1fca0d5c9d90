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

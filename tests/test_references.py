"""Where a module names its per-test classes (analysis.pg.references): what keeps a class per test,
for DL201 and for migrate alike, and the text pre-filter that skips statements."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from distlint.analysis.pg.references import module_references
from distlint.syntax.ast_lines import prepare

ROOT = Path(__file__).resolve().parents[1]

SOURCE = textwrap.dedent(
    """\
    import unittest
    from torch.testing._internal.common_distributed import MultiProcessTestCase
    from torch.testing._internal.common_utils import instantiate_parametrized_tests


    class Spawning(MultiProcessTestCase):
        class Nested:
            pass

        def setUp(self):
            super(Spawning, self).setUp()  # a hook: stays in the class
            Spawning.counter = 0

        def helper(self):
            return super(Spawning, self).helper()  # becomes super() when it moves

        def test_nested(self):
            self.assertIsNotNone(Spawning.Nested())  # reaches the class by name


    class Other(unittest.TestCase):
        def setUp(self):
            self.kind = Spawning  # another class's hook is a use


    class Clean(MultiProcessTestCase):
        def test_clean(self):
            self.assertEqual(self.other.Clean, 1)  # an attribute named like it: no use


    instantiate_parametrized_tests(Clean)  # follows the tests
    ALL = [Clean]
    """
)


def _tree(source: str) -> ast.Module:
    tree = ast.parse(source)
    prepare(tree, source)
    return tree


def _references(source: str, classes: set[str], with_text: bool):
    text = source if with_text else None
    return [(r.name, r.where, r.node.id) for r in module_references(_tree(source), classes, text)]


@pytest.mark.parametrize("with_text", [False, True])
def test_what_is_a_use_of_the_class(with_text: bool) -> None:
    found = _references(SOURCE, {"Spawning", "Clean"}, with_text)
    assert found == [
        ("Spawning", "inside a class body", "Spawning"),
        ("Spawning", "in class Other", "Spawning"),
        ("Clean", "at module level", "Clean"),
    ]


def test_no_per_test_class_no_search() -> None:
    assert _references(SOURCE, set(), True) == []


def _parsed(path: Path) -> ast.Module | None:
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        return _tree(source)
    except SyntaxError:
        return None  # a bad-input fixture


FIXTURES = [p for p in sorted((ROOT / "fixtures").rglob("test_*.py")) if _parsed(p) is not None]


def _every_class(tree: ast.Module) -> set[str]:
    """Every class of the file counted as per-test: the widest search there is."""
    return {s.name for s in tree.body if isinstance(s, ast.ClassDef)}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_text_prefilter_finds_what_the_whole_search_finds(path: Path) -> None:
    tree = _parsed(path)
    assert tree is not None
    classes = _every_class(tree)
    whole = [(r.name, r.where, id(r.node)) for r in module_references(tree, classes)]
    text = path.read_text(encoding="utf-8", errors="replace")
    by_text = module_references(tree, classes, text)
    assert [(r.name, r.where, id(r.node)) for r in by_text] == whole


def test_the_text_prefilter_skips_only_lines_that_cannot_name_a_class() -> None:
    # The search matches names as written: a full-width spelling, which Python would normalise
    # to the class's name, is not a use for it (the text tells; ``ast`` normalises it). A
    # decorator's line counts as part of its statement.
    source = (
        "class Spawning(MultiProcessTestCase):\n    def test_a(self):\n        pass\n\n\n"
        "KIND = \uff33pawning\n\n\n@register(Spawning)\ndef helper():\n    pass\n"
    )
    expected = [("Spawning", "at module level", "Spawning")]
    assert _references(source, {"Spawning"}, True) == expected

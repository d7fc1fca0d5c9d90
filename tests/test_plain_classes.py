"""Which classes are provably plain, so that ``distlint migrate`` parses a file without them
(``distlint/screens/plain_classes.py``; the stand-ins and the migrations with and without them:
``tests/test_migrate_stand_ins.py``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from distlint.config import Config
from distlint.screens.plain_classes import (
    STAND_IN_MARK,
    StandIns,
    multiprocess_words,
    plain_class_stand_ins,
)

ROOT = Path(__file__).resolve().parent.parent
MIXED = ROOT / "fixtures" / "pg" / "test_plain_classes_beside_spawn.py"
PG_ONLY = Config(select=("DL201", "DL202", "DL203"))

HEADER = """\
import unittest
from torch import nn
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import TestCase
"""


def _reduced(body: str, config: Config = PG_ONLY) -> StandIns | None:
    text = HEADER + textwrap.dedent(body)
    return plain_class_stand_ins(text, ast.parse(text), multiprocess_words(config))


def _class_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("class ")]


def test_plain_classes_become_stand_ins_and_every_kept_line_keeps_its_number():
    text = MIXED.read_text()
    stand_ins = plain_class_stand_ins(text, ast.parse(text), multiprocess_words(PG_ONLY))
    assert stand_ins is not None
    reduced = stand_ins.text
    before, after = text.splitlines(), reduced.splitlines()
    assert len(after) == len(before)
    for number, (old, new) in enumerate(zip(before, after, strict=True), start=1):
        assert new in (old, "", '"""') or STAND_IN_MARK in new, number
    assert [line.split(":")[0] for line in _class_lines(reduced)] == [
        "class ToyModel",
        "class TestGraphPasses",  # its decorator line is left out with it
        "class FourRanks(object)",  # the per-test class's base: part of its analysis
        "class TestAllreduce(FourRanks, MultiProcessTestCase)",
        "class TestMoreMath",
        "class TestSuiteListing(TestCase)",  # names TestAllreduce: a use of it
        "class TestSpawnsFromPlainBase(TestCase)",  # setUp spawns
        "class TestRebound(PlainCase)",  # PlainCase is bound twice
        "class TestSuppressed(MultiProcessTestCase)",
        "class TestLast",
    ]
    ast.parse(reduced)


@pytest.mark.parametrize(
    "body",
    [
        # a configured or torch per-test/continuous base named in the class
        "class TestX(TestCase):\n    base = FSDPTest\n",
        "class TestX(TestCase):\n    def setUp(self):\n        self._fork_processes()\n",
        # bases that are not provably plain
        "class TestX(MultiProcessTestCase):\n    pass\n",
        "from mylib import Base\nclass TestX(Base):\n    pass\n",
        "class TestX(nn.Module, metaclass=type):\n    pass\n",
        "class TestX(make_base()):\n    pass\n",
        "TestCase = MultiProcessTestCase\nclass TestX(TestCase):\n    pass\n",
        # its name bound twice, or a star import that may rebind anything
        "class TestX(TestCase):\n    pass\nTestX = 1\n",
        "from helpers import *\nclass TestX(TestCase):\n    pass\n",
        # a plain mixin of a kept class, also through another plain class or a nested class
        "class Mixin(object):\n    pass\nclass TestX(Mixin, MultiProcessTestCase):\n    pass\n",
        "class A:\n    pass\nclass B(A):\n    pass\nclass TestX(B, MultiProcessTestCase):\n    pass\n",
        "class A:\n    pass\nif True:\n    class TestX(A, MultiProcessTestCase):\n        pass\n",
    ],
)
def test_a_class_that_may_run_ranks_or_take_part_in_such_a_class_is_kept(body):
    assert _reduced(body) is None


def test_a_configured_base_name_keeps_a_class_that_names_it():
    body = "class TestX(TestCase):\n    launcher = MyRankBase\n"
    assert _reduced(body) is not None
    assert _reduced(body, Config(per_test_bases=("mylib.MyRankBase",))) is None


def test_line_endings_are_kept():
    text = "from unittest import TestCase\r\nclass T(TestCase):\r\n    x = 1\r\n\r\nY = 2\r\n"
    stand_ins = plain_class_stand_ins(text, ast.parse(text), multiprocess_words(PG_ONLY))
    assert stand_ins is not None
    assert stand_ins.text == (
        f'from unittest import TestCase\r\nclass T: """{STAND_IN_MARK} (0)\r\n"""\r\n\r\nY = 2\r\n'
    )
    assert stand_ins.restore(stand_ins.text) == text


def test_the_stand_ins_tree_is_that_of_their_text() -> None:
    """The tree is built from the module's (each stand-in parsed alone): it must be what
    parsing the whole new text gives, positions included, one-line and long classes alike."""
    text = (
        "import unittest\n\n\n@decorated\nclass Plain(unittest.TestCase):\n"
        "    def test_a(self):\n        pass\n\n\nclass One(unittest.TestCase): pass\n\n"
        "x = 'é'; y = 2\n"
    )
    stand_ins = plain_class_stand_ins(text, ast.parse(text), multiprocess_words(PG_ONLY))
    assert stand_ins is not None and len(stand_ins.statements) == 2
    expected = ast.parse(stand_ins.text)
    assert ast.dump(stand_ins.tree, include_attributes=True) == ast.dump(
        expected, include_attributes=True
    )

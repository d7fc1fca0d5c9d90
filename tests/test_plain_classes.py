"""The process-group rules parse a file without its provably plain classes: same findings, same
places, fewer nodes (``distlint/screens/plain_classes.py``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import distlint.linter as linter
from distlint.config import Config, ConfigResolver
from distlint.rules import all_rules
from distlint.screens.plain_classes import multiprocess_words, without_plain_classes

ROOT = Path(__file__).resolve().parent.parent
MIXED = ROOT / "fixtures" / "pg" / "test_plain_classes_beside_spawn.py"
PG_ONLY = Config(select=("DL201", "DL202", "DL203"))

HEADER = """\
import unittest
from torch import nn
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import TestCase
"""


def _reduced(body: str, config: Config = PG_ONLY) -> str | None:
    text = HEADER + textwrap.dedent(body)
    return without_plain_classes(text, ast.parse(text), multiprocess_words(config))


def _class_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("class ")]


def test_plain_classes_become_one_line_stubs_and_every_kept_line_keeps_its_number():
    text = MIXED.read_text()
    reduced = without_plain_classes(text, ast.parse(text), multiprocess_words(PG_ONLY))
    assert reduced is not None
    before, after = text.splitlines(), reduced.splitlines()
    assert len(after) == len(before)
    for number, (old, new) in enumerate(zip(before, after, strict=True), start=1):
        assert new in (old, "") or new.endswith(": pass"), number
    assert _class_lines(reduced) == [
        "class ToyModel: pass",
        "class TestGraphPasses: pass",  # its decorator line is blanked with it
        "class FourRanks(object):",  # the per-test class's base: part of its analysis
        "class TestAllreduce(FourRanks, MultiProcessTestCase):",
        "class TestMoreMath: pass",
        "class TestSuiteListing(TestCase):",  # names TestAllreduce: a use of it
        "class TestSpawnsFromPlainBase(TestCase):",  # setUp spawns
        "class TestRebound(PlainCase):",  # PlainCase is bound twice
        "class TestSuppressed(MultiProcessTestCase):  # noqa: DL202",
        "class TestLast: pass",
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
    reduced = without_plain_classes(text, ast.parse(text), multiprocess_words(PG_ONLY))
    assert reduced == "from unittest import TestCase\r\nclass T: pass\r\n\r\n\r\nY = 2\r\n"


def _rule_sources():
    for rule in all_rules():
        for example in (*rule.VALID, *rule.INVALID):
            yield f"{rule.code}-example.py", textwrap.dedent(example.code).encode()


def _fixture_sources():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield str(path), path.read_bytes()


def test_findings_are_the_same_with_and_without_the_plain_classes_on_every_fixture(monkeypatch):
    """Every fixture and rule example, the PG rules alone and the area's own rules: wherever the
    linter leaves classes out, the same findings, errors and places as from the whole file."""
    parsed: list[bytes | str] = []
    real = linter.parse
    monkeypatch.setattr(linter, "parse", lambda src, path: parsed.append(src) or real(src, path))
    reduced_runs = 0
    for name, source in [*_fixture_sources(), *_rule_sources()]:
        for config in (PG_ONLY, ConfigResolver().for_file(Path(name)).config):
            parsed.clear()
            reduced = linter.lint_source(source, name, config, prescreen=True)
            if not any(isinstance(text, str) for text in parsed):
                continue  # parsed whole (or not at all): nothing to compare
            whole = linter.lint_source(source, name, config, prescreen=False)
            assert (reduced.findings, reduced.error) == (whole.findings, whole.error), name
            reduced_runs += 1
    assert reduced_runs >= 3, "no fixture has plain classes beside multi-process ones"


def test_the_linter_parses_the_text_without_plain_classes_only_for_the_pg_rules(monkeypatch):
    seen: list[bytes | str] = []
    real = linter.parse
    monkeypatch.setattr(
        linter, "parse", lambda source, path: seen.append(source) or real(source, path)
    )
    source = MIXED.read_bytes()
    findings = linter.lint_source(source, str(MIXED), PG_ONLY).findings
    assert isinstance(seen[-1], str) and "class ToyModel: pass" in seen[-1]
    assert [f.line for f in findings if f.code == "DL202"] == [42, 67]
    # A rule that reads more than multi-process classes (DL301: any exit call): the file whole.
    exits = source + b"\n\ndef _leave():\n    import sys\n\n    sys.exit(75)\n"
    codes = {
        f.code
        for f in linter.lint_source(exits, str(MIXED), Config(select=("DL2", "DL301"))).findings
    }
    assert seen[-1] == exits and "DL301" in codes

"""migrate parses a file with its plain classes replaced by stand-ins and puts them back:
the result must be the one from the whole file, byte for byte, with the same report."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from distlint.codemods.migrate_continuous import MigrateOptions, _migrate
from distlint.config import Config, load_config
from distlint.screens.plain_classes import (
    STAND_IN_MARK,
    multiprocess_words,
    plain_class_stand_ins,
)

ROOT = Path(__file__).resolve().parents[1]
WORDS = multiprocess_words(Config())


def _stand_ins(text: str):
    return plain_class_stand_ins(text, ast.parse(text), WORDS)


def _with_plain_classes() -> list[Path]:
    """The fixtures migrate leaves a class out of (the others take the one path there is)."""
    found = []
    for path in sorted((ROOT / "fixtures").rglob("test_*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if plain_class_stand_ins(text, tree, multiprocess_words(load_config(path))):
            found.append(path)
    return found


CASES = _with_plain_classes()


def test_fixtures_leave_classes_out_of_files_that_change() -> None:
    changed = [
        case
        for case in CASES
        if _migrate(case.read_bytes(), str(case), load_config(case), MigrateOptions(), True).changed
    ]
    assert len(changed) >= 2, changed


@pytest.mark.parametrize("runtime", ["distlint", "torch"])
@pytest.mark.parametrize("case", CASES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_migration_is_the_whole_files(case: Path, runtime: str) -> None:
    source, config = case.read_bytes(), load_config(case)
    options = MigrateOptions(runtime=runtime)
    left_out = _migrate(source, str(case), config, options, True)
    whole = _migrate(source, str(case), config, options, False)
    assert left_out.migrated == whole.migrated
    assert left_out.error == whole.error
    assert left_out.report.text() == whole.report.text()


def test_stand_ins_keep_every_line_and_give_the_classes_back() -> None:
    text = textwrap.dedent(
        """\
        import unittest


        @unittest.skip("off")
        class TestA(unittest.TestCase):
            def test_a(self):
                pass
            # indented comment after the last statement


        class TestB(unittest.TestCase): pass
        """
    ).replace("\n", "\r\n")
    stand_ins = _stand_ins(text)
    assert stand_ins is not None
    assert [c.name for c in stand_ins.statements] == ["TestA", "TestB"]
    assert stand_ins.text.count("\r\n") == text.count("\r\n")
    assert "@unittest.skip" not in stand_ins.text
    assert f'class TestB: "{STAND_IN_MARK} (1)"\r\n' in stand_ins.text
    ast.parse(stand_ins.text)
    assert stand_ins.restore(stand_ins.text) == text
    assert stand_ins.restore(stand_ins.text.replace("TestB", "Other")) is None


def test_a_plain_class_naming_a_kept_class_stays_for_the_plan_to_see() -> None:
    """The plan refuses to move a class the module uses elsewhere: it must see the use."""
    text = textwrap.dedent(
        """\
        import unittest
        from torch.testing._internal.common_distributed import MultiProcessTestCase


        class Spawning(MultiProcessTestCase):
            def setUp(self):
                super().setUp()
                self._spawn_processes()


        class TestNamesIt(unittest.TestCase):
            def test_world(self):
                self.assertTrue(issubclass(Spawning, object))


        class TestAlone(unittest.TestCase):
            def test_one(self):
                pass
        """
    )
    stand_ins = _stand_ins(text)
    assert stand_ins is not None
    assert [c.name for c in stand_ins.statements] == ["TestAlone"]


def test_a_file_holding_the_mark_leaves_nothing_out() -> None:
    text = f"# {STAND_IN_MARK}\nimport unittest\n\n\nclass T(unittest.TestCase):\n    pass\n"
    assert _stand_ins(text) is None
    assert _stand_ins(text.replace(STAND_IN_MARK, "x")) is not None


@pytest.mark.parametrize("case", CASES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_stand_ins_tree_is_the_parse_of_their_text(case: Path) -> None:
    text = case.read_text(encoding="utf-8")
    stand_ins = plain_class_stand_ins(text, ast.parse(text), multiprocess_words(load_config(case)))
    assert stand_ins is not None
    assert ast.dump(stand_ins.tree, include_attributes=True) == ast.dump(
        ast.parse(stand_ins.text), include_attributes=True
    )

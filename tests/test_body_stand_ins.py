"""migrate leaves the bodies of tests it never edits out of libcst's tree (stand-ins of the same
lines, distlint/codemods/body_stand_ins.py): the result and the report must be those of the whole
file, and only the shapes the module docstring allows get a stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
from left_out import MAIN, OPTIONS, multi_process_fixtures, same_as_whole

from distlint.codemods import migrate_continuous
from distlint.codemods.migrate_continuous import MigrateOptions, _migrate
from distlint.config import load_config

ROOT = Path(__file__).resolve().parents[1]

HEADER = '''\
import os

import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests
from torch.testing._internal.distributed._tensor.common_dtensor import (
    DTensorTestBase,
    with_comms,
)


class MeshTest(DTensorTestBase):
    @property
    def world_size(self):
        return 2

    @with_comms
    def test_moves_with_its_decorator(self):
        mesh = self.build_device_mesh()
        # a comment in the body
        self.assertEqual(mesh.size(), self.world_size)  # and after a line

    def test_no_pg(self):
        """It reads members only."""
        value = self.helper()
        self.assertEqual(value, 1)

    def helper(self):
        return 1


class GlooTest(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_moves_with_edits(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)
        dist.barrier()
        dist.destroy_process_group()

    def test_stays(self):
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)
        dist.barrier()
'''


def _left_out_bodies(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """Records the tests each migration left the bodies of out (names), and that it parsed
    the whole file instead (an empty set after a set)."""
    seen: list[set[str]] = []
    original = migrate_continuous.body_stand_ins

    def recording(text, tree, analysis, *args):
        found = original(text, tree, analysis, *args)
        tests = {f.name for f in (found.stand_ins.statements if found else ())}
        seen.append(tests)
        return found

    monkeypatch.setattr(migrate_continuous, "body_stand_ins", recording)
    return seen


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_bodies_the_plan_never_edits_are_left_out(monkeypatch, options):
    seen = _left_out_bodies(monkeypatch)
    result = same_as_whole(HEADER + MAIN, options)
    assert result.changed
    # The moved test with statements to rewrite keeps its body; the one whose PG is its
    # decorator moves with a stand-in body, and the tests that stay keep their place.
    assert seen == [{"test_moves_with_its_decorator", "test_no_pg", "test_stays"}]
    migrated = result.migrated.decode()
    assert "# a comment in the body" in migrated and "distlint:" not in migrated


@pytest.mark.parametrize(
    "change",
    [
        ("value = self.helper()", "value = getattr(self, 'helper')()"),
        ("value = self.helper()", "value = super(MeshTest, self).helper()"),
        ("value = self.helper()", "value = self.helper()  # naïve"),
    ],
    ids=["reflection", "super with arguments", "a name character"],
)
def test_a_body_the_stand_in_could_not_say_stays_in_the_tree(monkeypatch, change):
    seen = _left_out_bodies(monkeypatch)
    same_as_whole((HEADER + MAIN).replace(*change))
    assert "test_no_pg" not in seen[0]


def test_short_or_inert_bodies_and_tabs_stay_in_the_tree(monkeypatch):
    seen = _left_out_bodies(monkeypatch)
    text = (HEADER + MAIN).replace(
        '        """It reads members only."""\n        value = self.helper()\n'
        "        self.assertEqual(value, 1)\n",
        '        """Nothing but strings."""\n        "and more"\n        pass\n',
    )
    same_as_whole(text)
    assert "test_no_pg" not in seen[0]
    short = (HEADER + MAIN).replace("        value = self.helper()\n", "")
    same_as_whole(short)
    assert "test_no_pg" not in seen[1]  # a docstring and one line


def test_an_em_dash_in_a_comment_is_no_name(monkeypatch):
    seen = _left_out_bodies(monkeypatch)
    same_as_whole((HEADER + MAIN).replace("# a comment in the body", "# a comment — in the body"))
    assert "test_moves_with_its_decorator" in seen[0]


def test_comments_after_a_body_stay_where_libcst_puts_them(monkeypatch):
    seen = _left_out_bodies(monkeypatch)
    trailing = (HEADER + MAIN).replace(
        "        self.assertEqual(value, 1)\n",
        "        self.assertEqual(value, 1)\n            # deeper\n        # the body's\n    # the class's\n",
    )
    result = same_as_whole(trailing)
    assert "test_no_pg" in seen[0]
    assert (
        "            # deeper\n        # the body's\n    # the class's\n"
        in result.migrated.decode()
    )


def test_a_stand_in_the_result_does_not_hold_as_written_means_the_whole_file(monkeypatch):
    """Moved into a class of the module's indentation, a test of a class indented otherwise is
    printed with other indentation: its stand-in is not found, and the whole file is parsed."""
    seen = _left_out_bodies(monkeypatch)
    calls: list[bool] = []
    original = migrate_continuous._migrate

    def recording(source, path, config, options, leave_out):
        calls.append(leave_out)
        return original(source, path, config, options, leave_out)

    monkeypatch.setattr(migrate_continuous, "_migrate", recording)
    start, end = HEADER.index("class MeshTest"), HEADER.index("class GlooTest")
    halved = "".join(
        line[(len(line) - len(line.lstrip(" "))) // 2 :]
        for line in HEADER[start:end].splitlines(keepends=True)
    )
    four_spaces = "def first_block():\n    return 1\n\n\n"  # sets the module's indentation
    text = HEADER[:start] + four_spaces + halved + HEADER[end:] + MAIN
    result = same_as_whole(text)
    assert result.changed
    assert "test_moves_with_its_decorator" in seen[0]
    assert calls == [False]  # _same_as_whole's own calls are not recorded: only the fallback


def test_fixtures_have_bodies_of_tests_that_stay_and_of_tests_that_move(monkeypatch):
    seen = _left_out_bodies(monkeypatch)
    moved = stayed = 0
    for case in multi_process_fixtures():
        count = len(seen)
        result = _migrate(case.read_bytes(), str(case), load_config(case), MigrateOptions(), True)
        names = set().union(*seen[count:])
        moved += sum(name in c.moved for c in result.report.classes for name in names)
        stayed += sum(left.test in names for c in result.report.classes for left in c.left)
    assert moved >= 3 and stayed >= 3, (moved, stayed)


def test_a_plan_that_asks_about_a_body_left_out_gets_the_whole_file(monkeypatch):
    """Were a body the plan edits ever left out (the analysis' word wrong), the plan's question
    about a statement in it sends the file to libcst whole: the same result, not an error."""
    from distlint.codemods import body_stand_ins

    monkeypatch.setattr(body_stand_ins, "_body_unedited", lambda test, suffix: True)
    seen = _left_out_bodies(monkeypatch)
    result = same_as_whole(HEADER + MAIN)
    assert "test_moves_with_edits" in seen[0]  # left out, then asked about
    assert result.changed and result.error is None


HELPERS = """\
import os

import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase


class {name}(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    @property
    def world_size(self):
        size = 2
        return size

    def _init_pg(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)
        dist.barrier()

    def _check(self, value):
        total = value + self.rank
        self.assertGreaterEqual(total, 0)
        return total

    def test_moves(self):
        self._init_pg()
        self._check(1)
        dist.destroy_process_group()

    def test_stays(self):
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
        self._init_pg()
        self._check(2)
"""


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_helpers_of_a_class_that_stays_are_left_out_unless_the_plan_edits_them(
    monkeypatch, options
):
    seen = _left_out_bodies(monkeypatch)
    result = same_as_whole(HELPERS.format(name="GlooTest"), options)
    assert result.changed
    # _init_pg creates the moved test's PG (the plan rewrites it), world_size and setUp are
    # read; test_moves's PG teardown goes.
    assert seen == [{"_check", "test_stays"}]


def test_helpers_of_a_class_that_may_go_stay_in_the_tree(monkeypatch):
    seen = _left_out_bodies(monkeypatch)
    moves_only = HELPERS.format(name="GlooTest").split("    def test_stays")[0]
    result = same_as_whole(moves_only)
    assert result.changed
    assert seen == [set()]  # _check stays in the tree: the class may go, and drop it

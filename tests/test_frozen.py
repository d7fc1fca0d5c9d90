"""migrate leaves the per-test classes where nothing can move out of libcst's tree and reports
them from the ``ast`` analysis (distlint/codemods/frozen.py): the result and the report must be
those of the whole file, and a file with nothing to move is reported without libcst."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from left_out import MAIN, OPTIONS, multi_process_fixtures, same_as_whole

from distlint.codemods import migrate_continuous
from distlint.codemods.frozen import Freezer
from distlint.codemods.migrate_continuous import MigrateOptions, _migrate
from distlint.config import Config, load_config

ROOT = Path(__file__).resolve().parents[1]

HEADER = """\
import os
import sys

import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests


class Helper:
    def test_from_helper(self):
        pass
"""
MOVES = """

class MovesTest(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_moves(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)
        dist.barrier()
        dist.destroy_process_group()
"""
STAYS = """

class StaysTest(Helper, MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_env(self):
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size, store=store)
        if self.rank == 0:
            sys.exit(3)

    def test_no_pg(self):
        self.assertTrue(True)
"""


def _frozen_of(monkeypatch: pytest.MonkeyPatch) -> list:
    """Records what each migration froze (the Frozen of each call)."""
    seen: list = []
    original = Freezer.frozen

    def recording(self):
        seen.append(original(self))
        return seen[-1]

    monkeypatch.setattr(Freezer, "frozen", recording)
    return seen


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_a_class_where_nothing_moves_is_left_out_between_migrating_ones(monkeypatch, options):
    frozen = _frozen_of(monkeypatch)
    text = HEADER + MOVES + STAYS + MOVES.replace("MovesTest", "MovesAgainTest") + MAIN
    result = same_as_whole(text, options)
    assert [sorted(f.names) for f in frozen] == [["StaysTest"]]
    assert not frozen[0].everything
    assert result.changed
    classes = [c.name for c in result.report.classes]
    assert classes == ["MovesTest", "StaysTest", "MovesAgainTest"]
    stays = result.report.classes[1]
    assert [left.test for left in stays.left] == ["test_env", "test_no_pg", "test_from_helper"]
    assert "class StaysTest(Helper, MultiProcessTestCase):" in result.migrated.decode()


@pytest.mark.parametrize("options", OPTIONS.values(), ids=OPTIONS.keys())
def test_a_file_with_nothing_to_move_is_reported_without_libcst(monkeypatch, options):
    frozen = _frozen_of(monkeypatch)
    text = HEADER + STAYS + MAIN
    whole = _migrate(text.encode(), "t.py", Config(), options, False)

    def no_libcst(*args, **kwargs):
        raise AssertionError("parsed with libcst")

    monkeypatch.setattr(migrate_continuous, "parse", no_libcst)
    left_out = _migrate(text.encode(), "t.py", Config(), options, True)
    assert frozen[-1].everything
    assert left_out.report.text() == whole.report.text()
    assert left_out.migrated is None and whole.migrated is None
    assert left_out.error is None


@pytest.mark.parametrize(
    "change",
    [
        (
            "class StaysTest(Helper, MultiProcessTestCase):",
            "class StaysTest((Helper), MultiProcessTestCase):",
        ),
        (
            "class StaysTest(Helper, MultiProcessTestCase):",
            "class StaysTest(Helper, MultiProcessTestCase, metaclass=type):",
        ),
        (
            "class StaysTest(Helper, MultiProcessTestCase):",
            "class StaysTest(Helper,  MultiProcessTestCase):",
        ),
    ],
    ids=["parenthesised base", "class keyword", "base written with spaces"],
)
def test_a_shape_the_report_may_word_differently_goes_to_libcst(monkeypatch, change):
    frozen = _frozen_of(monkeypatch)
    text = (HEADER + MOVES + STAYS + MAIN).replace(*change)
    same_as_whole(text, MigrateOptions())
    assert frozen and not frozen[0].names


def test_a_class_whose_subclass_moves_a_test_stays_in_the_plan(monkeypatch):
    frozen = _frozen_of(monkeypatch)
    subclass = textwrap.dedent(
        """

        class MovesFromStays(StaysTest):
            def test_moves(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group(
                    "gloo", rank=self.rank, world_size=self.world_size, store=store
                )
                dist.destroy_process_group()
        """
    )
    same_as_whole(HEADER + STAYS + subclass + MAIN, MigrateOptions())
    assert frozen and not frozen[0].names


@pytest.mark.parametrize("runtime", ["distlint", "torch"])
def test_every_fixture_migrates_as_the_whole_file(monkeypatch, runtime):
    frozen = _frozen_of(monkeypatch)
    for case in multi_process_fixtures():
        same_as_whole(
            case.read_text(encoding="utf-8", errors="replace"),
            MigrateOptions(runtime=runtime),
            load_config(case),
            str(case),
        )
    # The fixtures hold both kinds: files with nothing to move, and frozen classes beside others.
    assert sum(f.everything and bool(f.names) for f in frozen) >= 2
    assert sum(not f.everything and bool(f.names) for f in frozen) >= 1


def test_a_family_without_tests_keeps_its_base_and_is_left_out(monkeypatch):
    """Reused workers take a family's kept tests; a base class with none keeps its base (the
    plan's reused-workers step skips it), even where the analysis calls it fit."""
    frozen = _frozen_of(monkeypatch)
    empty = textwrap.dedent(
        """

        class SpawningBase(MultiProcessTestCase):
            def setUp(self):
                super().setUp()
                self._spawn_processes()
        """
    )
    for options in OPTIONS.values():
        result = same_as_whole(HEADER + empty + MAIN, options)
        assert [c.name for c in result.report.classes] == ["SpawningBase"]
    assert all(f.everything and f.names == {"SpawningBase"} for f in frozen)

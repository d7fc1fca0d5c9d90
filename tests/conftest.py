"""Shared test helpers (keep small: several test modules and authors use it)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Callable

import pytest

from distlint.cli import main

#: A file with exactly one finding of DL302 (the lead's anchor rule, always present).
MISSPELLED_BASE_SOURCE = (
    "from torch.testing._internal.common_distributed import MultiProcContinousTest\n"
    "\n"
    "\n"
    "class TestCollectives(MultiProcContinousTest):\n"
    "    def test_all_reduce(self):\n"
    "        pass\n"
)
#: ``MISSPELLED_BASE_SOURCE`` after ``--fix``.
MISSPELLED_BASE_FIXED = MISSPELLED_BASE_SOURCE.replace(
    "MultiProcContinousTest", "MultiProcContinuousTest"
)
CLEAN_SOURCE = "import unittest\n\n\nclass TestPlain(unittest.TestCase):\n    def test_one(self):\n        self.assertTrue(True)\n"
#: A per-test class whose other base comes from ``shared_checks.py`` (written, or not, by the test
#: next to it): whether that module brings tests decides whether ``test_sum`` can move.
EXTERNAL_BASE_SOURCE = """\
import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase

from shared_checks import SharedChecks


class AllReduceTest(SharedChecks, MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_sum(self):
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size)
        dist.all_reduce(torch.ones(1))
"""

CliResult = tuple[int, str, str]


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Create ``files`` (relative path -> text, dedented) under ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def run_cli(capsys, monkeypatch, tmp_path) -> Callable[..., CliResult]:
    """Run ``distlint ARGS`` in-process in ``cwd`` (default: tmp_path); return (status, stdout, stderr).

    The cache goes to a per-test directory unless the test passes ``--cache-dir`` or
    ``--no-cache`` itself, so tests never write into the repository.
    """
    monkeypatch.setenv("DISTLINT_CACHE_DIR", str(tmp_path / ".test-distlint-cache"))

    def run(*args: str, cwd: os.PathLike = tmp_path) -> CliResult:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        status = main(list(args))
        out, err = capsys.readouterr()
        return status, out, err

    return run


#: The modules that take longest (most run processes that import torch), slowest first, as
#: measured (``--junitxml``, per file). Under ``pytest -n 2 --dist loadfile`` the workers take
#: files in collection order (once xdist's own reordering is off: ``pytest_configure``): started
#: last, one of these would leave a worker finishing it alone while the other idles; the files not
#: named here take seconds each and fill in at the end.
SLOW_MODULES = (
    "test_fast_start.py",
    "test_migrate_verify.py",
    "test_processes.py",
    "test_migrate_equivalence.py",
    "test_faults.py",
    "test_on_ranks.py",
    "test_names.py",
    "test_surface.py",
    "test_precommit.py",
    "test_migrate.py",
    "test_engine.py",
    "test_torch_mixins.py",
    "test_source.py",
    "test_plain_classes.py",
    "test_torch_cli.py",
)


def pytest_configure(config) -> None:
    """Keep the collection order below under ``--dist loadfile``: pytest-xdist (3.x) otherwise
    reorders the files by their number of tests, largest first, which puts the slow modules
    (few tests each, minutes in all) last, and leaves one worker finishing them alone."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list) -> None:
    """Slow modules first, each module's tests in their own order (a stable sort)."""
    rank = {name: index for index, name in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_MODULES)))

"""``distlint migrate`` keeps what the tests were written against and writes PR-ready code.

* A moved ``world_size`` property that returns a constant becomes a class attribute (what
  torch's continuous classes and ``create_local_tensor_test_class`` twins read).
* With ``--runtime torch``, a gloo class whose tests used ``opts()`` overrides torch's
  ``_init_pg`` so its tests' PG is built from those options (torch's drops them).
* The fixture written in black's layout migrates to black's layout (every golden fixture's
  layout: ``test_migrate.py::test_migrated_lines_need_no_formatter``).
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

import pytest

from distlint.codemods.migrate_continuous import MigrateOptions, MigrationResult, migrate_source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "migrate"
CHANGED = sorted(
    p for p in FIXTURES.glob("test_*.py") if p.with_name(p.name + ".migrated").exists()
)
RUNTIMES = ("distlint", "torch")
#: Written as black writes it (the other fixtures have lines of up to ~130 characters).
BLACK_LAYOUT = FIXTURES / "test_gloo_dtensor_world_size.py"


@functools.cache
def _migrate(path: Path, runtime: str) -> MigrationResult:
    result = migrate_source(
        path.read_bytes(), str(path.relative_to(ROOT)), options=MigrateOptions(runtime=runtime)
    )
    assert result.error is None and result.migrated is not None
    return result


def _inline(text: str, runtime: str) -> str:
    result = migrate_source(
        textwrap.dedent(text).encode(), "test_inline.py", options=MigrateOptions(runtime=runtime)
    )
    assert result.error is None and result.migrated is not None, result.error
    return result.migrated.decode()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_file_in_blacks_layout_migrates_to_blacks_layout(runtime: str) -> None:
    text = _migrate(BLACK_LAYOUT, runtime).migrated.decode()
    assert "from torch.testing._internal.distributed._tensor.common_dtensor import (\n" in text
    # The twin's call, broken as black breaks it (one argument per line: they do not fit on one).
    assert (
        "DTensorWorldSizeTestContinuousWithLocalTensor = create_local_tensor_test_class(\n"
        "    DTensorWorldSizeTestContinuous,\n"
        '    skipped_tests=["test_replicate_from_local"],\n'
        "    base_class=LocalDTensorContinuousTestBase,\n"
        ")\n"
    ) in text


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_constant_world_size_property_becomes_a_class_attribute(runtime: str) -> None:
    text = _migrate(BLACK_LAYOUT, runtime).migrated.decode()
    body = text.split("class DTensorWorldSizeTestContinuous(", 1)[1]
    # The comment explaining the value stays with it.
    assert body.split("def test_", 1)[0].endswith(
        "    # two ranks are enough for a 1-D mesh\n    world_size = 2\n\n    "
    )
    assert "def world_size" not in text


def test_a_world_size_property_that_is_not_a_constant_stays_a_property() -> None:
    text = _inline(
        """
        import torch
        from torch.testing._internal.common_utils import run_tests
        from torch.testing._internal.distributed._tensor.common_dtensor import (
            DTensorTestBase,
            with_comms,
        )


        class ATest(DTensorTestBase):
            @property
            def world_size(self):
                return min(4, torch.cuda.device_count())

            @with_comms
            def test_mesh(self):
                self.assertEqual(self.build_device_mesh().size(), self.world_size)


        if __name__ == "__main__":
            run_tests()
        """,
        "torch",
    )
    assert "    @property\n    def world_size(self):\n" in text


def test_torch_runtime_builds_a_gloo_classs_pg_from_its_options() -> None:
    text = _migrate(FIXTURES / "test_gloo_c10d_shaped.py", "torch").migrated.decode()
    init_pg = (
        "    @classmethod\n"
        "    def _init_pg(cls, rank, world_size, rdvz_file):\n"
        "        # init_process_group drops gloo's opts(): the tests get a group built from them.\n"
        "        super()._init_pg(rank, world_size, rdvz_file)\n"
        '        store = c10d.PrefixStore("opts/", c10d.FileStore(rdvz_file, world_size))\n'
        "        cls.pg = c10d.ProcessGroupGloo(store, rank, world_size, cls.opts())\n"
    )
    # Once per class that builds a PG: the class's options and the threads=8 variant's.
    assert text.count(init_pg) == 2
    # distlint's runtime builds that group itself (distlint.runtime.class_pg); a class without
    # opts() keeps torch's _init_pg.
    assert (
        "_init_pg"
        not in _migrate(FIXTURES / "test_gloo_c10d_shaped.py", "distlint").migrated.decode()
    )
    comm = text.split("class CommTestContinuous(", 1)[1].split("\nclass ", 1)[0]
    assert "_init_pg" not in comm


def test_torch_distributed_is_imported_when_the_file_binds_no_name_for_it() -> None:
    text = _inline(
        """
        import torch
        from torch.distributed import FileStore, ProcessGroupGloo
        from torch.testing._internal.common_distributed import MultiProcessTestCase
        from torch.testing._internal.common_utils import run_tests


        class ATest(MultiProcessTestCase):
            world_size = 2

            def setUp(self):
                super().setUp()
                self._spawn_processes()

            def opts(self):
                opts = ProcessGroupGloo._Options()
                opts._timeout = 50.0
                opts._devices = [ProcessGroupGloo.create_default_device()]
                return opts

            def test_sum(self):
                store = FileStore(self.file_name, self.world_size)
                pg = ProcessGroupGloo(store, self.rank, self.world_size, self.opts())
                tensor = torch.ones(1)
                pg.allreduce([tensor]).wait()
                self.assertEqual(tensor, torch.full((1,), 2.0))


        if __name__ == "__main__":
            run_tests()
        """,
        "torch",
    )
    assert "import torch.distributed as dist\n" in text
    assert "cls.pg = dist.ProcessGroupGloo(store, rank, world_size, cls.opts())" in text

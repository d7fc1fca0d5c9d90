"""The second target of ``distlint migrate``: a class whose kept tests run on reused workers.

Small inputs, each the shape of a real suite's class; DL201 must say what migrate does (the
analysis decides both: ``distlint/analysis/pg/reuse.py``). That the moved files still test the
same thing is proven by running them (``tests/test_migrate_equivalence.py``, gloo fixtures).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distlint.codemods.migrate_continuous import MigrateOptions, migrate_source
from distlint.config import Config
from distlint.linter import lint_source

HEADER = """\
import os
import sys
import threading

import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests

"""

#: A line ``# spawn per test`` in a class body stands for torch's per-test ``setUp``.
SPAWN = """\
def setUp(self):
    super().setUp()
    self._spawn_processes()
"""


def _file(body: str) -> bytes:
    lines = []
    for line in textwrap.dedent(body).splitlines(keepends=True):
        if line.strip() == "# spawn per test":
            indent = line[: len(line) - len(line.lstrip())]
            lines += [indent + setup_line for setup_line in SPAWN.splitlines(keepends=True)]
        else:
            lines.append(line)
    return (HEADER + "".join(lines)).encode()


def _dl201(source: bytes, path: str = "test_inline.py") -> dict[str, str]:
    findings = lint_source(source, path, Config(select=("DL201",))).findings
    return {f.message.split("`")[1]: f.message for f in findings}


def test_a_test_that_destroys_its_pg_moves_its_class_and_keeps_its_body() -> None:
    source = _file(
        """
        class GlooTest(MultiProcessTestCase):
            world_size = 2

            # spawn per test

            def test_reinit(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)
                dist.destroy_process_group()
                dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)
        """
    )
    result = migrate_source(source, "test_inline.py")
    text = result.migrated.decode()
    assert "class GlooTest(ReusedWorkersTest):" in text
    assert "_spawn_processes" not in text and "def setUp" not in text
    assert "from distlint.runtime import ReusedWorkersTest" in text
    # The body is the original's, line for line.
    body = source.decode().split("def test_reinit(self):")[1]
    assert text.split("def test_reinit(self):")[1].startswith(body.split("\n\n")[0])
    [cls] = result.report.classes
    assert cls.reused_workers and [(e.test, e.code) for e in cls.reused] == [
        ("test_reinit", "destroys-pg-early")
    ]
    assert "keep its own PG, on reused workers" in _dl201(source)["test_reinit"]
    # Under torch's runtime, and when asked not to: the class stays, and the report says why.
    torch = migrate_source(source, "test_inline.py", options=MigrateOptions(runtime="torch"))
    assert not torch.changed and "use --runtime distlint" in torch.report.text()
    kept = MigrateOptions(reused_workers=False)
    assert not migrate_source(source, "test_inline.py", options=kept).changed


def test_an_environment_only_setup_stays_without_its_spawn() -> None:
    source = _file(
        """
        class NcclDdpTest(MultiProcessTestCase):
            world_size = 2

            def setUp(self):
                super().setUp()
                if sys.platform == "linux":
                    os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
                self._spawn_processes()

            def test_own_timeout(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group(
                    "gloo", store=store, rank=self.rank, world_size=2, timeout=5
                )
        """
    )
    text = migrate_source(source, "test_inline.py").migrated.decode()
    setup = text.split("def setUp(self):")[1].split("def test_own_timeout")[0]
    assert "super().setUp()" in setup and 'os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"]' in setup
    assert "_spawn_processes" not in setup
    assert "class NcclDdpTest(ReusedWorkersTest):" in text


def test_a_setup_that_reads_self_keeps_the_class_per_test() -> None:
    source = _file(
        """
        class TraceTest(MultiProcessTestCase):
            world_size = 2

            def setUp(self):
                super().setUp()
                os.environ["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = self.file_name + ".trace"
                self._spawn_processes()

            def test_dump(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)
                dist.destroy_process_group()
                dist.barrier()
        """
    )
    result = migrate_source(source, "test_inline.py")
    assert not result.changed
    assert "not on reused workers" in result.report.text()
    assert "keep it per-test" in _dl201(source)["test_dump"]


def test_a_test_that_needs_its_own_process_keeps_its_whole_family_per_test() -> None:
    source = _file(
        """
        class GlooTest(MultiProcessTestCase):
            world_size = 2

            # spawn per test

            def test_abort(self):
                store = dist.FileStore(self.file_name, self.world_size)
                pg = dist.ProcessGroupGloo(store, self.rank, 2)
                pg.abort()

            def test_hung_collective_in_a_thread(self):
                store = dist.FileStore(self.file_name, self.world_size)
                pg = dist.ProcessGroupGloo(store, self.rank, 2)
                if self.rank == 0:
                    thread = threading.Thread(target=lambda: pg.allreduce([torch.ones(1)]).wait())
                    thread.daemon = True
                    thread.start()


        class GlooSubTest(GlooTest):
            def test_exit(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)
                sys.exit(0)
        """
    )
    result = migrate_source(source, "test_inline.py")
    # test_hung_collective_in_a_thread can share the class's PG; the others stay per test.
    assert result.report.reused_count == 0
    assert (
        "not on reused workers: GlooTest.test_hung_collective_in_a_thread needs a process of its own (starts a thread"
        in result.report.text()
    )
    messages = _dl201(source)
    assert "keep it per-test" in messages["test_abort"]
    assert "keep it per-test" in messages["test_exit"]
    # Without the thread the subclass's exit still keeps the family.
    no_thread = source.replace(b"threading.Thread", b"threading.Timer")
    again = migrate_source(no_thread, "test_inline.py")
    assert again.report.reused_count == 0
    assert "GlooSubTest.test_exit needs a process of its own" in again.report.text()
    # A starter written with characters ``ast`` folds into "Thread" is one too (its text does
    # not name it: the walk is not skipped).
    folded = source.replace(b"threading.Thread", "threading.Ｔhread".encode())
    assert "Ｔhread" in folded.decode()
    again = migrate_source(folded, "test_inline.py")
    assert "needs a process of its own (starts a thread (Thread(...)))" in again.report.text()


def test_a_base_from_another_module_moves_with_its_tests_once_read(tmp_path: Path) -> None:
    (tmp_path / "shared_checks.py").write_text(
        textwrap.dedent(
            """
            class SharedChecks:
                def tearDown(self):
                    try:
                        os.remove(self.file_name)
                    except OSError:
                        pass

                def test_shared_sum(self):
                    self._run_sum()
            """
        )
    )
    source = _file(
        """
        from shared_checks import SharedChecks


        class DdpTest(SharedChecks, MultiProcessTestCase):
            world_size = 2

            # spawn per test

            def _run_sum(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)

            def test_sum(self):
                self._run_sum()
        """
    )
    path = tmp_path / "test_ddp.py"
    result = migrate_source(source, str(path))
    assert "class DdpTest(SharedChecks, ReusedWorkersTest):" in result.migrated.decode()
    reused = {e.test: e.code for e in result.report.classes[0].reused}
    assert reused == {"test_sum": "external-base", "test_shared_sum": "external-base"}
    assert "on reused workers" in _dl201(source, str(path))["test_sum"]
    # A base whose tests exit needs a process per test: the class stays.
    (tmp_path / "shared_checks.py").write_text(
        "import sys\n\nclass SharedChecks:\n    def test_exit(self):\n        sys.exit(0)\n"
    )
    stays = migrate_source(source, str(path))
    assert not stays.changed and "calls sys.exit()" in stays.report.text()

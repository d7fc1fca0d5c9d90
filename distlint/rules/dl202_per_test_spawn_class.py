"""DL202: a class whose tests each spawn processes and create a process group."""

from __future__ import annotations

from distlint.analysis.model import ClassAnalysis, ExecutionModel
from distlint.analysis.pg import module_analysis
from distlint.analysis.pg.eligibility import reason_counts
from distlint.analysis.pg.execution import integer_literal
from distlint.rules.fact_rule import FactRule
from distlint.rules.rule import Invalid, Valid


def _plural(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


class PerTestSpawnClass(FactRule):
    """A test class spawns fresh processes and creates a process group for every test.

    ## What it does
    Reports, once per class at the class line, classes whose tests each spawn worker
    processes and create a PG (`MultiProcessTestCase` with `self._spawn_processes()` in
    `setUp`, `DTensorTestBase`, `FSDPTest`, `DistributedTestBase`, `per-test-bases`), with
    how many tests pay for it and how many of them could run on one PG shared by the
    class, and why the others cannot (they abort the PG, set `TORCH_NCCL_*`, expect
    failure, ...). Continuous classes, threaded classes (`MultiThreadedTestCase`), plain
    unit tests and per-test classes whose tests create no PG are not reported. Inherited
    tests count on the class that defines them only: a subclass that just flips an
    attribute gets no finding of its own.

    On by default: one finding per class is the unit you act on (one `distlint migrate`).
    Select DL201 for the per-test detail.

    ## Why is this bad?
    Each test pays process start-up (re-importing torch in every worker) and PG
    rendezvous; on a shared PG the same tests run in a fraction of the time — PyTorch
    cut a 24-test NCCL class from 174 s to 16 s.

    ## Example
    ```python
    class ProcessGroupGlooTest(MultiProcessTestCase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_allreduce(self):
            store = c10d.FileStore(self.file_name, self.world_size)
            pg = self._create_process_group_gloo(store, self.rank, self.world_size, self.opts())
            pg.allreduce(torch.ones(1)).wait()
    ```

    ## Use instead
    ```python
    class ProcessGroupGlooTestContinuous(MultiProcContinuousTest):
        @classmethod
        def backend_str(cls):
            return "gloo"

        def test_allreduce(self):
            self.pg.allreduce(torch.ones(1)).wait()
    ```
    Run `distlint migrate` to move the migratable tests; the others stay where they are.
    """

    code = "DL202"

    VALID = [
        # Threaded tests share a process: not a target.
        Valid(
            """
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiThreadedTestCase

            class TestThreaded(MultiThreadedTestCase):
                def setUp(self):
                    super().setUp()
                    self._spawn_threads()

                def test_allreduce(self):
                    dist.init_process_group("threaded", rank=self.rank, world_size=self.world_size)
            """
        ),
        # A plain unit test.
        Valid(
            """
            import unittest
            import torch.distributed as dist

            class TestAvailability(unittest.TestCase):
                def test_available(self):
                    self.assertTrue(dist.is_available())
            """
        ),
        # @on_ranks tests (distlint.runtime) already share one PG per pool.
        Valid(
            """
            import torch
            import torch.distributed as dist
            from distlint.runtime import on_ranks

            class TestCollectives:
                @on_ranks(2, backend="gloo")
                def test_allreduce(self, rank):
                    dist.all_reduce(torch.ones(1))

                @on_ranks(4, backend="gloo")
                def test_barrier(self, rank):
                    dist.barrier()
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            class TestGloo(MultiProcessTestCase):
                world_size = 2

                def setUp(self):
                    super().setUp()
                    self._spawn_processes()

                def _init_pg(self):
                    dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                            rank=self.rank, world_size=self.world_size)

                def test_allreduce(self):
                    self._init_pg()

                def test_barrier(self):
                    self._init_pg()

                def test_abort(self):
                    self._init_pg()
                    dist.distributed_c10d._abort_process_group()
            """,
            expected_message="`TestGloo`: 3 tests each spawn 2 processes and create a PG; 2 can move to a "
            "continuous class (run `distlint migrate`), 1 cannot: 1 aborts or shuts down the PG",
            line=5,
            column=1,
        ),
        # DTensorTestBase tests get their PG from @with_comms.
        Invalid(
            """
            from torch.distributed.tensor import distribute_tensor, Shard
            from torch.testing._internal.distributed._tensor.common_dtensor import DTensorTestBase, with_comms

            class TestShard(DTensorTestBase):
                @with_comms
                def test_shard(self):
                    distribute_tensor(self.x, self.build_device_mesh(), [Shard(0)])
            """,
            # distlint migrate moves it to the DTensor continuous base (and drops @with_comms).
            expected_message="`TestShard`: 1 test spawns world_size processes and creates a PG; all 1 can move "
            "to a continuous class: run `distlint migrate`",
            line=5,
            column=1,
        ),
    ]

    def check(self) -> None:
        for analysis in module_analysis(self.context).classes:
            if analysis.model is ExecutionModel.PER_TEST_SPAWN and analysis.pg_tests:
                self.report_node(analysis.node, self.message(analysis))

    @staticmethod
    def message(analysis: ClassAnalysis) -> str:
        tests = analysis.pg_tests
        total = len(tests)
        movable = sum(1 for t in tests if t.eligible)
        stuck = total - movable
        world = integer_literal(analysis.world_size)
        processes = (
            "world_size processes"
            if world is None
            else f"{world} {_plural(world, 'process', 'processes')}"
        )
        head = (
            f"`{analysis.name}`: {total} {_plural(total, 'test spawns', 'tests each spawn')} {processes} "
            f"and {_plural(total, 'creates', 'create')} a PG"
        )
        reasons = ", ".join(f"{count} {phrase}" for count, phrase in reason_counts(analysis))
        if stuck == 0:
            return f"{head}; all {total} can move to a continuous class: run `distlint migrate`"
        # The tests that keep their own PG run on ranks the class spawns once (ReusedWorkersTest).
        reused = (
            f"; {'it' if stuck == 1 else 'they'} can run as written on reused workers: run "
            "`distlint migrate`"
            if analysis.reused_workers
            else ""
        )
        if movable == 0:
            return (
                f"{head}; none can move to a continuous class: {reasons} (select DL201 for each "
                f"test){reused}"
            )
        return (
            f"{head}; {movable} can move to a continuous class (run `distlint migrate`), "
            f"{stuck} cannot: {reasons}{reused}"
        )

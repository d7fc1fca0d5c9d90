"""DL203: a test of a continuous class creates, destroys or aborts the shared process group."""

from __future__ import annotations

from distlint.analysis.model import ExecutionModel
from distlint.analysis.pg import module_analysis
from distlint.rules.fact_rule import FactRule
from distlint.rules.rule import Invalid, Valid


class PgLifecycleInContinuousClass(FactRule):
    """A test in a continuous class initialises, destroys or aborts the PG all its tests share.

    ## What it does
    In classes that keep one worker pool and one PG for all their tests
    (`MultiProcContinuousTest`, `DTensorContinuousTestBase`, `FSDPTestContinuous`,
    `continuous-bases`), reports tests that call `init_process_group`,
    `destroy_process_group()` (of the default group), `_abort_process_group()`, or
    `.abort()` / `.shutdown()` on the shared PG (`self.pg`, the default group,
    `group.WORLD`) — directly or through a same-file helper. Subgroups
    (`dist.new_group`) and destroying them are fine.

    ## Why is this bad?
    Every later test in the class runs on the same workers: after this test they find a
    destroyed or aborted PG (or a second `init_process_group` fails), so they fail or hang
    for a reason that has nothing to do with what they test.

    ## Example
    ```python
    class TestCollectives(MultiProcContinuousTest):
        def test_abort(self):
            dist.all_reduce(torch.ones(1))
            self.pg.abort()
    ```

    ## Use instead
    ```python
    class TestAbort(MultiProcessTestCase):  # a per-test class: a fresh PG every test
        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_abort(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
            dist.distributed_c10d._abort_process_group()
    ```
    """

    code = "DL203"

    VALID = [
        # A subgroup created and destroyed inside the test leaves the shared PG alone.
        Valid(
            """
            import torch
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class TestSubgroups(MultiProcContinuousTest):
                def test_subgroup(self):
                    group = dist.new_group([0, 1])
                    dist.all_reduce(torch.ones(1), group=group)
                    dist.destroy_process_group(group)
            """
        ),
        # Per-test classes may tear their own PG down.
        Valid(
            """
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            class TestGloo(MultiProcessTestCase):
                def setUp(self):
                    super().setUp()
                    self._spawn_processes()

                def test_destroy(self):
                    dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                            rank=self.rank, world_size=self.world_size)
                    dist.destroy_process_group()
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import torch
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class TestCollectives(MultiProcContinuousTest):
                def test_allreduce(self):
                    dist.all_reduce(torch.ones(1))
                    dist.destroy_process_group()
            """,
            expected_message="`test_allreduce` calls destroy_process_group() in continuous class `TestCollectives`",
            line=9,
            column=9,
        ),
        Invalid(
            """
            from distlint.runtime import MultiProcContinuousTest

            class TestAbort(MultiProcContinuousTest):
                def _break(self):
                    self.pg.abort()

                def test_abort(self):
                    self._break()
            """,
            expected_message=".abort() via self._break",
            line=9,
            column=9,
        ),
    ]

    def check(self) -> None:
        for analysis in module_analysis(self.context).classes:
            if analysis.model is not ExecutionModel.CONTINUOUS:
                continue
            for test, call, what in analysis.lifecycle_calls:
                self.report_node(
                    call,
                    f"`{test}` calls {what} in continuous class `{analysis.name}`: every later test "
                    "then runs on a broken or missing PG; use a subgroup (dist.new_group) or move "
                    "the test to a per-test class",
                )

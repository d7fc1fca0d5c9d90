"""DL201: a test of a per-test spawn class creates its own process group."""

from __future__ import annotations

from distlint.analysis.model import (
    ClassAnalysis,
    CreationKind,
    ExecutionModel,
    PGCreation,
    TestAnalysis,
)
from distlint.analysis.pg import module_analysis
from distlint.analysis.pg.eligibility import describe_short
from distlint.analysis.pg.reuse import runs_on_reused_workers
from distlint.rules.fact_rule import FactRule, Span
from distlint.rules.rule import Invalid, Valid


def creation_text(test: TestAnalysis) -> str:
    """'via self._init_pg -> init_process_group' / 'with init_process_group'."""
    described = test.creations[0].describe()
    return described if described.startswith("via ") else f"with {described}"


class PerTestProcessGroup(FactRule):
    """A test in a per-test spawn class creates its own process group.

    ## What it does
    In classes whose tests each spawn fresh worker processes (`MultiProcessTestCase`
    with `self._spawn_processes()` in `setUp`, `DTensorTestBase`, `FSDPTest`,
    `DistributedTestBase`, or a `per-test-bases` entry), reports every test that creates
    a process group, at the creation, at the decorator, or at the test's name when the
    PG is made outside the test (FSDPTest's worker): `init_process_group`, a
    backend constructor (`ProcessGroupNCCL(store, ...)`), a same-file helper that does
    one of those (followed through `self.` calls), a known helper
    (`_create_process_group_nccl`, `create_pg`, `pg-helpers`), `@with_comms`
    (`pg-decorators`), or `init_device_mesh`. The message says how the PG is created and
    whether the test could share one PG with its class — "migratable" — or why not:
    it destroys or aborts the PG early, creates several PGs, sets `TORCH_NCCL_*` /
    `NCCL_*` / `TORCH_DISTRIBUTED_DEBUG`, passes its own timeout, options, backend, world
    size or rank, binds its PG to a device (`device_id=`), expects failure (an `assertRaises`
    around a PG call, or around the call of a function the test defines that makes one; one
    around a collective that checks an argument error, as PyTorch's `test_*_checks` do, is no
    failure: every rank rejects the call before communicating), uses `self.file_name` beyond the store, or kills a rank;
    or its class cannot share a PG (a per-test base other than `MultiProcessTestCase`, a
    `setUp` that does more than spawn the workers, a subclass that cannot move, other code of
    the module naming the class, ...). "Migratable" is exactly what `distlint migrate` moves
    with the distlint runtime, unless the rewrite itself cannot be made (its report says why).
    A test that must keep its own PG, in a `MultiProcessTestCase` class whose tests all run
    in any process (none exits, kills a rank or has its exit code checked), says "keep its own
    PG, on reused workers": `distlint migrate` moves its class to the distlint runtime's
    `ReusedWorkersTest`, ranks spawned once and a fresh PG for every test, its body unchanged.
    A test with a `# distlint: keep-per-test` comment above it (what `distlint migrate --verify
    --write` leaves on a test the runs kept behind) is not migratable: "kept by a comment".

    Off by default: DL202 reports the same facts once per class, and DL201 repeats them
    per test (dozens of findings on a file like PyTorch's `test_c10d_gloo.py`, most of
    which one `distlint migrate` run removes). Select DL201 when you decide test by test
    (`--select DL201`, or `select = ["DL2"]`); `# noqa: DL201` then marks a test that
    must stay per-test.

    ## Why is this bad?
    Spawning processes and creating a PG costs seconds per test; a class that keeps one
    worker pool and one PG for all its tests (a continuous class) runs the same tests
    many times faster — PyTorch cut a 24-test NCCL class from 174 s to 16 s.

    ## Example
    ```python
    class ProcessGroupGlooTest(MultiProcessTestCase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_allreduce(self):
            store = c10d.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
            dist.all_reduce(torch.ones(1))
    ```

    ## Use instead
    ```python
    class ProcessGroupGlooTest(MultiProcContinuousTest):
        world_size = 2

        @classmethod
        def backend_str(cls):
            return "gloo"

        def test_allreduce(self):
            dist.all_reduce(torch.ones(1))
    ```
    `distlint migrate` moves the migratable tests for you.
    """

    code = "DL201"

    VALID = [
        # A continuous class shares one PG: nothing to move.
        Valid(
            """
            import torch
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class TestCollectives(MultiProcContinuousTest):
                world_size = 2

                def test_allreduce(self):
                    dist.all_reduce(torch.ones(1))
            """
        ),
        # A per-test class whose tests never create a PG.
        Valid(
            """
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            class TestSpawnOnly(MultiProcessTestCase):
                def setUp(self):
                    super().setUp()
                    self._spawn_processes()

                def test_rank(self):
                    self.assertLess(self.rank, self.world_size)
            """
        ),
        # @on_ranks tests run on a pool's shared PG (distlint.runtime): nothing to move.
        Valid(
            """
            import torch
            import torch.distributed as dist
            from distlint.runtime import on_ranks

            @on_ranks(2, backend="gloo")
            def test_allreduce(rank, world_size):
                dist.all_reduce(torch.ones(1))

            @on_ranks(2, backend="gloo")
            class TestCollectives:
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
                def setUp(self):
                    super().setUp()
                    self._spawn_processes()

                def test_allreduce(self):
                    store = dist.FileStore(self.file_name, self.world_size)
                    dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
                    dist.destroy_process_group()
            """,
            expected_message="`test_allreduce` creates its own PG with init_process_group; migratable",
            line=12,
            column=9,
        ),
        # Through a same-class helper, with an aliased import; NCCL environment keeps its own PG,
        # which its class's reused workers give it.
        Invalid(
            """
            import os
            import torch.distributed.distributed_c10d as c10d
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            class TestNccl(MultiProcessTestCase):
                def setUp(self):
                    super().setUp()
                    self._spawn_processes()

                def _init_process(self):
                    store = c10d.FileStore(self.file_name, self.world_size)
                    c10d.init_process_group("nccl", store=store, rank=self.rank, world_size=self.world_size)

                def test_blocking(self):
                    os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"
                    self._init_process()
            """,
            expected_message="via self._init_process -> init_process_group; keep its own PG, on "
            "reused workers (run `distlint migrate`): sets PG environment (TORCH_NCCL_BLOCKING_WAIT)",
            line=17,
            column=9,
        ),
        # A test that exits needs a process of its own: its class stays per test.
        Invalid(
            """
            import sys
            import torch.distributed as dist
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            class TestExit(MultiProcessTestCase):
                def setUp(self):
                    super().setUp()
                    self._spawn_processes()

                def test_exit(self):
                    store = dist.FileStore(self.file_name, self.world_size)
                    dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
                    sys.exit(0)
            """,
            expected_message="with init_process_group; keep it per-test: expects failure (sys.exit())",
            line=13,
            column=9,
        ),
    ]

    def check(self) -> None:
        for analysis in module_analysis(self.context).classes:
            if analysis.model is not ExecutionModel.PER_TEST_SPAWN:
                continue
            for test in analysis.pg_tests:
                self.report_at(self.where(test.creations[0]), self.message(test, analysis))

    def where(self, creation: PGCreation) -> Span:
        """The call that creates the PG; a decorator from its ``@``; a base's ``_run``: the
        test's name."""
        if creation.kind is CreationKind.DECORATOR:
            return self.source.decorator_span(creation.node)  # type: ignore[arg-type]
        if creation.kind is CreationKind.BASE_RUN:
            return self.source.name_span(creation.node)  # type: ignore[arg-type]
        return self.source.span(creation.node)

    @staticmethod
    def message(test: TestAnalysis, cls: ClassAnalysis) -> str:
        head = f"`{test.name}` creates its own PG {creation_text(test)}"
        if test.eligible:
            return f"{head}; migratable: run `distlint migrate` to move it to a continuous class"
        reasons = "; ".join(describe_short(entry) for entry in test.ineligible)
        if runs_on_reused_workers(cls, test):
            return f"{head}; keep its own PG, on reused workers (run `distlint migrate`): {reasons}"
        return f"{head}; keep it per-test: {reasons}"

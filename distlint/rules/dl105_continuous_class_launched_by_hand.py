"""DL105: a main block that launches a continuous class's ranks itself instead of calling run_tests()."""

from __future__ import annotations

import libcst as cst

from distlint.analysis.mainblock import main_block_facts
from distlint.rules.base import Invalid, LintRule, Valid

MESSAGE = (
    "{call} launches the ranks of continuous class `{cls}` by hand (the torchrun / mp.spawn pattern "
    "of PyTorch PR 125648); continuous classes now start their ranks in `run_tests()` (torch 2.13's "
    "`MultiProcContinuousTest` has no `run_rank`), which also works under pytest and with `-k`: "
    "call `run_tests()` in the main block instead"
)


class ContinuousClassLaunchedByHand(LintRule):
    """The main block launches a continuous test class's ranks itself.

    ## What it does
    Reports the call in an `if __name__ == "__main__":` block that runs a continuous
    class's tests rank by rank: `SomeTest.run_rank(rank, world_size)` (the torchrun path)
    or `torch.multiprocessing.spawn(SomeTest.run_rank, nprocs=..., args=(...))` (any
    alias, directly or through a function of the module), where `SomeTest` is a class of
    the module deriving from `MultiProcContinuousTest` (or the misspelled
    `MultiProcContinousTest`, another continuous base, `continuous-bases`), once per
    module. A function of the module handed to `spawn` is followed like a call. This is the
    launch PyTorch's continuous-test PR 125648 recommended before `run_tests()` could
    start continuous classes. DL102 accepts such a block (it runs the tests); this rule
    says how to modernise it. No autofix: the block usually also checks GPUs, reads
    `RANK`/`WORLD_SIZE` and makes a rendezvous file, and a person decides what stays.

    ## Why is this bad?
    Today's continuous classes (torch's `MultiProcContinuousTest`, `distlint.runtime`'s)
    spawn their ranks and share one process group from `run_tests()`; torch 2.13's class
    has no `run_rank` at all, so the old launch fails with `AttributeError`. The launch
    also bypasses the runner: `pytest test_x.py`, `-k` selection and CI's XML reports do not
    see the tests the same way.

    ## Example
    ```python
    if __name__ == "__main__":
        rank = int(os.getenv("RANK", -1))
        world_size = int(os.getenv("WORLD_SIZE", 2))
        if rank != -1:
            SymmMemTest.run_rank(rank, world_size)
        else:
            rdvz_file = tempfile.NamedTemporaryFile(delete=False).name
            torch.multiprocessing.spawn(SymmMemTest.run_rank, nprocs=world_size, args=(world_size, rdvz_file))
    ```

    ## Use instead
    ```python
    if __name__ == "__main__":
        run_tests()
    ```
    """

    code = "DL105"

    VALID = [
        Valid(
            """
            from torch.testing._internal.common_distributed import MultiProcContinuousTest
            from torch.testing._internal.common_utils import run_tests

            class SymmMemTest(MultiProcContinuousTest):
                def test_rendezvous(self):
                    pass

            if __name__ == "__main__":
                run_tests()
            """
        ),
        # run_rank of a class that is not continuous is no launch of tests (DL102's business).
        Valid(
            """
            import torch.multiprocessing as mp

            class BenchHarness:
                @classmethod
                def run_rank(cls, rank, world_size):
                    print(rank, world_size)

            if __name__ == "__main__":
                mp.spawn(BenchHarness.run_rank, nprocs=2, args=(2,))
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import os
            import tempfile
            import torch
            from torch.testing._internal.common_distributed import MultiProcContinousTest

            class SymmMemTest(MultiProcContinousTest):
                def test_rendezvous(self):
                    pass

            if __name__ == "__main__":
                rank = int(os.getenv("RANK", -1))
                world_size = int(os.getenv("WORLD_SIZE", 2))
                if rank != -1:
                    SymmMemTest.run_rank(rank, world_size)
                else:
                    rdvz_file = tempfile.NamedTemporaryFile(delete=False).name
                    torch.multiprocessing.spawn(SymmMemTest.run_rank, nprocs=world_size,
                                                args=(world_size, rdvz_file))
            """,
            expected_message="`SymmMemTest.run_rank()` launches the ranks of continuous class `SymmMemTest` by hand",
            line=15,
            column=9,
        ),
        # Through a function of the module and an alias of spawn.
        Invalid(
            """
            import torch.multiprocessing as mp
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class PipelineTest(MultiProcContinuousTest):
                def test_schedule(self):
                    pass

            def main():
                mp.spawn(PipelineTest.run_rank, nprocs=2, args=(2,))

            if __name__ == "__main__":
                main()
            """,
            expected_message="`main()` (which calls `PipelineTest.run_rank`) launches the ranks",
            line=13,
            column=5,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        for guard in main_block_facts(self.context).guards:
            runner = guard.runner
            if runner is not None and runner.launches is not None:
                self.report(runner.call, MESSAGE.format(call=runner.described, cls=runner.launches))
                return

"""DL102: a main block that neither runs the tests nor raises.

Length (~500 lines): most of it is the rule's user doc and its VALID/INVALID examples, which
live on the rule by design (one generic harness runs them); the logic is ~60 lines.
"""

from __future__ import annotations

import libcst as cst

from distlint.analysis.mainblock import (
    main_block_facts,
    main_block_required,
)
from distlint.analysis.mainblock.fix import fill_empty_main_block
from distlint.rules.base import Fix, Invalid, LintRule, Valid
from distlint.torch_names import TORCH_RUNNER_MODULE

MESSAGE = (
    "the main block neither calls a test runner nor raises, so running the file runs no test; "
    "call `run_tests()` in it (or raise to mark the file as not meant to be run)"
)


class MainBlockWithoutRunner(LintRule):
    """The `if __name__ == "__main__":` block of a test module runs no test and does not raise.

    ## What it does
    Reports a test module whose top-level `if __name__ == "__main__":` blocks neither run
    its tests nor raise: a custom argparse CLI, a benchmark, a `print`, `pass`. It applies
    exactly where DL101 does: the module defines or generates tests and belongs to the
    `run_tests` convention under `require-main` (it imports `run_tests` or a configured
    runner; every module with tests with `"always"`; nowhere with `"never"`). A script
    without tests (a benchmark launcher, an installation check) and a pytest-run module
    that does not import `run_tests` are never reported, whatever their main block does.

    Only what the block runs counts: its own calls, followed into functions defined in the
    same module (`def main(): run_tests()` called from the block is fine), never a
    `run_tests` that merely appears elsewhere. Runners are `run_tests` (imported under any
    alias, or through its module: `common_utils.run_tests()`), the `runners` config,
    `unittest.main`, `pytest.main` and `unittest.TextTestRunner`. Launching the ranks of a
    continuous class of the module runs its tests too: `SomeTest.run_rank(rank, world_size)`
    (torchrun) and `torch.multiprocessing.spawn(SomeTest.run_rank, ...)` under any alias,
    the pattern PyTorch's continuous-test PR 125648 recommended, where `SomeTest` derives
    (maybe through other classes of the module) from `MultiProcContinuousTest`, the
    misspelled `MultiProcContinousTest`, another continuous base or `continuous-bases`.
    Raising (`raise RuntimeError(...)`, PyTorch's `raise_on_run_directly(...)`) is the
    accepted way to say "this file is not meant to be run directly".

    One finding per module, on its first main block, when no block runs a runner,
    launches a continuous class or raises. Silent while a runner is called at import
    (DL104's fix moves that call into the block).

    The fix only touches a block that does nothing at all (`pass`, `...`): it then calls
    `run_tests()`. A block that does something was written on purpose: a person decides.

    ## Why is this bad?
    CI runs the file as `python test_x.py`; a block that runs something else exits
    successfully without running a single test.

    ## Example
    ```python
    class TestAllReduce(TestCase):
        ...

    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--world-size", type=int, default=2)
        print(parser.parse_args())
    ```

    ## Use instead
    ```python
    class TestAllReduce(TestCase):
        ...

    if __name__ == "__main__":
        run_tests()
    ```
    """

    code = "DL102"

    VALID = [
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__":
                run_tests()
            """
        ),
        # The block calls a function of this module that runs the tests.
        Valid(
            """
            import sys
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            def main():
                sys.argv = sys.argv[:1]
                run_tests()

            if __name__ == '__main__':
                main()
            """
        ),
        # Aliases: `as rt`, the module imported under another name.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests as rt

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if "__main__" == __name__:
                rt()
            """
        ),
        Valid(
            """
            import torch.testing._internal.common_utils as cu

            class TestOptim(cu.TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__":
                cu.run_tests()
            """
        ),
        # Raising says "not meant to be run directly".
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, raise_on_run_directly, run_tests

            class TestFuser(TestCase):
                def test_fuse(self):
                    pass

            if __name__ == "__main__":
                raise_on_run_directly("test/test_jit.py")
            """
        ),
        Valid(
            """
            class TestFuser:
                def test_fuse(self):
                    pass

            if __name__ == "__main__":
                raise RuntimeError("run this file through test/test_jit.py")
            """,
            config={"require-main": "always"},
        ),
        # unittest.main(), a TextTestRunner and a runner named in the config run the tests.
        Valid(
            """
            import unittest
            from torch.testing._internal.common_utils import run_tests

            class TestThing(unittest.TestCase):
                def test_it(self):
                    pass

            if __name__ == "__main__":
                unittest.main()
            """
        ),
        Valid(
            """
            import unittest
            from torch.testing._internal.common_utils import run_tests

            class TestThing(unittest.TestCase):
                def test_it(self):
                    pass

            if __name__ == "__main__":
                suite = unittest.defaultTestLoader.loadTestsFromTestCase(TestThing)
                unittest.TextTestRunner(verbosity=2).run(suite)
            """
        ),
        Valid(
            """
            import unittest
            from mypkg.testing import launch_tests

            class TestThing(unittest.TestCase):
                def test_it(self):
                    pass

            if __name__ == "__main__":
                launch_tests(verbosity=2)
            """,
            config={"runners": ["mypkg.testing.launch_tests"]},
        ),
        # Conditional runner calls still run the tests.
        Valid(
            """
            from torch.testing._internal.common_utils import IS_WINDOWS, TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__":
                if not IS_WINDOWS:
                    run_tests()
            """
        ),
        # A benchmark launcher script defines no test: its main block is its purpose.
        Valid(
            """
            import argparse
            import torch.distributed as dist
            from torch.testing._internal.common_utils import run_tests

            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--iters", type=int, default=10)
                args = parser.parse_args()
                dist.init_process_group("gloo")
                for _ in range(args.iters):
                    dist.barrier()

            if __name__ == "__main__":
                main()
            """,
            config={"require-main": "always"},
        ),
        # A `Test*` model class with an `__init__` is no test (pytest does not collect it).
        Valid(
            """
            import torch

            class TestModel(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = torch.nn.Linear(4, 4)

            if __name__ == "__main__":
                print(TestModel()(torch.ones(4)))
            """,
            config={"require-main": "always"},
        ),
        # A pytest-run module (no run_tests import) may keep a benchmark in its main block.
        Valid(
            """
            import time
            import unittest

            class TestShardingPlan(unittest.TestCase):
                def test_plan(self):
                    pass

            if __name__ == "__main__":
                start = time.perf_counter()
                print(time.perf_counter() - start)
            """
        ),
        # require-main = "never" turns the rule off.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__":
                print("hello")
            """,
            config={"require-main": "never"},
        ),
        # PR 125648's launch: torchrun sets RANK, otherwise spawn one process per rank.
        Valid(
            """
            import os
            import tempfile
            import torch
            from torch.testing._internal.common_distributed import MultiProcContinousTest
            from torch.testing._internal.common_utils import run_tests

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
            """
        ),
        # Any alias of spawn, a same-file subclass, a function spawned per rank.
        Valid(
            """
            import torch.multiprocessing as mp
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class _Base(MultiProcContinuousTest):
                world_size = 2

            class PipelineTest(_Base):
                def test_schedule(self):
                    pass

            if __name__ == "__main__":
                mp.spawn(PipelineTest.run_rank, nprocs=2, args=(2,))
            """,
            config={"require-main": "always"},
        ),
        Valid(
            """
            from torch.multiprocessing import spawn
            from mypkg.testing import ClusterTestBase

            class CollectivesTest(ClusterTestBase):
                def test_all_gather(self):
                    pass

            def _worker(rank, world_size):
                CollectivesTest.run_rank(rank, world_size)

            if __name__ == "__main__":
                spawn(_worker, nprocs=4, args=(4,))
            """,
            config={
                "require-main": "always",
                "continuous-bases": ["mypkg.testing.ClusterTestBase"],
            },
        ),
    ]
    INVALID = [
        # A custom argparse CLI.
        Invalid(
            """
            import argparse
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestArgs(TestCase):
                def test_default(self):
                    pass

            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--world-size", type=int, default=2)
                print(parser.parse_args())

            if __name__ == "__main__":
                main()
            """,
            expected_message="call `run_tests()`",
            line=14,
            column=1,
        ),
        # A run_tests elsewhere in the module does not count; recursion is harmless.
        Invalid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestLoop(TestCase):
                def test_it(self):
                    pass

            def unused():
                run_tests()

            def loop():
                loop()

            if __name__ == "__main__":
                loop()
            """,
            line=14,
            column=1,
        ),
        # A raise only on one branch does not mark the file as not runnable.
        Invalid(
            """
            import sys

            class TestCli:
                def test_it(self):
                    pass

            if __name__ == "__main__":
                if len(sys.argv) > 3:
                    raise SystemExit("too many arguments")
                print("hello")
            """,
            config={"require-main": "always"},
            line=8,
            column=1,
        ),
        # A configured runner replaces nothing: a bare print is still no runner.
        Invalid(
            """
            import unittest
            from mypkg.testing import launch_tests

            class TestThing(unittest.TestCase):
                def test_it(self):
                    pass

            if __name__ == "__main__":
                print("done")
            """,
            config={"runners": ["mypkg.testing.launch_tests"]},
            line=9,
            column=1,
        ),
        # run_rank of a class that is not continuous runs no test of this module.
        Invalid(
            """
            import torch.multiprocessing as mp
            from torch.testing._internal.common_distributed import MultiProcessTestCase
            from torch.testing._internal.common_utils import run_tests

            class BenchHarness:
                @classmethod
                def run_rank(cls, rank, world_size):
                    print(rank, world_size)

            class TestReduce(MultiProcessTestCase):
                def test_reduce(self):
                    pass

            if __name__ == "__main__":
                mp.spawn(BenchHarness.run_rank, nprocs=2, args=(2,))
            """,
            line=15,
            column=1,
        ),
        # Generated tests are tests: a benchmark main block runs none of them.
        Invalid(
            """
            from torch.testing._internal.common_utils import run_tests
            from torch.testing._internal.distributed.rpc_utils import FAULTY_AGENT_TESTS, generate_tests

            globals().update(generate_tests("Faulty", object, FAULTY_AGENT_TESTS, 1, __name__))

            if __name__ == "__main__":
                print("use test/run_test.py")
            """,
            line=7,
            column=1,
        ),
        # A block that does nothing at all is fixed.
        Invalid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__":
                pass
            """,
            expected_fix="""
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__":
                run_tests()
            """,
            line=8,
            column=1,
        ),
        Invalid(
            "from torch.testing._internal.common_utils import TestCase\r\n"
            "\r\n"
            "class TestOptim(TestCase):\r\n"
            "\tdef test_step(self):\r\n"
            "\t\tpass\r\n"
            "\r\n"
            "if __name__ == '__main__':\r\n"
            "\t...\r\n",
            config={"require-main": "always"},
            expected_fix="from torch.testing._internal.common_utils import run_tests, TestCase\r\n"
            "\r\n"
            "class TestOptim(TestCase):\r\n"
            "\tdef test_step(self):\r\n"
            "\t\tpass\r\n"
            "\r\n"
            "if __name__ == '__main__':\r\n"
            "\trun_tests()\r\n",
            line=7,
            column=1,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        facts = main_block_facts(self.context)
        if not facts.guards or facts.import_time_runs:  # DL104's fix puts the runner in the guard
            return
        if not main_block_required(facts, self.config):  # a script, or not a run_tests module
            return
        if any(guard.runner is not None or guard.raises for guard in facts.guards):
            return
        planned = fill_empty_main_block(
            facts, facts.runner_module_in_use or TORCH_RUNNER_MODULE, self.config.runners
        )
        fix = (
            None
            if planned is None
            else Fix(edits=((planned[0], planned[1]),), add_imports=planned[2])
        )
        self.report(facts.guards[0].node, MESSAGE, fix=fix)

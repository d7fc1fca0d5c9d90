"""DL102: a main block that neither runs the tests nor raises."""

from __future__ import annotations

import libcst as cst

from distlint.analysis.mainblock import TORCH_RUNNER_MODULE, main_block_facts, screened_shape
from distlint.analysis.mainblock_fix import fill_empty_main_block
from distlint.rules.base import Fix, Invalid, LintRule, Valid

MESSAGE = ("the main block neither calls a test runner nor raises, so running the file runs no test; "
           "call `run_tests()` in it (or raise to mark the file as not meant to be run)")


class MainBlockWithoutRunner(LintRule):
    """The `if __name__ == "__main__":` block runs no test runner and does not raise.

    ## What it does
    Reports a module whose top-level `if __name__ == "__main__":` blocks neither call a
    test runner nor raise: a custom argparse CLI, a `print`, `pass`. Only what the block
    runs counts: its own calls, followed into functions defined in the same module
    (`def main(): run_tests()` called from the block is fine), never a `run_tests` that
    merely appears elsewhere. Runners are `run_tests` (imported under any alias, or
    through its module: `common_utils.run_tests()`), the `runners` config, `unittest.main`
    and `pytest.main`. Raising (`raise RuntimeError(...)`, PyTorch's
    `raise_on_run_directly(...)`) is the accepted way to say "this file is not meant to be
    run directly".

    The fix only touches a block that does nothing at all (`pass`, `...`): it then calls
    `run_tests()`. A block that does something was written on purpose: a person decides.

    ## Why is this bad?
    CI runs the file as `python test_x.py`; a block that runs something else exits
    successfully without running a single test.

    ## Example
    ```python
    if __name__ == "__main__":
        parser = argparse.ArgumentParser()
        parser.add_argument("--world-size", type=int, default=2)
        print(parser.parse_args())
    ```

    ## Use instead
    ```python
    if __name__ == "__main__":
        run_tests()
    ```
    """

    code = "DL102"
    name = "main-block-without-runner"
    fixable = True

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
            from torch.testing._internal.common_utils import run_tests

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
            from torch.testing._internal.common_utils import run_tests as rt

            if "__main__" == __name__:
                rt()
            """
        ),
        Valid(
            """
            import torch.testing._internal.common_utils as cu

            if __name__ == "__main__":
                cu.run_tests()
            """
        ),
        Valid(
            """
            from torch.testing._internal import common_utils

            if __name__ == "__main__":
                common_utils.run_tests()
            """
        ),
        # Raising says "not meant to be run directly".
        Valid(
            """
            if __name__ == "__main__":
                raise RuntimeError("run this file through test/test_jit.py")
            """
        ),
        Valid(
            """
            from torch.testing._internal.common_utils import raise_on_run_directly

            if __name__ == "__main__":
                raise_on_run_directly("test/test_jit.py")
            """
        ),
        # unittest.main() and a runner named in the config are runners.
        Valid(
            """
            import unittest

            if __name__ == "__main__":
                unittest.main()
            """
        ),
        Valid(
            """
            from mypkg.testing import launch_tests

            if __name__ == "__main__":
                launch_tests(verbosity=2)
            """,
            config={"runners": ["mypkg.testing.launch_tests"]},
        ),
        # Conditional runner calls still run the tests.
        Valid(
            """
            from torch.testing._internal.common_utils import IS_WINDOWS, run_tests

            if __name__ == "__main__":
                if not IS_WINDOWS:
                    run_tests()
            """
        ),
    ]
    INVALID = [
        # A custom argparse CLI.
        Invalid(
            """
            import argparse
            from torch.testing._internal.common_utils import run_tests

            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--world-size", type=int, default=2)
                print(parser.parse_args())

            if __name__ == "__main__":
                main()
            """,
            expected_message="call `run_tests()`",
        ),
        # A run_tests elsewhere in the module does not count; recursion is harmless.
        Invalid(
            """
            from torch.testing._internal.common_utils import run_tests

            def unused():
                run_tests()

            def loop():
                loop()

            if __name__ == "__main__":
                loop()
            """
        ),
        # A raise only on one branch does not mark the file as not runnable.
        Invalid(
            """
            if __name__ == "__main__":
                if len(sys.argv) > 3:
                    raise SystemExit("too many arguments")
                print("hello")
            """
        ),
        # A configured runner replaces nothing: a bare print is still no runner.
        Invalid(
            """
            if __name__ == "__main__":
                print("done")
            """,
            config={"runners": ["mypkg.testing.launch_tests"]},
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
            expected_fix="from torch.testing._internal.common_utils import run_tests, TestCase\r\n"
            "\r\n"
            "class TestOptim(TestCase):\r\n"
            "\tdef test_step(self):\r\n"
            "\t\tpass\r\n"
            "\r\n"
            "if __name__ == '__main__':\r\n"
            "\trun_tests()\r\n",
        ),
    ]

    @classmethod
    def may_report(cls, screen, config) -> bool:
        shape = screened_shape(screen, config)
        return shape is None or (shape.has_guard and not shape.guard_surely_runs)

    def visit_Module(self, node: cst.Module) -> None:
        facts = main_block_facts(self.context)
        if not facts.guards or facts.import_time_runs:  # DL104's fix puts the runner in the guard
            return
        if any(guard.runner is not None or guard.raises for guard in facts.guards):
            return
        planned = fill_empty_main_block(facts, facts.runner_module_in_use or TORCH_RUNNER_MODULE, self.config.runners)
        fix = None if planned is None else Fix(edits=((planned[0], planned[1]),), add_imports=planned[2])
        self.report(facts.guards[0].node, MESSAGE, fix=fix)

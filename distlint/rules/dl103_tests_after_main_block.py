"""DL103: tests defined after the main block never run under ``python file.py``."""

from __future__ import annotations

import libcst as cst

from distlint.analysis.mainblock import file_label, main_block_facts
from distlint.analysis.mainblock.fix import move_main_block_to_end
from distlint.rules.base import Fix, Invalid, LintRule, Valid

MAX_NAMED = 3


class TestsAfterMainBlock(LintRule):
    """Test classes or functions are defined after the main block.

    ## What it does
    Reports the `if __name__ == "__main__":` block that runs the tests when test classes
    (named `Test*`, derived from a `*TestCase` / `*Test` / `*TestBase` class, or defining
    `test_*` methods), module-level `test_*` functions, or `instantiate_*_tests(...)` calls
    come after it; the message names up to three of them. Generated tests (see DL101)
    count too.

    The fix moves the block to the end of the module. Comment lines right above it move
    with it (comments separated from it by a blank line stay), and so do comments
    indented inside it; comments at the left margin after it stay with the code that
    follows, and the statement that follows keeps at least as many blank lines as the
    block had. A module with several main blocks is not fixed automatically.

    ## Why is this bad?
    `python test_x.py` executes the module top to bottom; `run_tests()` runs the tests
    defined so far and exits, so everything defined after the block never runs in CI,
    while pytest (which imports the module) still runs it: the two disagree silently.

    ## Example
    ```python
    class TestA(TestCase):
        ...

    if __name__ == "__main__":
        run_tests()

    class TestB(TestCase):  # never runs under `python test_x.py`
        ...
    ```

    ## Use instead
    ```python
    class TestA(TestCase):
        ...

    class TestB(TestCase):
        ...


    if __name__ == "__main__":
        run_tests()
    ```
    """

    code = "DL103"

    VALID = [
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestA(TestCase):
                def test_a(self):
                    pass

            if __name__ == "__main__":
                run_tests()
            """
        ),
        # Helpers after the block are fine: only tests matter.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestA(TestCase):
                def test_a(self):
                    pass

            if __name__ == "__main__":
                run_tests()

            def helper():
                return 1
            """
        ),
        # A block that does not run the tests does not stop later definitions (DL102's case).
        Valid(
            """
            import os

            if __name__ == "__main__":
                os.environ["WORLD_SIZE"] = "2"

            class TestA(TestCase):
                def test_a(self):
                    pass

            if __name__ == "__main__":
                run_tests()
            """
        ),
        # A guard nested in a function is not a main block.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            def main():
                if __name__ == "__main__":
                    run_tests()

            class TestA(TestCase):
                def test_a(self):
                    pass
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestA(TestCase):
                def test_a(self):
                    pass

            # Run with: python test_x.py
            if __name__ == "__main__":
                run_tests()

            # Tests added later.
            class TestB(TestCase):
                def test_b(self):
                    pass
            """,
            expected_message="`TestB`",
            expected_fix="""
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestA(TestCase):
                def test_a(self):
                    pass

            # Tests added later.
            class TestB(TestCase):
                def test_b(self):
                    pass


            # Run with: python test_x.py
            if __name__ == "__main__":
                run_tests()
            """,
            line=9,
            column=1,
        ),
        # Reversed comparison, a runner through main(), a test function and a class
        # named after its base; instantiate_*_tests() calls generate tests too.
        Invalid(
            """
            from torch.testing._internal.common_utils import run_tests, instantiate_parametrized_tests
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            def main():
                run_tests()

            if '__main__' == __name__:
                main()

            class ReduceScatterTest(MultiProcessTestCase):
                pass

            def test_free_function():
                pass

            instantiate_parametrized_tests(ReduceScatterTest)
            """,
            expected_message="3 test definitions",
            expected_fix="""
            from torch.testing._internal.common_utils import run_tests, instantiate_parametrized_tests
            from torch.testing._internal.common_distributed import MultiProcessTestCase

            def main():
                run_tests()

            class ReduceScatterTest(MultiProcessTestCase):
                pass

            def test_free_function():
                pass

            instantiate_parametrized_tests(ReduceScatterTest)


            if '__main__' == __name__:
                main()
            """,
            line=8,
            column=1,
        ),
        # Two main blocks: reported, merging them is left to a person.
        Invalid(
            """
            import unittest

            if __name__ == "__main__":
                unittest.main()

            class TestB(unittest.TestCase):
                def test_b(self):
                    pass

            if __name__ == "__main__":
                unittest.main()
            """,
            line=4,
            column=1,
        ),
        # CRLF and tabs are kept; a comment indented in the block moves with it.
        Invalid(
            "import unittest\r\n"
            "\r\n"
            "if __name__ == '__main__':\r\n"
            "\tunittest.main()\r\n"
            "\t# end of the main block\r\n"
            "\r\n"
            "class TestB(unittest.TestCase):\r\n"
            "\tdef test_b(self):\r\n"
            "\t\tpass\r\n",
            expected_fix="import unittest\r\n"
            "\r\n"
            "class TestB(unittest.TestCase):\r\n"
            "\tdef test_b(self):\r\n"
            "\t\tpass\r\n"
            "\r\n"
            "\r\n"
            "if __name__ == '__main__':\r\n"
            "\tunittest.main()\r\n"
            "\t# end of the main block\r\n",
            line=3,
            column=1,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        facts = main_block_facts(self.context)
        guard = facts.running_guard
        if guard is None:
            return
        late = facts.tests_after(guard)
        if not late:
            return
        names = ", ".join(f"`{test.name}`" for test in late[:MAX_NAMED]) + (
            ", ..." if len(late) > MAX_NAMED else ""
        )
        count = f"{len(late)} test definitions" if len(late) > 1 else "a test definition"
        verb = "never run" if len(late) > 1 else "never runs"
        file_name = file_label(self.context.path)
        moved = move_main_block_to_end(facts)
        self.report(
            guard.node,
            f"{count} after the main block ({names}) {verb} under `python {file_name}`; "
            "move the main block to the end of the module",
            fix=None if moved is None else Fix(edits=((node, moved),)),
        )

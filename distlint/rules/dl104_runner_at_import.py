"""DL104: the test runner is called at import, outside the main guard."""

from __future__ import annotations

import libcst as cst

from distlint.analysis.mainblock import main_block_facts
from distlint.analysis.mainblock.fix import guard_import_time_runs
from distlint.rules.base import Fix, Invalid, LintRule, Valid


class RunnerAtImport(LintRule):
    """The test runner is called at module level, outside `if __name__ == "__main__":`.

    ## What it does
    Reports `run_tests()`, `unittest.main()`, `pytest.main()` or a configured runner called
    at module level outside the main guard, including inside a top-level `if`, `try`,
    `with` or `for` that is not the guard, and calls of this module's functions that run one
    (`main()` where `def main(): run_tests()`). Calls inside `def`, `class` or `lambda`
    bodies, or inside a nested guard, do not run at import and are not reported. Such a
    module gets DL104, not also DL101.

    The fix puts the statement under the guard: into the existing guard when there is
    one, before the guard's code if the statement stood above the guard and after it
    otherwise (a bare `run_tests()` is dropped when the guard already runs the tests,
    rather than running them twice); else into a new guard in its place, or at the end
    of the module when tests are defined after it. A statement that also binds names (an
    assignment, an import, a `def`, `with ... as`) is not moved automatically: other
    code may use them.

    ## Why is this bad?
    Code at module level runs whenever the module is imported: under pytest collection
    (which then runs the whole suite inside collection) and in every worker process that
    re-imports the test module (spawn start method, `MultiProcessTestCase`), where it
    starts a nested test run. Under `python test_x.py` it runs the tests defined above it
    and exits, so tests defined below never run.

    ## Example
    ```python
    class TestOptim(TestCase):
        ...

    run_tests()
    ```

    ## Use instead
    ```python
    class TestOptim(TestCase):
        ...

    if __name__ == "__main__":
        run_tests()
    ```
    """

    code = "DL104"

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
        # Only calls count: a reference, a def that is never called at import.
        Valid(
            """
            from torch.testing._internal.common_utils import run_tests

            RUNNER = run_tests

            def main():
                run_tests()
            """
        ),
        # A call inside a nested guard does not run at import.
        Valid(
            """
            import unittest

            try:
                import numpy
            except ImportError:
                numpy = None
            else:
                if __name__ == "__main__":
                    unittest.main()
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            # Run everything.
            run_tests()
            """,
            expected_message='move it under `if __name__ == "__main__":`',
            expected_fix="""
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            # Run everything.
            if __name__ == "__main__":
                run_tests()
            """,
            line=9,
            column=1,
        ),
        # Alias through a module import, inside a top-level if; tests follow: moved to the end.
        Invalid(
            """
            import torch.testing._internal.common_utils as cu

            if not cu.IS_WINDOWS:
                cu.run_tests()

            class TestLate(cu.TestCase):
                def test_late(self):
                    pass
            """,
            expected_fix="""
            import torch.testing._internal.common_utils as cu

            class TestLate(cu.TestCase):
                def test_late(self):
                    pass


            if __name__ == "__main__":
                if not cu.IS_WINDOWS:
                    cu.run_tests()
            """,
            line=5,
            column=5,
        ),
        # Through this module's main(); an existing guard that does something else
        # receives the call.
        Invalid(
            """
            import os
            import unittest

            def main():
                unittest.main()

            if __name__ == '__main__':
                os.environ["MASTER_PORT"] = "29500"

            main()
            """,
            expected_message="`main()` (which calls `unittest.main`)",
            expected_fix="""
            import os
            import unittest

            def main():
                unittest.main()

            if __name__ == '__main__':
                os.environ["MASTER_PORT"] = "29500"
                main()
            """,
            line=11,
            column=1,
        ),
        # The guard already runs the tests: the import-time call is dropped.
        Invalid(
            """
            from torch.testing._internal.common_utils import run_tests as rt

            rt()

            if __name__ == "__main__":
                rt()
            """,
            expected_fix="""
            from torch.testing._internal.common_utils import run_tests as rt

            if __name__ == "__main__":
                rt()
            """,
            line=4,
            column=1,
        ),
        # A statement that binds a name is reported but not moved.
        Invalid(
            """
            import unittest

            try:
                import numpy as np
                unittest.main()
            except ImportError:
                np = None
            """,
            line=6,
            column=5,
        ),
        # CRLF and tabs; a configured runner.
        Invalid(
            "from mypkg.testing import launch_tests\r\n\r\nif True:\r\n\tlaunch_tests()\r\n",
            config={"runners": ["mypkg.testing.launch_tests"]},
            expected_fix="from mypkg.testing import launch_tests\r\n"
            "\r\n"
            'if __name__ == "__main__":\r\n'
            "\tif True:\r\n"
            "\t\tlaunch_tests()\r\n",
            line=4,
            column=2,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        facts = main_block_facts(self.context)
        if not facts.import_time_runs:
            return
        # One fix for all of them: several guards must not be created in one pass.
        guarded = guard_import_time_runs(facts)
        fix = None if guarded is None else Fix(edits=((node, guarded),))
        for run in facts.import_time_runs:
            self.report(
                run.runner.call,
                f"{run.runner.described} runs the tests at import (pytest collection, every spawned worker); "
                'move it under `if __name__ == "__main__":`',
                fix=fix if run.movable else None,
            )

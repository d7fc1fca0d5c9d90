"""DL101: a test module of the ``run_tests`` convention without a main block."""

from __future__ import annotations

import libcst as cst

from distlint.analysis.mainblock import (
    file_label,
    main_block_facts,
    main_block_required,
)
from distlint.analysis.mainblock.fix import append_main_block
from distlint.rules.base import Fix, Invalid, LintRule, Valid
from distlint.torch_names import TORCH_RUNNER_MODULE

MESSAGE = (
    'no `if __name__ == "__main__":` block, so `python {file}` runs no test; '
    "add one that calls `run_tests()` at the end of the module"
)
NESTED_MESSAGE = (
    'the `if __name__ == "__main__":` block is nested inside another statement; '
    "move it to the top level at the end of the module"
)


class NoMainBlock(LintRule):
    """A test module that uses `run_tests` has no `if __name__ == "__main__":` block.

    ## What it does
    Reports test modules of the `run_tests` convention (they import `run_tests` from
    `torch.testing._internal.common_utils`, `distlint.runtime` or a runner named in the
    `runners` config) that have no top-level `if __name__ == "__main__":` block. A guard
    nested inside another statement (a function, an `if`, a `try`) is not a main block.
    With `require-main = "always"` every module with tests is checked; with `"never"` the
    rule is off. Tests a module generates count like the ones it writes: PyTorch's RPC
    suites define no class and fill the module with `globals().update(generate_tests(...))`;
    `instantiate_*_tests(...)`, `globals()[name] = type(...)`,
    `setattr(sys.modules[__name__], ...)` and a module-level loop that makes classes
    generate tests too. A module that neither defines nor generates tests (a helper, a
    script) is never reported. Modules whose `unittest.TestCase` classes are run by pytest
    (torchrec, torchtitan: no `run_tests` import) are not reported by default.

    The fix appends `if __name__ == "__main__":` calling the runner. It reuses an imported
    runner or its alias (`rt()`), else a runner module the file imports
    (`common_utils.run_tests()`, `cu.run_tests()`), else adds
    `from torch.testing._internal.common_utils import run_tests`, merged into an existing
    `from ... import` line (`distlint.runtime` when the module already imports from it;
    with only dotted `runners` configured, the first of them). The new block keeps the
    file's newline (CRLF) and indentation (tabs); trailing blank lines end up before it.
    No fix when a nested guard exists or the name to import is already taken. A module
    that calls a runner at import gets DL104 instead (one finding, one fix).

    ## Why is this bad?
    PyTorch's CI runs each test file as `python test_x.py`. Without a main block that
    command imports the module and exits successfully: every test in it silently never
    runs (pytorch/pytorch#144563 found whole directories doing nothing).

    ## Example
    ```python
    from torch.testing._internal.common_utils import TestCase, run_tests

    class TestOptim(TestCase):
        def test_step(self):
            ...
    ```

    ## Use instead
    ```python
    from torch.testing._internal.common_utils import TestCase, run_tests

    class TestOptim(TestCase):
        def test_step(self):
            ...


    if __name__ == "__main__":
        run_tests()
    ```
    """

    code = "DL101"

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
        # Reversed comparison and single quotes are the same guard.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if '__main__' == __name__:
                run_tests()
            """
        ),
        # torchrec / torchtitan style: TestCase classes run by pytest, no run_tests import.
        Valid(
            """
            import unittest

            class TestEmbeddingSharding(unittest.TestCase):
                def test_sharding(self):
                    self.assertTrue(True)
            """
        ),
        # A helper module of the convention without tests has nothing to run.
        Valid(
            """
            from torch.testing._internal.common_utils import run_tests

            def helper():
                return 1
            """,
            config={"require-main": "always"},
        ),
        # require-main = "never" turns the rule off.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass
            """,
            config={"require-main": "never"},
        ),
        # Generated tests without a run_tests import: pytest runs them (require-main "auto").
        Valid(
            """
            from torch.testing._internal.distributed.rpc_utils import FAULTY_AGENT_TESTS, MultiProcess, generate_tests

            globals().update(generate_tests("Faulty", object, FAULTY_AGENT_TESTS, MultiProcess.SPAWN, __name__))
            """
        ),
        # One class made with type() at import, a `Test*` model with an __init__: no tests.
        Valid(
            """
            import torch
            from torch.testing._internal.common_utils import run_tests

            Config = type("Config", (object,), {"world_size": 2})

            class TestNet(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = torch.nn.Linear(2, 2)
            """,
            config={"require-main": "always"},
        ),
        # A main block that runs only under a condition is the main block: adding a second
        # one would run the tests twice.
        Valid(
            """
            from torch.testing._internal.common_utils import IS_SANDCASTLE, TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            if __name__ == "__main__" and not IS_SANDCASTLE:
                run_tests()
            """
        ),
        # run_tests() at import is DL104's finding, not also DL101's.
        Valid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            run_tests()
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
            """,
            expected_message="add one that calls `run_tests()`",
            expected_fix="""
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass


            if __name__ == "__main__":
                run_tests()
            """,
            line=1,
            column=1,
        ),
        # An aliased runner import is reused.
        Invalid(
            """
            from torch.testing._internal.common_utils import run_tests as rt
            from torch.testing._internal.common_utils import TestCase

            class TestOptim(TestCase):
                def test_step(self):
                    pass
            """,
            expected_fix="""
            from torch.testing._internal.common_utils import run_tests as rt
            from torch.testing._internal.common_utils import TestCase

            class TestOptim(TestCase):
                def test_step(self):
                    pass


            if __name__ == "__main__":
                rt()
            """,
        ),
        # A module import that is used for run_tests elsewhere is reused.
        Invalid(
            """
            import torch.testing._internal.common_utils as cu

            class TestOptim(cu.TestCase):
                def test_step(self):
                    pass

            def main():
                cu.run_tests()
            """,
            expected_fix="""
            import torch.testing._internal.common_utils as cu

            class TestOptim(cu.TestCase):
                def test_step(self):
                    pass

            def main():
                cu.run_tests()


            if __name__ == "__main__":
                cu.run_tests()
            """,
        ),
        # require-main = "always": the import comes from the runtime the module already uses.
        Invalid(
            """
            from distlint.runtime import MultiProcContinuousTest

            class TestAllReduce(MultiProcContinuousTest):
                def test_all_reduce(self):
                    pass
            """,
            config={"require-main": "always"},
            expected_fix="""
            from distlint.runtime import run_tests, MultiProcContinuousTest

            class TestAllReduce(MultiProcContinuousTest):
                def test_all_reduce(self):
                    pass


            if __name__ == "__main__":
                run_tests()
            """,
        ),
        # A configured runner makes the module part of the convention.
        Invalid(
            """
            import unittest
            from mypkg.testing import launch_tests

            class TestThing(unittest.TestCase):
                def test_it(self):
                    pass
            """,
            config={"runners": ["mypkg.testing.launch_tests"]},
            expected_fix="""
            import unittest
            from mypkg.testing import launch_tests

            class TestThing(unittest.TestCase):
                def test_it(self):
                    pass


            if __name__ == "__main__":
                launch_tests()
            """,
        ),
        # PyTorch's RPC suites: no class, the module is filled with generated tests.
        Invalid(
            """
            import torch
            from torch.testing._internal.common_utils import IS_PYTORCH_CI, run_tests
            from torch.testing._internal.distributed.rpc_utils import FAULTY_AGENT_TESTS, MultiProcess, generate_tests

            if not (IS_PYTORCH_CI and torch.cuda.is_available()):
                globals().update(generate_tests("Faulty", object, FAULTY_AGENT_TESTS, MultiProcess.SPAWN, __name__))
            """,
            expected_fix="""
            import torch
            from torch.testing._internal.common_utils import IS_PYTORCH_CI, run_tests
            from torch.testing._internal.distributed.rpc_utils import FAULTY_AGENT_TESTS, MultiProcess, generate_tests

            if not (IS_PYTORCH_CI and torch.cuda.is_available()):
                globals().update(generate_tests("Faulty", object, FAULTY_AGENT_TESTS, MultiProcess.SPAWN, __name__))


            if __name__ == "__main__":
                run_tests()
            """,
        ),
        # Classes made in a module-level loop, registered with globals()[name] = ...
        Invalid(
            """
            from torch.testing._internal import common_utils
            from torch.testing._internal.common_distributed import MultiProcessTestCase
            from mysuite.collectives import CollectivesMixin

            for backend in ("gloo", "nccl"):
                name = f"Collectives{backend.title()}"
                globals()[name] = type(name, (CollectivesMixin, MultiProcessTestCase), {"backend": backend})
            """,
            expected_message="`python test_example.py` runs no test",
            expected_fix="""
            from torch.testing._internal import common_utils
            from torch.testing._internal.common_distributed import MultiProcessTestCase
            from mysuite.collectives import CollectivesMixin

            for backend in ("gloo", "nccl"):
                name = f"Collectives{backend.title()}"
                globals()[name] = type(name, (CollectivesMixin, MultiProcessTestCase), {"backend": backend})


            if __name__ == "__main__":
                common_utils.run_tests()
            """,
            config={"require-main": "always"},
        ),
        # instantiate_*_tests of a class defined elsewhere.
        Invalid(
            """
            from torch.testing._internal.common_device_type import instantiate_device_type_tests
            from torch.testing._internal.common_utils import run_tests
            from mysuite.ops import OpsTemplate

            instantiate_device_type_tests(OpsTemplate, globals())
            """,
            expected_fix="""
            from torch.testing._internal.common_device_type import instantiate_device_type_tests
            from torch.testing._internal.common_utils import run_tests
            from mysuite.ops import OpsTemplate

            instantiate_device_type_tests(OpsTemplate, globals())


            if __name__ == "__main__":
                run_tests()
            """,
        ),
        # A guard nested in another statement is not a main block (no autofix).
        Invalid(
            """
            from torch.testing._internal.common_utils import TestCase, run_tests

            class TestOptim(TestCase):
                def test_step(self):
                    pass

            def main():
                if __name__ == "__main__":
                    run_tests()
            """,
            expected_message="nested inside another statement",
        ),
        # CRLF line endings and tab indentation are kept.
        Invalid(
            "from torch.testing._internal.common_utils import TestCase, run_tests\r\n"
            "\r\n"
            "class TestOptim(TestCase):\r\n"
            "\tdef test_step(self):\r\n"
            "\t\tpass\r\n",
            expected_fix="from torch.testing._internal.common_utils import TestCase, run_tests\r\n"
            "\r\n"
            "class TestOptim(TestCase):\r\n"
            "\tdef test_step(self):\r\n"
            "\t\tpass\r\n"
            "\r\n"
            "\r\n"
            'if __name__ == "__main__":\r\n'
            "\trun_tests()\r\n",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        config = self.config
        facts = main_block_facts(self.context)
        if facts.guards or facts.import_time_runs or not main_block_required(facts, config):
            return
        if facts.nested_guards:
            self.report(node, NESTED_MESSAGE)
            return
        planned = append_main_block(
            facts, facts.runner_module_in_use or TORCH_RUNNER_MODULE, config.runners
        )
        fix = None if planned is None else Fix(edits=((node, planned[0]),), add_imports=planned[1])
        file_name = file_label(self.context.path)
        self.report(node, MESSAGE.format(file=file_name), fix=fix)

"""The main-block analysis behind DL101-DL105, its pre-screen, and ensure_main_block."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from distlint.analysis.mainblock import (
    analyze_main_block,
    is_ast_any_main_guard,
    is_ast_main_guard,
    is_main_guard,
    main_block_required,
    screen_shape,
)
from distlint.analysis.mainblock.fix import ensure_main_block, move_main_block_to_end
from distlint.config import Config, load_config
from distlint.linter import fix_source, lint_source
from distlint.rules import all_rules
from distlint.source import PreScreen

ROOT = Path(__file__).resolve().parent.parent
MAIN_FIXTURES = ROOT / "fixtures" / "main"
#: Every main-block fixture (both default ``include`` globs).
MAIN_CASES = sorted({*MAIN_FIXTURES.rglob("test_*.py"), *MAIN_FIXTURES.rglob("*_test.py")})
DL1_RULES = [rule for rule in all_rules() if rule.code.startswith("DL1")]


def parse(code: str) -> cst.Module:
    return cst.parse_module(textwrap.dedent(code))


def facts_of(code: str, runners=("run_tests",), continuous_bases=()):
    return analyze_main_block(parse(code), runners, continuous_bases)


# -- guards --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "test",
    [
        '__name__ == "__main__"',
        '"__main__" == __name__',
        "__name__ == '__main__'",
        '(__name__ == "__main__")',
        '__name__ == ("__main__")',
    ],
)
def test_guard_spellings_are_one_guard(test):
    code = f"if {test}:\n    run_tests()\n"
    assert len(facts_of(code).guards) == 1
    # The pre-screen's ast twin must accept exactly the same code.
    assert is_ast_main_guard(ast.parse(code).body[0])


@pytest.mark.parametrize(
    "test",
    [
        '__name__ != "__main__"',
        '__name__ == "__main__" or TEST_CUDA',
        'not __name__ == "__main__"',
        'name == "__main__"',
        '__name__ == f"__main__"',
        '__name__ == b"__main__"',
        '__name__ == "__main__" == x',
    ],
)
def test_other_comparisons_are_not_guards(test):
    code = f"if {test}:\n    run_tests()\n"
    assert facts_of(code).guards == []
    assert not is_main_guard(cst.parse_module(code).body[0])
    assert not is_ast_main_guard(ast.parse(code).body[0])
    assert not is_ast_any_main_guard(ast.parse(code).body[0])


@pytest.mark.parametrize(
    "test",
    [
        '__name__ == "__main__" and TEST_CUDA',
        'not IS_WINDOWS and "__main__" == __name__',
        '(__name__ == "__main__") and (A and B)',
        'A and (B and __name__ == "__main__")',
    ],
)
def test_a_conditional_guard_is_the_main_block(test):
    """``if __name__ == "__main__" and X:`` is the file's main block (DL101 must not add another)."""
    code = f"if {test}:\n    run_tests()\n"
    facts = facts_of(code)
    assert [(g.conditional, g.runner is not None) for g in facts.guards] == [(True, True)]
    assert facts.nested_guards == [] and facts.import_time_runs == []
    assert is_ast_any_main_guard(ast.parse(code).body[0]) and not is_ast_main_guard(
        ast.parse(code).body[0]
    )


@pytest.mark.parametrize(
    "code",
    [
        """
    def main():
        if __name__ == "__main__":
            run_tests()
    """,
        """
    if True:
        if __name__ == "__main__":
            run_tests()
    """,
        """
    try:
        import numpy
    except ImportError:
        pass
    else:
        if __name__ == "__main__":
            run_tests()
    """,
    ],
)
def test_a_nested_guard_is_not_a_main_block(code):
    facts = facts_of(code)
    assert facts.guards == []
    assert len(facts.nested_guards) == 1
    # Its call does not run at import either.
    assert facts.import_time_runs == []


# -- runner resolution ---------------------------------------------------------------------

RUNS = [
    ("from torch.testing._internal.common_utils import run_tests as rt", "rt()", ("rt",)),
    ("import torch.testing._internal.common_utils as cu", "cu.run_tests()", ("cu.run_tests",)),
    (
        "from torch.testing._internal import common_utils",
        "common_utils.run_tests()",
        ("common_utils.run_tests",),
    ),
    (
        "import torch.testing._internal.common_utils",
        "torch.testing._internal.common_utils.run_tests()",
        ("torch.testing._internal.common_utils.run_tests",),
    ),
    ("from distlint.runtime import run_tests", "run_tests()", ("run_tests",)),
    ("from unittest import main as go", "go()", ("go",)),
    ("import pytest", "pytest.main([__file__])", ("pytest.main",)),
    ("from torch.testing._internal.common_utils import *", "run_tests()", ("run_tests",)),
    (
        "from torch.testing._internal import common_utils\nrt = common_utils.run_tests",
        "rt()",
        ("rt",),
    ),
    (
        "def main():\n    from torch.testing._internal.common_utils import run_tests as r\n    r()",
        "main()",
        ("main", "r"),
    ),
    (
        "import sys\ndef main(argv):\n    if argv:\n        run_tests()",
        "main(sys.argv)",
        ("main", "run_tests"),
    ),
]


@pytest.mark.parametrize("setup,block,chain", RUNS)
def test_runner_is_resolved_through_aliases_and_functions(setup, block, chain):
    facts = facts_of(f"{setup}\n\nif __name__ == '__main__':\n    {block}\n")
    runner = facts.guards[0].runner
    assert runner is not None
    assert runner.chain == chain


@pytest.mark.parametrize(
    "setup,block",
    [
        ("import argparse", "argparse.ArgumentParser().parse_args()"),
        ("from helpers import main", "main()"),  # not this module's function: not followed
        (
            "from torch.testing._internal.common_utils import run_tests\ndef unused():\n    run_tests()",
            "print('hi')",
        ),
        ("from mypkg.testing import launch", "launch()"),  # not a configured runner
    ],
)
def test_what_is_not_a_runner(setup, block):
    assert (
        facts_of(f"{setup}\n\nif __name__ == '__main__':\n    {block}\n").guards[0].runner is None
    )


def test_configured_runners_bare_and_dotted():
    code = "from mypkg.testing import launch\n\nif __name__ == '__main__':\n    launch()\n"
    assert facts_of(code, ("mypkg.testing.launch",)).guards[0].runner is not None
    assert facts_of(code, ("launch",)).guards[0].runner is not None
    assert facts_of(code, ("other.launch",)).guards[0].runner is None


def test_following_functions_is_recursion_safe():
    code = """
    from torch.testing._internal.common_utils import run_tests

    def ping():
        pong()

    def pong():
        ping()

    if __name__ == "__main__":
        ping()
    """
    assert facts_of(code).guards[0].runner is None
    found = facts_of(
        code.replace("        ping()\n\n    if", "        ping()\n        run_tests()\n\n    if")
    )
    assert found.guards[0].runner.chain == ("ping", "pong", "run_tests")


@pytest.mark.parametrize(
    "block,raises",
    [
        ('raise RuntimeError("not meant to be run directly")', True),
        ('raise_on_run_directly("test/test_jit.py")', True),
        ("fail()", True),  # def fail(): raise ...
        ("if len(sys.argv) > 2:\n        raise SystemExit(2)\n    print('x')", False),
        ("print('x')", False),
    ],
)
def test_raising_blocks(block, raises):
    code = f"import sys\n\ndef fail():\n    raise RuntimeError('no')\n\nif __name__ == '__main__':\n    {block}\n"
    assert facts_of(code).guards[0].raises is raises


# -- tests and where they are -------------------------------------------------------------------


def test_test_definitions_and_the_ones_after_the_block():
    facts = facts_of("""
    import unittest
    from torch.testing._internal.common_distributed import MultiProcessTestCase

    class Helper:
        pass

    class TestEarly(unittest.TestCase):
        pass

    if __name__ == "__main__":
        unittest.main()

    class ReduceTest(MultiProcessTestCase):
        pass

    class Derived(ReduceTest):
        pass

    class Checks:
        def test_it(self):
            pass

    def test_free():
        pass

    def helper():
        pass

    instantiate_device_type_tests(ReduceTest, globals())
    """)
    names = [t.name for t in facts.tests]
    assert names == [
        "TestEarly",
        "ReduceTest",
        "Derived",
        "Checks",
        "test_free",
        "instantiate_device_type_tests(...)",
    ]
    assert [t.name for t in facts.tests_after(facts.running_guard)] == names[1:]


def test_a_module_without_tests_has_none():
    assert not facts_of(
        "import torch\n\nclass SequentialStub(torch.nn.Sequential):\n    pass\n"
    ).has_tests


@pytest.mark.parametrize(
    "code,named",
    [
        # A `Test*` class pytest would not collect: an __init__ of its own or from a *Module base.
        (
            "import torch\nclass TestModel(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
            [],
        ),
        ("class TestData:\n    def __init__(self, n):\n        self.n = n\n", []),
        ("class TestData:\n    size = 3\n", ["TestData"]),
        (
            "import torch\nclass TestModel(torch.nn.Module):\n    def test_forward(self):\n        pass\n",
            ["TestModel"],
        ),
        (
            "import unittest\nclass TestX(unittest.TestCase):\n    def __init__(self, *a):\n        super().__init__(*a)\n",
            ["TestX"],
        ),
    ],
)
def test_which_test_named_classes_are_tests(code, named):
    assert [t.name for t in facts_of(code).tests] == named


GENERATED = [
    (
        "globals().update(generate_tests('Faulty', Fixture, TESTS, SPAWN, __name__))",
        "globals().update(...)",
    ),
    ("if not IS_CI:\n    globals().update(make_tests())", "globals().update(...)"),
    ("vars().update(make_tests())", "vars().update(...)"),
    ("globals()['TestGloo'] = type('TestGloo', (Template, TestCase), {})", "globals()[...] = ..."),
    (
        "import sys\nsetattr(sys.modules[__name__], 'TestGloo', make())",
        "setattr(sys.modules[__name__], ...)",
    ),
    ("instantiate_device_type_tests(OpsTemplate, globals())", "instantiate_device_type_tests(...)"),
    (
        "common_device_type.instantiate_device_type_tests(OpsTemplate, globals())",
        "common_device_type.instantiate_device_type_tests(...)",
    ),
    # A loop that makes classes: one definition for the loop, whatever it does inside.
    (
        "for backend in B:\n    name = f'Test{backend}'\n    globals()[name] = type(name, (T,), {})",
        "for backend in ...",
    ),
    (
        "for backend in B:\n    class _Case(Template):\n        pass\n    REGISTRY[backend] = _Case",
        "for backend in ...",
    ),
    ("while PENDING:\n    make_class(type(PENDING.pop(), (T,), {}))", "while ..."),
]


@pytest.mark.parametrize("code,name", GENERATED)
def test_generated_tests_are_tests(code, name):
    facts = facts_of(code)
    assert [(t.name, t.generator) for t in facts.tests] == [(name, True)]
    assert facts.has_tests
    # The pre-screen must keep every such file.
    assert screen_shape(ast.parse(code), ("run_tests",)).may_have_tests


@pytest.mark.parametrize(
    "code",
    [
        "Config = type('Config', (object,), {'world_size': 2})",  # one class, made once: no test
        "def make():\n    globals().update(make_tests())",  # never called at import
        "for name in NAMES:\n    print(type(name))",  # one-argument type()
        "for name in NAMES:\n    class TestCase_(TestCase):\n        pass",  # a test class, counted as itself
        "if __name__ == '__main__':\n    globals().update(make_tests())",  # runs only as a script
        "x = {}\nx['TestGloo'] = object",
    ],
)
def test_what_does_not_generate_tests(code):
    assert [t for t in facts_of(code).tests if t.generator] == []


# -- continuous classes launched from the main block ------------------------------------------

LAUNCH_SETUP = """
import os
import tempfile
import torch
from torch.testing._internal.common_distributed import MultiProcContinousTest

class _Base(MultiProcContinousTest):
    world_size = 2

class SymmMemTest(_Base):
    def test_rendezvous(self):
        pass
"""


@pytest.mark.parametrize(
    "imports,block,chain",
    [
        ("", "SymmMemTest.run_rank(int(os.environ['RANK']), 2)", ("SymmMemTest.run_rank",)),
        (
            "",
            "torch.multiprocessing.spawn(SymmMemTest.run_rank, nprocs=2, args=(2,))",
            ("torch.multiprocessing.spawn", "SymmMemTest.run_rank"),
        ),
        (
            "import torch.multiprocessing as mp",
            "mp.spawn(fn=SymmMemTest.run_rank, nprocs=2)",
            ("mp.spawn", "SymmMemTest.run_rank"),
        ),
        (
            "from torch.multiprocessing import spawn",
            "spawn(SymmMemTest.run_rank, nprocs=2)",
            ("spawn", "SymmMemTest.run_rank"),
        ),
        (
            "from torch import multiprocessing",
            "multiprocessing.start_processes(SymmMemTest.run_rank, nprocs=2)",
            ("multiprocessing.start_processes", "SymmMemTest.run_rank"),
        ),
        (
            "def worker(rank):\n    SymmMemTest.run_rank(rank, 2)",
            "torch.multiprocessing.spawn(worker, nprocs=2)",
            ("torch.multiprocessing.spawn", "worker", "SymmMemTest.run_rank"),
        ),
        (
            "def launch():\n    torch.multiprocessing.spawn(SymmMemTest.run_rank, nprocs=2)",
            "launch()",
            ("launch", "torch.multiprocessing.spawn", "SymmMemTest.run_rank"),
        ),
    ],
)
def test_launching_a_continuous_class_runs_the_tests(imports, block, chain):
    facts = facts_of(f"{LAUNCH_SETUP}\n{imports}\n\nif __name__ == '__main__':\n    {block}\n")
    assert facts.guards[0].runner is not None
    assert facts.guards[0].runner.chain == chain


@pytest.mark.parametrize(
    "imports,block",
    [
        ("class Harness:\n    pass", "Harness.run_rank(0, 2)"),  # not a continuous class
        ("import multiprocessing as mp", "mp.spawn(SymmMemTest.run_rank)"),  # not torch's spawn
        (
            "from suite import AllGatherTest",
            "AllGatherTest.run_rank(0, 2)",
        ),  # not a class of this module
        ("", "torch.multiprocessing.spawn(print, nprocs=2)"),
        ("def worker(rank):\n    print(rank)", "torch.multiprocessing.spawn(worker, nprocs=2)"),
        ("", "torch.multiprocessing.spawn(nprocs=2)"),
    ],
)
def test_launches_that_run_no_test(imports, block):
    facts = facts_of(f"{LAUNCH_SETUP}\n{imports}\n\nif __name__ == '__main__':\n    {block}\n")
    assert facts.guards[0].runner is None


def test_configured_continuous_bases_launch_too():
    code = (
        "from mypkg import ClusterTest\n\nclass CollectivesTest(ClusterTest):\n    pass\n\n"
        "if __name__ == '__main__':\n    CollectivesTest.run_rank(0, 2)\n"
    )
    assert facts_of(code).guards[0].runner is None
    assert facts_of(code, continuous_bases=("mypkg.ClusterTest",)).guards[0].runner is not None
    assert facts_of(code, continuous_bases=("ClusterTest",)).guards[0].runner is not None


def test_a_launch_at_import_is_not_a_runner_call_at_import():
    facts = facts_of(
        LAUNCH_SETUP + "\ntorch.multiprocessing.spawn(SymmMemTest.run_rank, nprocs=2)\n"
    )
    assert facts.import_time_runs == []


# -- where DL101 and DL102 apply ----------------------------------------------------------------


@pytest.mark.parametrize(
    "code,require_main,required",
    [
        (
            "from torch.testing._internal.common_utils import TestCase, run_tests\nclass TestA(TestCase):\n    pass",
            "auto",
            True,
        ),
        (
            "from torch.testing._internal.common_utils import TestCase, run_tests\nclass TestA(TestCase):\n    pass",
            "never",
            False,
        ),
        ("import unittest\nclass TestA(unittest.TestCase):\n    pass", "auto", False),
        ("import unittest\nclass TestA(unittest.TestCase):\n    pass", "always", True),
        (
            "from torch.testing._internal.common_utils import run_tests\ndef main():\n    pass",
            "always",
            False,
        ),
        (
            "from torch.testing._internal.common_utils import run_tests\nglobals().update(make_tests())",
            "auto",
            True,
        ),
    ],
)
def test_main_block_required(code, require_main, required):
    assert main_block_required(facts_of(code), Config(require_main=require_main)) is required


# -- import time ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code,expected",
    [
        ("run_tests()", [("run_tests",)]),
        ("import sys\nsys.exit(run_tests())", [("run_tests",)]),
        ("if not IS_WINDOWS:\n    run_tests()", [("run_tests",)]),
        ("try:\n    run_tests()\nexcept Exception:\n    pass", [("run_tests",)]),
        ("import unittest\nwith open('x'):\n    unittest.main()", [("unittest.main",)]),
        ("def main():\n    run_tests()\n\nmain()", [("main", "run_tests")]),
        # A guard inside a function called at import does not run then.
        ("def main():\n    if __name__ == '__main__':\n        run_tests()\n\nmain()", []),
        ("def main():\n    run_tests()", []),
        ("RUNNER = run_tests", []),
        ("if __name__ == '__main__':\n    run_tests()", []),
        ("callback = lambda: run_tests()", []),
    ],
)
def test_runner_calls_at_import(code, expected):
    runs = facts_of(
        "from torch.testing._internal.common_utils import run_tests\n" + code
    ).import_time_runs
    assert [run.runner.chain for run in runs] == expected


def test_a_statement_that_binds_names_is_not_movable():
    runs = facts_of(
        "import unittest\ntry:\n    import numpy as np\n    unittest.main()\nexcept ImportError:\n    np = None\n"
    ).import_time_runs
    assert len(runs) == 1 and not runs[0].movable


@pytest.mark.parametrize(
    "code,uses",
    [
        ("from torch.testing._internal.common_utils import run_tests, TestCase", True),
        ("from distlint.runtime import run_tests as rt", True),
        (
            "import torch.testing._internal.common_utils as cu\ndef main():\n    cu.run_tests()",
            True,
        ),
        (
            "import torch.testing._internal.common_utils as cu\nclass TestX(cu.TestCase):\n    pass",
            False,
        ),
        ("import unittest\nclass TestX(unittest.TestCase):\n    pass", False),
        ("def run_tests():\n    pass", False),
    ],
)
def test_belonging_to_the_run_tests_convention(code, uses):
    assert facts_of(code).uses_convention_runner is uses


# -- ensure_main_block ---------------------------------------------------------------------

TORCH_TEST = """\
import torch
from torch.testing._internal.common_utils import TestCase


class TestAdd(TestCase):
    def test_add(self):
        self.assertEqual(torch.ones(1) + 1, torch.full((1,), 2.0))
"""


def _dl101_findings(source: str):
    config = Config(require_main="always", select=("DL101",))
    return lint_source(source.encode(), "test_x.py", config).findings


def test_ensure_main_block_adds_the_block_and_the_import():
    module = cst.parse_module(TORCH_TEST)
    assert _dl101_findings(TORCH_TEST)
    result = ensure_main_block(module)
    expected = TORCH_TEST.replace("import TestCase", "import run_tests, TestCase") + (
        '\n\nif __name__ == "__main__":\n    run_tests()\n'
    )
    assert result.code == expected
    compile(result.code, "test_x.py", "exec")
    assert _dl101_findings(result.code) == []
    # Idempotent: a module whose block calls a runner is returned unchanged.
    assert ensure_main_block(result) is result


def test_ensure_main_block_reuses_aliases_and_module_imports():
    aliased = "from torch.testing._internal.common_utils import run_tests as rt\n" + TORCH_TEST
    assert ensure_main_block(cst.parse_module(aliased)).code.endswith(
        'if __name__ == "__main__":\n    rt()\n'
    )
    via_module = TORCH_TEST.replace(
        "import torch\n", "import torch\nfrom torch.testing._internal import common_utils\n"
    )
    result = ensure_main_block(cst.parse_module(via_module)).code
    assert result.endswith("    common_utils.run_tests()\n")
    assert result.count("import") == via_module.count("import")


def test_ensure_main_block_runner_module_and_style():
    source = TORCH_TEST.replace("\n", "\r\n").replace("    ", "\t")
    result = ensure_main_block(cst.parse_module(source), runner_module="distlint.runtime").code
    assert "from distlint.runtime import run_tests\r\n" in result
    assert result.endswith('\r\n\r\nif __name__ == "__main__":\r\n\trun_tests()\r\n')
    assert "\n" not in result.replace("\r\n", "")


@pytest.mark.parametrize(
    "tail",
    [
        "\nif __name__ == '__main__':\n    print('custom CLI')\n",  # a custom main is never rewritten
        "\ndef main():\n    if __name__ == '__main__':\n        run_tests()\n",  # nested guard
        "\nfrom torch.testing._internal.common_utils import run_tests\nrun_tests()\n",  # DL104's business
    ],
)
def test_ensure_main_block_leaves_existing_blocks_alone(tail):
    module = cst.parse_module(TORCH_TEST + tail)
    assert ensure_main_block(module) is module


def test_ensure_main_block_never_shadows_a_name():
    source = "from other import launch\n" + TORCH_TEST
    module = cst.parse_module(source)
    assert ensure_main_block(module, runners=("mypkg.launch",)) is module


# -- moving the block ------------------------------------------------------------------------


def test_move_main_block_keeps_comments_where_they_belong():
    module = parse("""
    import unittest


    # ---- section: early tests ----

    # Run with python test_x.py
    if __name__ == "__main__":
        unittest.main()
        # inside the block
    # about TestLate
    class TestLate(unittest.TestCase):
        pass
    """)
    moved = move_main_block_to_end(analyze_main_block(module))
    assert moved.code == textwrap.dedent("""
    import unittest


    # ---- section: early tests ----
    # about TestLate
    class TestLate(unittest.TestCase):
        pass


    # Run with python test_x.py
    if __name__ == "__main__":
        unittest.main()
        # inside the block
    """)


# -- the pre-screen ------------------------------------------------------------------------


def _examples():
    for rule in DL1_RULES:
        for example in (*rule.VALID, *rule.INVALID):
            config = Config.from_table({"select": ["DL1"], **example.config}, source="<example>")
            yield textwrap.dedent(example.code), config


# torchao's test_x86inductor_fusion.py shape: module helpers called at import that never
# reach a runner (so DL104 cannot report), and a guard that runs the tests only on some
# platforms, inside an ``if`` (so DL102 cannot report either).
HELPERS_AT_IMPORT = """\
import functools
from torch.testing._internal.common_utils import TestCase, run_tests


class TestPatterns(TestCase):
    def test_a(self):
        pass


def copy_tests(source, target):
    for name, value in source.__dict__.items():
        helper = functools.wraps(value)(lambda self: run_tests())
        setattr(target, name, helper)
        make_more(target)


def make_more(cls):
    return copy_tests  # a name, not a call: nothing runs


if HAS_CPU:
    class TestCopied(TestCase):
        pass

    copy_tests(TestPatterns, TestCopied)


if __name__ == "__main__":
    if IS_LINUX:
        import torch._inductor.config

        run_tests()
"""


TRICKY = [
    # Runner reached only through an alias or an assignment chain.
    "from unittest import main as go\nclass TestA:\n    def test_a(self):\n        pass\ngo()\n",
    "import x\na = x.run_tests\nb = a\nb()\n",
    "def f():\n    run_tests()\nf()\n",
    "if '__ma' 'in__' == __name__:\n    print(1)\nclass TestA:\n    pass\n",
    "if __name__ == '__main__':\n    pass\nif __name__ == '__main__':\n    run_tests()\n",
    "from torch.testing._internal.common_utils import *\nclass TestA:\n    pass\n",
    # Tests that exist only as generated ones (no class, no test_* function in the file).
    "from torch.testing._internal.common_utils import run_tests\nglobals().update(make())\n",
    "from torch.testing._internal.common_utils import run_tests\nfor b in B:\n    globals()[b] = type(b, (T,), {})\n",
    "from torch.testing._internal.common_utils import run_tests\nimport sys\nsetattr(sys.modules[__name__], 'T', m())\n",
    "from torch.testing._internal.common_utils import run_tests\nfor b in B:\n    make(type(b, (T,), {}))\n",
    "from torch.testing._internal.common_utils import run_tests\ncdt.instantiate_device_type_tests(T, globals())\n",
    (
        "from torch.testing._internal.common_utils import run_tests\nvars().update(make())\n"
        "if __name__ == '__main__':\n    print('benchmark')\n"
    ),
    # Conditional guards are guards for the pre-screen too.
    (
        "from torch.testing._internal.common_utils import run_tests\nif __name__ == '__main__' and X:\n"
        "    run_tests()\nclass TestLate:\n    def test_a(self):\n        pass\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nclass TestA:\n    def test_a(self):\n"
        "        pass\nif X and __name__ == '__main__':\n    print(1)\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nclass TestA:\n    pass\nrun_tests()\n"
        "if __name__ == '__main__' and X:\n    pass\n"
    ),
    # The screen walks statements only (never expressions): runner aliases and definitions
    # inside handlers, match cases, else/finally blocks and in reverse order still count.
    (
        "try:\n    import fast\nexcept ImportError:\n    from torch.testing._internal.common_utils import run_tests as rt\n"
        "class TestA:\n    def test_a(self):\n        pass\nrt()\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nmatch MODE:\n    case 1:\n        go = run_tests\n"
        "class TestA:\n    def test_a(self):\n        pass\ngo()\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nif X:\n    pass\nelse:\n    b = a\na = run_tests\n"
        "class TestA:\n    def test_a(self):\n        pass\nb()\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\ntry:\n    pass\nfinally:\n    def main():\n"
        "        run_tests()\nclass TestA:\n    def test_a(self):\n        pass\nmain()\n"
    ),
    "from torch.testing._internal.common_utils import run_tests\nwith ctx():\n    globals().update(make())\n",
    # Followed at import: a runner two module functions away, or behind a class the screen
    # does not follow; a guard whose runner sits in a nested block, or in a def it never calls.
    (
        "from torch.testing._internal.common_utils import run_tests\nclass TestA:\n    def test_a(self):\n"
        "        pass\ndef a():\n    b()\ndef b():\n    run_tests()\na()\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nclass TestA:\n    def test_a(self):\n"
        "        pass\nclass Go:\n    def __init__(self):\n        run_tests()\nGo()\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nclass TestA:\n    def test_a(self):\n"
        "        pass\nif __name__ == '__main__':\n    if X:\n        run_tests()\n"
    ),
    (
        "from torch.testing._internal.common_utils import run_tests\nclass TestA:\n    def test_a(self):\n"
        "        pass\nif __name__ == '__main__':\n    def go():\n        run_tests()\n"
    ),
    HELPERS_AT_IMPORT,
]


def _sources():
    yield from _examples()
    for path in MAIN_CASES:
        yield path.read_text(), load_config(path)
    for code in TRICKY:
        for require_main in ("auto", "always"):
            yield code, Config(select=("DL1",), require_main=require_main)


@pytest.mark.parametrize("index", range(len(list(_sources()))))
def test_dl101_and_dl102_apply_only_where_a_main_block_is_required(index):
    source, config = list(_sources())[index]
    findings = lint_source(
        source.encode(), "test_x.py", config, DL1_RULES, prescreen=False
    ).findings
    if any(f.code in ("DL101", "DL102") for f in findings):
        assert main_block_required(
            facts_of(source, config.runners, config.continuous_bases), config
        ), source


@pytest.mark.parametrize("index", range(len(list(_sources()))))
def test_prescreen_never_hides_a_finding(index):
    source, config = list(_sources())[index]
    full = lint_source(source.encode(), "test_x.py", config, DL1_RULES, prescreen=False)
    assert full.error is None
    screen = PreScreen(source.encode(), "test_x.py")
    for finding in full.findings:
        rule = next(r for r in DL1_RULES if r.code == finding.code)
        assert rule.may_report(screen, config), (finding, source)


CLEAN = """\
from torch.testing._internal.common_utils import run_tests, TestCase


class TestAdd(TestCase):
    def test_add(self):
        self.assertTrue(True)


if __name__ == "__main__":
    run_tests()
"""


@pytest.mark.parametrize(
    "source,config",
    [
        (CLEAN, Config()),
        (CLEAN, Config(require_main="always")),
        ((MAIN_FIXTURES / "test_model_parallel_pytest.py").read_text(), Config()),
        ((MAIN_FIXTURES / "test_jit_fuser_legacy.py").read_text(), Config()),
        # Calls of its own helpers at import, but no runner's name anywhere (torch's common_*.py).
        (
            "import torch\n\ndef make_ops():\n    return []\n\nOPS = make_ops()\n\nclass Helper:\n    pass\n",
            Config(),
        ),
        (HELPERS_AT_IMPORT, Config()),
    ],
    ids=[
        "clean",
        "clean-always",
        "torchrec-pytest",
        "raises",
        "own-helpers-at-import",
        "helpers-followed",
    ],
)
def test_prescreen_keeps_ordinary_files_away_from_libcst(source, config):
    screen = PreScreen(source.encode(), "test_x.py")
    assert [rule.code for rule in DL1_RULES if rule.may_report(screen, config)] == []


@pytest.mark.parametrize(
    "code",
    [
        "try:\n    pass\nexcept E:\n    from m import run_tests as go\ngo()\n",
        "match M:\n    case _:\n        go = run_tests\ngo()\n",
        "b = a\na = x.run_tests\nb()\n",  # an alias chain written backwards
        "class C:\n    def m(self):\n        def helper():\n            pass\nhelper()\n",  # a def at any depth
        "for x in X:\n    pass\nelse:\n    def main():\n        run_tests()\nmain()\n",
        # The module's functions are followed, through each other, to a runner.
        "def a():\n    b()\nif X:\n    def b():\n        go()\ngo = run_tests\na()\n",
    ],
    ids=["handler", "match-case", "backwards-chain", "nested-def", "for-else", "followed"],
)
def test_screen_shape_finds_definitions_in_every_statement_block(code):
    assert screen_shape(ast.parse(code), ("run_tests",)).may_run_at_import


def test_screen_shape_of_a_file_with_code_after_the_guard():
    shape = screen_shape(
        ast.parse(CLEAN + "\nclass TestLate(TestCase):\n    pass\n"), ("run_tests",)
    )
    assert shape.has_guard and shape.guard_surely_runs and shape.code_after_guard
    assert not shape.may_run_at_import


# -- golden fixtures of the main-block rules --------------------------------------------------


@pytest.mark.parametrize("path", MAIN_CASES, ids=lambda p: str(p.relative_to(MAIN_FIXTURES)))
def test_main_fixture_findings_and_fix(path):
    config = load_config(path)
    source = path.read_bytes()
    result = lint_source(source, path.name, config)
    assert result.error is None
    got = [f"{f.line}:{f.col}: {f.code} {f.message}" for f in result.findings]
    assert got == path.with_suffix(".findings").read_text().splitlines()
    fixed_path = path.with_name(path.name + ".fixed")
    fixed = fix_source(source, path.name, config)
    if not fixed_path.exists():
        assert fixed.fixed is None
        return
    assert fixed.fixed is not None and fixed.fixed.decode() == fixed_path.read_text()
    assert lint_source(fixed.fixed, path.name, config).findings == []
    assert fix_source(fixed.fixed, path.name, config).fixed is None

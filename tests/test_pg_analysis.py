"""The process-group analysis (``distlint.analysis.pg``): the facts DL2xx and ``distlint migrate`` use.

These tests pin the contract fields the migrator relies on (statements by identity, bound
names, stores, teardown, class backend/world size/timeout/options, subclasses), the
execution models, every creation shape and every reason, and the pre-screen's promise
(a file it skips has no finding).
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from distlint.analysis.external_bases import ExternalBases
from distlint.analysis.model import (
    NOT_FROM_ANALYSIS,
    ClassAnalysis,
    CreationKind,
    ExecutionModel,
    ModuleAnalysis,
    Reason,
)
from distlint.analysis.pg import analyze_module, eligibility
from distlint.codemods.migrate_continuous import migrate_source
from distlint.config import Config, ConfigResolver
from distlint.linter import lint_source
from distlint.rules import rules_by_code
from distlint.source import PreScreen
from distlint.syntax.ast_lines import SimpleLine, units
from distlint.syntax.ast_nodes import Source

ROOT = Path(__file__).resolve().parent.parent
PG_FIXTURES = ROOT / "fixtures" / "pg"
PG_RULES = [rules_by_code()[c] for c in ("DL201", "DL202", "DL203", "DL301")]

HEADER = """\
import os
import sys
from datetime import timedelta
import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase
"""

SPAWN = """\
    def setUp(self):
        super().setUp()
        self._spawn_processes()
"""


#: The text of the module :func:`analyse` analysed last (:func:`code` quotes its nodes).
_analysed = Source("")


def analyse(source: str, config: Config = Config()) -> ModuleAnalysis:
    global _analysed
    text = textwrap.dedent(source)
    _analysed = Source(text)
    return analyze_module(ast.parse(text), text, config, ExternalBases(None))


def code(node: ast.AST | SimpleLine | None) -> str | None:
    """The analysis' ``code`` of a node of the module analysed last (of a line: its statements)."""
    if isinstance(node, SimpleLine):
        return "".join(eligibility.code(small, _analysed) or "" for small in node.body)
    return eligibility.code(node, _analysed)


def only_class(source: str, config: Config = Config()) -> ClassAnalysis:
    classes = [c for c in analyse(source, config).classes if c.tests]
    assert len(classes) == 1, [c.name for c in classes]
    return classes[0]


def per_test_class(body: str, extra: str = "", header: str = HEADER) -> str:
    return (
        header
        + extra
        + "\n\nclass TestPG(MultiProcessTestCase):\n    world_size = 2\n\n"
        + SPAWN
        + "\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
    )


def reasons(analysis: ClassAnalysis) -> dict[str, set]:
    return {t.name: {i.reason for i in t.ineligible} for t in analysis.pg_tests}


# -- execution models -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,model,why",
    [
        (
            per_test_class("def test_x(self):\n    pass\n"),
            ExecutionModel.PER_TEST_SPAWN,
            "setUp calls self._spawn_processes()",
        ),
        (
            """
     from torch.testing._internal.common_distributed import MultiProcessTestCase
     class Base(MultiProcessTestCase):
         def setUp(self):
             super().setUp()
             self._fork_processes()
     class TestX(Base):
         def test_x(self):
             pass
     """,
            ExecutionModel.PER_TEST_SPAWN,
            "setUp of Base calls self._fork_processes()",
        ),
        (
            """
     from torch.testing._internal.common_fsdp import FSDPTest
     class TestX(FSDPTest):
         def test_x(self):
             pass
     """,
            ExecutionModel.PER_TEST_SPAWN,
            "derives from FSDPTest",
        ),
        (
            """
     import torch.testing._internal.common_distributed as cd
     class TestX(cd.MultiProcContinousTest):
         def test_x(self):
             pass
     """,
            ExecutionModel.CONTINUOUS,
            "derives from MultiProcContinousTest",
        ),
        (
            """
     from distlint.runtime import MultiProcContinuousTest as Continuous
     class TestX(Continuous):
         def test_x(self):
             pass
     """,
            ExecutionModel.CONTINUOUS,
            "derives from MultiProcContinuousTest",
        ),
        (
            """
     from torch.testing._internal.distributed._tensor.common_dtensor import DTensorContinuousTestBase
     class TestX(DTensorContinuousTestBase):
         def test_x(self):
             pass
     """,
            ExecutionModel.CONTINUOUS,
            "derives from DTensorContinuousTestBase",
        ),
        (
            """
     from torch.testing._internal.common_distributed import MultiThreadedTestCase
     class TestX(MultiThreadedTestCase):
         def setUp(self):
             super().setUp()
             self._spawn_threads()
         def test_x(self):
             pass
     """,
            ExecutionModel.THREADED,
            "derives from MultiThreadedTestCase",
        ),
        (
            """
     from torch.testing._internal.common_distributed import MultiProcessTestCase
     class TestX(MultiProcessTestCase):
         def test_x(self):
             pass
     """,
            ExecutionModel.PLAIN,
            "no multi-process base",
        ),
        (
            """
     import unittest
     class TestX(unittest.TestCase):
         def test_x(self):
             pass
     """,
            ExecutionModel.PLAIN,
            "no multi-process base",
        ),
    ],
)
def test_execution_model(source, model, why):
    analysis = only_class(source)
    assert analysis.model is model
    assert analysis.model_reason == why


def test_config_bases_decide_the_model():
    config = Config(
        per_test_bases=("torchrec.distributed.test_utils.multi_process.MultiProcessTestBase",),
        continuous_bases=("SharedPGBase",),
    )
    module = analyse(
        """
        from torchrec.distributed.test_utils.multi_process import MultiProcessTestBase
        from mysuite.common import SharedPGBase
        class TestA(MultiProcessTestBase):
            def test_a(self):
                pass
        class TestB(SharedPGBase):
            def test_b(self):
                pass
        """,
        config,
    )
    assert module.by_name("TestA").model is ExecutionModel.PER_TEST_SPAWN
    assert module.by_name("TestB").model is ExecutionModel.CONTINUOUS
    # Without the config the same classes are not targets.
    assert {c.model for c in analyse("").classes} == set()


def test_a_local_class_named_like_a_torch_base_is_not_that_base():
    analysis = only_class("""
        class FSDPTest:
            pass
        class TestX(FSDPTest):
            def test_x(self):
                pass
        """)
    assert analysis.model is ExecutionModel.PLAIN


# -- creation shapes and the fields the migrator uses ----------------------------------------------


def test_gloo_helper_shape_fields():
    source = per_test_class("""
        def _create_process_group_gloo(self, store, rank, world_size, opts):
            pg = dist.ProcessGroupGloo(store, self.rank, self.world_size, opts)
            dist.barrier(group=pg)
            return pg

        def opts(self, threads=2):
            opts = dist.ProcessGroupGloo._Options()
            opts._threads = threads
            return opts

        def test_empty_tensors(self):
            store = dist.FileStore(self.file_name, self.world_size)
            pg = self._create_process_group_gloo(store, self.rank, self.world_size, self.opts())
            pg.broadcast([torch.ones(1)]).wait()
        """)
    analysis = only_class(source)
    test = analysis.tests[0]
    (creation,) = test.creations
    assert creation.kind is CreationKind.SELF_HELPER
    assert creation.chain == ("self._create_process_group_gloo", "ProcessGroupGloo")
    assert creation.describe() == "via self._create_process_group_gloo -> ProcessGroupGloo"
    assert creation.backend == "gloo"
    assert (
        code(creation.options) == "self.opts()"
    )  # the helper's `opts` parameter, bound to the caller's argument
    assert code(creation.world_size) == "self.world_size"
    assert creation.bound_name == "pg"
    body = units(test.node)
    assert creation.statement is body[1]  # by identity: the migrator replaces this node
    assert creation.store_statements == [body[0]]
    assert creation.helper is not None and creation.helper.name == "_create_process_group_gloo"
    assert [h.name for h in creation.helper_chain] == ["_create_process_group_gloo"]
    # The same creation seen inside the helper: the migrator rewrites a helper that does test work there.
    inner = creation.inner
    assert inner is not None and inner.kind is CreationKind.BACKEND_CONSTRUCTOR
    assert inner.statement is units(creation.helper)[0] and inner.bound_name == "pg"
    assert code(inner.options) == "opts" and inner.inner is None
    assert test.eligible
    assert (analysis.backend, code(analysis.options), code(analysis.world_size)) == (
        "gloo",
        "self.opts()",
        "2",
    )
    assert "opts" in test.self_attributes and "_create_process_group_gloo" in test.self_attributes


@pytest.mark.parametrize(
    "call,kind,chain",
    [
        (
            'dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)',
            CreationKind.INIT_PROCESS_GROUP,
            ("init_process_group",),
        ),
        (
            "c10d.init_process_group('gloo', store=store, rank=self.rank, world_size=self.world_size)",
            CreationKind.INIT_PROCESS_GROUP,
            ("init_process_group",),
        ),
        (
            "ipg('gloo', store=store, rank=self.rank, world_size=self.world_size)",
            CreationKind.INIT_PROCESS_GROUP,
            ("init_process_group",),
        ),
        (
            "torch.distributed.ProcessGroupGloo(store, self.rank, self.world_size)",
            CreationKind.BACKEND_CONSTRUCTOR,
            ("ProcessGroupGloo",),
        ),
        (
            "c10d.ProcessGroupNCCL(store, self.rank, self.world_size)",
            CreationKind.BACKEND_CONSTRUCTOR,
            ("ProcessGroupNCCL",),
        ),
        (
            "self._create_process_group_nccl(store, self.opts())",
            CreationKind.KNOWN_HELPER,
            ("_create_process_group_nccl",),
        ),
        ("self.create_pg('cpu')", CreationKind.KNOWN_HELPER, ("create_pg",)),
    ],
)
def test_creation_shapes_through_aliases(call, kind, chain):
    header = HEADER + (
        "import torch.distributed.distributed_c10d as c10d\n"
        "from torch.distributed import init_process_group as ipg\n"
    )
    analysis = only_class(
        per_test_class(
            f"""
        def test_x(self):
            store = dist.FileStore(self.file_name, self.world_size)
            pg = {call}
        """,
            header=header,
        )
    )
    (creation,) = analysis.tests[0].creations
    assert (creation.kind, creation.chain) == (kind, chain)
    assert creation.bound_name == "pg"


def test_local_import_inside_the_test_resolves():
    analysis = only_class(
        per_test_class("""
        def test_x(self):
            from torch.distributed import ProcessGroupGloo as PGG
            pg = PGG(dist.HashStore(), self.rank, self.world_size)
        """)
    )
    assert analysis.tests[0].creations[0].kind is CreationKind.BACKEND_CONSTRUCTOR


def test_unrelated_function_with_the_same_name_is_not_a_creation():
    analysis = only_class(
        per_test_class(
            """
        def test_x(self):
            init_process_group("gloo")
        """,
            extra="\ndef init_process_group(backend):\n    return backend\n",
        )
    )
    assert analysis.tests[0].creations == []


def test_forwarded_kwargs_reach_the_creation():
    analysis = only_class(
        per_test_class("""
        def _init_process_group(self, **kwargs):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group(rank=self.rank, world_size=self.world_size, store=store, **kwargs)

        def test_x(self):
            self._init_process_group(backend="gloo", timeout=timedelta(seconds=5))
        """)
    )
    (creation,) = analysis.tests[0].creations
    assert creation.backend == "gloo"
    assert code(creation.timeout) == "timedelta(seconds=5)"


def test_helpers_are_followed_a_few_levels_and_cycles_end():
    analysis = only_class(
        per_test_class("""
        def _a(self):
            self._b()

        def _b(self):
            self._c()
            self._a()

        def _c(self):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                    rank=self.rank, world_size=self.world_size)

        def test_x(self):
            self._a()
        """)
    )
    (creation,) = analysis.tests[0].creations
    assert creation.chain == ("self._a", "self._b", "self._c", "init_process_group")
    assert [h.name for h in creation.helper_chain] == ["_a", "_b", "_c"]
    assert analysis.tests[0].eligible


def test_decorator_and_device_mesh():
    module = analyse("""
        from torch.distributed.device_mesh import init_device_mesh
        from torch.testing._internal.distributed._tensor.common_dtensor import DTensorTestBase, with_comms

        class TestMesh(DTensorTestBase):
            @with_comms
            def test_decorated(self):
                init_device_mesh("cuda", (self.world_size,))

            def test_mesh_only(self):
                mesh = init_device_mesh("cuda", (self.world_size,))
        """)
    decorated, mesh_only = module.by_name("TestMesh").tests
    assert [c.kind for c in decorated.creations] == [
        CreationKind.DECORATOR
    ]  # the mesh reuses that PG
    # The decorator: the expression in the def's decorator list.
    assert decorated.creations[0].node is decorated.node.decorator_list[0]
    (mesh,) = mesh_only.creations
    assert mesh.kind is CreationKind.DEVICE_MESH and mesh.backend == "nccl"
    assert mesh.statement is None  # init_device_mesh stays as is on a shared PG


def test_base_run_creation_for_fsdp_tests():
    analysis = only_class("""
        from torch.testing._internal.common_fsdp import FSDPTest
        class TestWrap(FSDPTest):
            def test_wrap(self):
                pass
        """)
    (creation,) = analysis.tests[0].creations
    assert creation.kind is CreationKind.BASE_RUN
    assert creation.node is analysis.tests[0].node
    assert creation.statement is None


# -- teardown ---------------------------------------------------------------------------------------


def test_trailing_destroy_and_try_finally_are_teardown():
    analysis = only_class(
        per_test_class("""
        def test_plain(self):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                    rank=self.rank, world_size=self.world_size)
            dist.barrier()
            dist.destroy_process_group()

        def test_finally(self):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                    rank=self.rank, world_size=self.world_size)
            try:
                dist.barrier()
            finally:
                dist.destroy_process_group()

        def test_early(self):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                    rank=self.rank, world_size=self.world_size)
            dist.destroy_process_group()
            self.assertFalse(dist.is_initialized())
        """)
    )
    plain, finally_, early = analysis.tests
    assert plain.teardown == [units(plain.node)[-1]] and plain.eligible
    assert (
        len(finally_.teardown) == 1
        and isinstance(finally_.teardown[0], ast.Try)
        and finally_.eligible
    )
    assert early.teardown == []
    assert {i.reason for i in early.ineligible} == {Reason.DESTROYS_PG_EARLY}


def test_a_one_line_if_or_finally_is_teardown_only_when_it_only_destroys():
    """``if x: y`` on one line holds ``y`` in the line itself: a test ending in a one-line
    assertion keeps it (migrate once dropped it as teardown, so the moved test asserted
    nothing), and a one-line ``finally:`` doing more than destroy keeps its ``try``."""
    init = (
        'dist.init_process_group("gloo", init_method=f"file://{self.file_name}", '
        "rank=self.rank, world_size=self.world_size)"
    )
    body = textwrap.dedent(f"""
        def test_asserts_last(self):
            {init}
            tensor = torch.ones(2)
            dist.all_reduce(tensor)
            if self.rank == 0: self.assertEqual(tensor, torch.full((2,), 2.0))

        def test_destroys_if_initialized(self):
            {init}
            dist.barrier()
            if dist.is_initialized(): dist.destroy_process_group()

        def test_finally_only_destroys(self):
            {init}
            try:
                dist.barrier()
            finally: dist.destroy_process_group()

        def test_finally_does_more(self):
            {init}
            try:
                dist.barrier()
            finally: os.environ.pop("SOME_KEY", None)

        def test_one_line_try_body(self):
            {init}
            try: dist.barrier()
            finally:
                dist.destroy_process_group()
        """)
    source = per_test_class(body)
    analysis = only_class(source)
    asserts, if_initialized, only_destroys, does_more, one_line_try = analysis.tests
    assert asserts.teardown == [] and asserts.eligible
    last = units(if_initialized.node)[-1]
    assert if_initialized.teardown == [last] and if_initialized.eligible
    assert len(only_destroys.teardown) == 1 and isinstance(only_destroys.teardown[0], ast.Try)
    assert only_destroys.eligible
    assert does_more.teardown == [] and does_more.eligible
    # No block to unwrap the try into: its destroy is an early one (the test stays per test).
    assert one_line_try.teardown == []
    assert {i.reason for i in one_line_try.ineligible} == {Reason.DESTROYS_PG_EARLY}
    migrated = migrate_source(source.encode(), "test_one_line.py")
    assert migrated.error is None and migrated.migrated is not None
    code = migrated.migrated.decode()
    assert "if self.rank == 0: self.assertEqual(tensor, torch.full((2,), 2.0))" in code
    assert 'finally: os.environ.pop("SOME_KEY", None)' in code
    assert "if dist.is_initialized(): dist.destroy_process_group()" not in code


def test_helper_that_ends_in_destroy_called_last():
    analysis = only_class(
        per_test_class("""
        def _run_and_destroy(self):
            dist.barrier()
            dist.destroy_process_group()

        def test_last(self):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                    rank=self.rank, world_size=self.world_size)
            self._run_and_destroy()

        def test_not_last(self):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                    rank=self.rank, world_size=self.world_size)
            self._run_and_destroy()
            dist.barrier()
        """)
    )
    last, not_last = analysis.tests
    assert last.eligible
    assert [(h.name, code(s)) for h, s in last.helper_teardown] == [
        ("_run_and_destroy", "dist.destroy_process_group()")
    ]
    assert {i.reason for i in not_last.ineligible} == {Reason.DESTROYS_PG_EARLY}


# -- class facts ---------------------------------------------------------------------------------------


def test_shared_timeout_becomes_the_class_timeout_and_a_different_one_is_a_reason():
    analysis = only_class(
        per_test_class("""
        def _init_pg(self, timeout=timedelta(seconds=60)):
            dist.init_process_group("gloo", init_method=f"file://{self.file_name}", rank=self.rank,
                                    world_size=self.world_size, timeout=timeout)

        def test_a(self):
            self._init_pg()

        def test_b(self):
            self._init_pg()

        def test_short(self):
            self._init_pg(timeout=timedelta(seconds=1))
        """)
    )
    assert code(analysis.timeout) == "timedelta(seconds=60)"
    assert reasons(analysis) == {
        "test_a": set(),
        "test_b": set(),
        "test_short": {Reason.CUSTOM_TIMEOUT},
    }


def test_class_level_facts_for_the_migrator():
    module = analyse(
        HEADER
        + """
class Base(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
        self._spawn_processes()

    @property
    def world_size(self):
        return 2

    def test_a(self):
        dist.init_process_group("nccl", init_method=f"file://{self.file_name}",
                                rank=self.rank, world_size=self.world_size)


class Variant(Base):
    pass
"""
    )
    base = module.by_name("Base")
    assert base.subclasses == ("Variant",)
    assert [code(s) for s in base.setup_environment] == [
        'os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"]="1"'
    ]
    assert isinstance(base.world_size_node, ast.FunctionDef) and code(base.world_size) == "2"
    assert base.backend == "nccl"
    assert base.bases == ("torch.testing._internal.common_distributed.MultiProcessTestCase",)
    assert module.by_name("Variant").bases == ("Base",)
    # A literal write before the spawn is declarable (the continuous class's worker_env): no reason,
    # and the subclass runs with the same environment.
    assert base.environment == {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    assert base.ineligible == [] and base.tests[0].ineligible == []
    assert module.by_name("Variant").environment == {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}


@pytest.mark.parametrize(
    "setup, declared",
    [
        # Written before the subclass calls super().setUp() (which spawns): its value is the last write.
        (
            'os.environ["TORCH_GLOO_LAZY_INIT"] = "1"\n        super().setUp()',
            {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "TORCH_GLOO_LAZY_INIT": "1"},
        ),
        # Written after the base spawned the ranks: they never see it.
        ('super().setUp()\n        os.environ["TORCH_GLOO_LAZY_INIT"] = "1"', None),
        # Not a literal.
        ('os.environ["TORCH_NCCL_BLOCKING_WAIT"] = str(1)\n        super().setUp()', None),
    ],
)
def test_class_environment_is_declared_or_a_reason(setup, declared):
    module = analyse(
        HEADER
        + f"""
class Base(MultiProcessTestCase):
    world_size = 2

    def setUp(self):
        os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"
        super().setUp()
        self._spawn_processes()

    def test_a(self):
        dist.init_process_group("gloo", init_method=f"file://{{self.file_name}}",
                                rank=self.rank, world_size=self.world_size)


class Variant(Base):
    def setUp(self):
        {setup}

    def tearDown(self):
        os.environ.pop("TORCH_GLOO_LAZY_INIT", None)
        super().tearDown()
"""
    )
    variant = module.by_name("Variant")
    if declared is None:
        assert [i.reason for i in variant.ineligible] == [Reason.CLASS_ENVIRONMENT]
    else:
        assert variant.ineligible == [] and variant.environment == declared


# -- reasons ---------------------------------------------------------------------------------------


#: A function defined in the test that runs a collective (cases below call it where an error
#: is expected: its collective sits in no ``assertRaises``, the call of it does).
_NESTED_REDUCE = "def reduce():\n    dist.all_reduce(torch.ones(1))\n"
_LAMBDA_REDUCE = "reduce = lambda: dist.all_reduce(torch.ones(1))\n"


@pytest.mark.parametrize(
    "body,expected",
    [
        ('os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"', Reason.PG_ENVIRONMENT),
        ('os.environ.update(NCCL_DEBUG="INFO")', Reason.PG_ENVIRONMENT),
        ('os.putenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL")', Reason.PG_ENVIRONMENT),
        (
            "with self.assertRaises(RuntimeError):\n    dist.all_reduce(torch.ones(1))",
            Reason.EXPECTS_FAILURE,
        ),
        ("self.assertRaises(RuntimeError, dist.barrier)", Reason.EXPECTS_FAILURE),
        ("sys.exit(3)", Reason.EXPECTS_FAILURE),
        ("if self.rank == 0:\n    os._exit(1)", Reason.KILLS_RANK),
        ("os.remove(self.file_name)", Reason.USES_FILE_NAME),
        ("dist.distributed_c10d._get_default_group().abort()", Reason.TESTS_ABORT),
        (
            _NESTED_REDUCE + "with self.assertRaises(RuntimeError):\n    reduce()",
            Reason.EXPECTS_FAILURE,
        ),
        (
            _NESTED_REDUCE
            + "with self.assertRaises(RuntimeError):\n    for _ in range(2):\n        reduce()",
            Reason.EXPECTS_FAILURE,
        ),
        (_NESTED_REDUCE + "self.assertRaises(RuntimeError, reduce)", Reason.EXPECTS_FAILURE),
        (
            _LAMBDA_REDUCE + "with self.assertRaises(RuntimeError):\n    reduce()",
            Reason.EXPECTS_FAILURE,
        ),
        (  # also called where no error is expected: the failing call is what the test is about
            _NESTED_REDUCE + "reduce()\nwith self.assertRaises(RuntimeError):\n    reduce()",
            Reason.EXPECTS_FAILURE,
        ),
    ],
)
def test_reason_from_the_test_body(body, expected):
    analysis = only_class(
        per_test_class(f"""
        def test_x(self):
            dist.init_process_group("gloo", init_method=f"file://{{self.file_name}}",
                                    rank=self.rank, world_size=self.world_size)
{textwrap.indent(body, " " * 12)}
        """)
    )
    assert reasons(analysis) == {"test_x": {expected}}


def _init_with(rank: str, world_size: str = "self.world_size", extra: str = "") -> str:
    """A test body's ``init_process_group`` with the given ``rank=`` and ``world_size=``."""
    arguments = f"store=store, rank={rank}, world_size={world_size}{extra}"
    return f'dist.init_process_group("gloo", {arguments})'


_STORE = "store = dist.FileStore(self.file_name, self.world_size)\n"


@pytest.mark.parametrize(
    "body,expected",
    [
        (_STORE + _init_with("self.world_size - 1 - self.rank"), {Reason.OTHER_RANK}),
        (  # through a local variable
            _STORE + "rank = (self.rank + 1) % self.world_size\n" + _init_with("rank"),
            {Reason.OTHER_RANK},
        ),
        ("self._init(self.world_size - 1 - self.rank)", {Reason.OTHER_RANK}),  # a helper's
        (
            _STORE + "pg = dist.ProcessGroupGloo(store, 1 - self.rank, self.world_size)",
            {Reason.OTHER_RANK},
        ),
        ("self._init(self.rank)", set()),
        (_STORE + _init_with("int(self.rank)"), set()),
        # The one rank of a world of one is 0: another world size, not another rank.
        (_STORE + _init_with("0", world_size="1"), {Reason.OTHER_WORLD_SIZE}),
    ],
)
def test_a_pg_created_with_another_rank_than_the_tests_own(body, expected):
    # On a shared PG the test would run as self.rank, not as the rank it wrote.
    analysis = only_class(
        per_test_class(f"""
        def _init(self, rank):
            dist.init_process_group("gloo", init_method=f"file://{{self.file_name}}",
                                    rank=rank, world_size=self.world_size)

        def test_x(self):
{textwrap.indent(body, " " * 12)}
        """)
    )
    assert reasons(analysis) == {"test_x": expected}


@pytest.mark.parametrize(
    "body,expected",
    [
        (
            _STORE + _init_with("self.rank", extra=", device_id=torch.device('cpu')"),
            {Reason.BOUND_DEVICE},
        ),
        ("self._init_bound(torch.device('cpu'))", {Reason.BOUND_DEVICE}),  # through a helper
        ("self._init_bound(None)", set()),
        ("self._init_bound()", set()),  # the helper's default: None
    ],
)
def test_a_pg_bound_to_a_device_cannot_be_the_shared_one(body, expected):
    # device_id= makes the PG eager and bound to its device (what comm-split tests count on);
    # the shared PG of a continuous class is neither, torch's as well as distlint's.
    analysis = only_class(
        per_test_class(f"""
        def _init_bound(self, device=None):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank,
                                    world_size=self.world_size, device_id=device)

        def test_x(self):
{textwrap.indent(body, " " * 12)}
        """)
    )
    assert reasons(analysis) == {"test_x": expected}


def test_a_pg_created_in_a_nested_function_expected_to_fail_keeps_the_test_per_test():
    # Moved, the test would lose the creation and the error it expects (it would fail).
    analysis = only_class(
        per_test_class("""
        def test_init_twice(self):
            def init():
                dist.init_process_group("gloo", init_method=f"file://{self.file_name}",
                                        rank=self.rank, world_size=self.world_size)

            init()
            with self.assertRaises(ValueError):
                init()
        """)
    )
    assert reasons(analysis) == {"test_init_twice": {Reason.EXPECTS_FAILURE}}


@pytest.mark.parametrize(
    "body",
    [
        'os.environ["OMP_NUM_THREADS"] = "1"',  # not PG environment
        'sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)',  # a skip, not a failure
        "sys.exit(77)",  # a raw skip code (DL301's business), still a skip
        "with self.assertRaises(ValueError):\n    int('x')",  # not around init or a collective
        "group = dist.new_group([0, 1])\ndist.barrier(group=group)\ndist.destroy_process_group(group)",
        _NESTED_REDUCE + "reduce()\nwith self.assertRaises(ValueError):\n    int('x')",
        # An argument check, as when the collective is written in the block itself.
        _NESTED_REDUCE
        + 'with self.assertRaisesRegex(ValueError, "invalid root rank"):\n    reduce()',
    ],
)
def test_not_a_reason(body):
    analysis = only_class(
        per_test_class(f"""
        def test_x(self):
            dist.init_process_group("gloo", init_method=f"file://{{self.file_name}}",
                                    rank=self.rank, world_size=self.world_size)
{textwrap.indent(body, " " * 12)}
        """)
    )
    assert analysis.tests[0].ineligible == []


def _fixture_analyses():
    resolver = ConfigResolver()
    for path in sorted(PG_FIXTURES.rglob("*.py")):
        config = resolver.for_file(path).config
        text = path.read_text(encoding="utf-8")
        yield path, analyze_module(ast.parse(text), text, config, ExternalBases(str(path)))


def test_fixtures_cover_every_reason_and_creation_kind():
    seen_reasons, seen_kinds, seen_models = set(), set(), set()
    for _, module in _fixture_analyses():
        for analysis in module.classes:
            seen_models.add(analysis.model)
            for test in analysis.tests:
                seen_kinds |= {c.kind for c in test.creations}
                seen_reasons |= {i.reason for i in test.ineligible}
    assert seen_reasons == set(Reason) - NOT_FROM_ANALYSIS
    assert seen_kinds == set(CreationKind)
    assert seen_models == set(ExecutionModel)


def test_a_helper_module_that_is_not_a_test_file_has_no_finding():
    path = PG_FIXTURES / "common_pg_helpers.py"
    config = ConfigResolver().for_file(path).config
    result = lint_source(path.read_bytes(), str(path), config)
    assert result.error is None and result.findings == []
    assert path.with_suffix(".findings").read_text() == ""


# -- rules share one analysis; the pre-screen only skips files without findings -------------------------


def test_one_analysis_per_file_shared_by_the_rules(monkeypatch):
    import distlint.analysis.pg as pg

    calls = []
    real = pg.analyze_module
    monkeypatch.setattr(pg, "analyze_module", lambda *args: calls.append(1) or real(*args))
    path = PG_FIXTURES / "test_pg_reasons_gloo.py"
    result = lint_source(path.read_bytes(), str(path), Config(select=("DL2",)))
    assert {f.code for f in result.findings} == {"DL201", "DL202"}
    assert len(calls) == 1


@pytest.mark.parametrize("path", sorted(PG_FIXTURES.rglob("*.py")), ids=lambda p: p.name)
def test_prescreen_never_hides_a_finding(path):
    config = Config(select=("DL2", "DL3"))
    if path.parent.name == "torchrec":
        config = ConfigResolver().for_file(path).config
    source = path.read_bytes()
    screened = lint_source(source, str(path), config, PG_RULES, prescreen=True)
    full = lint_source(source, str(path), config, PG_RULES, prescreen=False)
    assert screened.findings == full.findings


def test_prescreen_skips_files_that_cannot_have_a_pg_finding():
    plain = (
        b"import unittest\n\nclass TestX(unittest.TestCase):\n    def test_x(self):\n        pass\n"
    )
    screen = PreScreen(plain, "test_x.py")
    assert not any(rule.may_report(screen, Config()) for rule in PG_RULES)
    # A continuous class without any lifecycle call never reaches libcst for DL203.
    clean = (
        b"from torch.testing._internal.common_distributed import MultiProcContinuousTest\n"
        b"class T(MultiProcContinuousTest):\n    def test_a(self):\n        dist.all_reduce(t)\n"
    )
    assert not rules_by_code()["DL203"].may_report(PreScreen(clean, "t.py"), Config())
    # Config-named bases and helpers are words the pre-screen looks for.
    config = Config(per_test_bases=("x.MyBase",), pg_helpers=("make_world",))
    custom = b"class T(MyBase):\n    def test_a(self):\n        self.make_world()\n"
    assert rules_by_code()["DL202"].may_report(PreScreen(custom, "t.py"), config)
    assert not rules_by_code()["DL202"].may_report(PreScreen(custom, "t.py"), Config())


# A module that defines the per-test and continuous bases and their PG helpers, and no test
# (the shape of torch's common_distributed.py / common_fsdp.py): no DL2xx rule has anything to
# read in it. A test method anywhere in a class body (under an ``if``, in a nested class, an
# ``async def``) brings every rule back.
_BASES_ONLY = """import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase, MultiProcContinuousTest


class MyPerTestBase(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def init_pg(self):
        dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size)
        dist.destroy_process_group()


class MyContinuousBase(MultiProcContinuousTest):
    def helper(self):
        dist.destroy_process_group()


def test_not_a_method():
    pass
"""


@pytest.mark.parametrize(
    "tail,reaches",
    [
        ("", False),
        ("\nclass T(MyPerTestBase):\n    def test_a(self):\n        self.init_pg()\n", True),
        (
            "\nclass T(MyPerTestBase):\n    if X:\n        async def test_a(self):\n            pass\n",
            True,
        ),
        (
            "\nif X:\n    class T(MyPerTestBase):\n        class Inner:\n            def test_a(self):\n                pass\n",
            True,
        ),
    ],
    ids=["bases-only", "a-test", "async-test-under-if", "nested-class"],
)
def test_prescreen_needs_a_test_method_in_some_class(tail, reaches):
    source = (_BASES_ONLY + tail).encode()
    screen = PreScreen(source, "common_x.py")
    codes = {"DL201", "DL202", "DL203"}
    assert {r.code for r in PG_RULES if r.code in codes and r.may_report(screen, Config())} == (
        codes if reaches else set()
    )
    full = lint_source(source, "common_x.py", Config(select=("DL2",)), PG_RULES, prescreen=False)
    screened = lint_source(source, "common_x.py", Config(select=("DL2",)), PG_RULES)
    assert screened.findings == full.findings
    if tail.startswith("\nclass T(MyPerTestBase):\n    def test_a"):
        assert {f.code for f in full.findings} == {"DL201", "DL202"}


def test_analysis_and_rules_never_import_torch():
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from distlint.config import Config\n"
        "from distlint.linter import lint_source\n"
        f"p = Path({str(PG_FIXTURES / 'test_c10d_nccl_style.py')!r})\n"
        "r = lint_source(p.read_bytes(), str(p), Config(select=('DL2', 'DL3')))\n"
        "assert r.findings, r\n"
        "assert 'torch' not in sys.modules and 'distlint.runtime' not in sys.modules, 'torch imported'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)


def test_reassigned_helper_parameter_is_not_taken_from_the_default():
    # torch's test_zero_redundancy_optimizer.py: world_size=-1 means "the class's".
    analysis = only_class(
        per_test_class("""
        def dist_init(self, rank, world_size=-1, backend=dist.Backend.GLOO):
            if world_size < 1:
                world_size = self.world_size
            store = dist.FileStore(self.file_name, world_size)
            return dist.init_process_group(backend=backend, store=store, rank=rank, world_size=world_size)

        def test_state_dict(self):
            self.dist_init(self.rank)
        """)
    )
    (creation,) = analysis.tests[0].creations
    assert code(creation.world_size) == "world_size"
    # No reason at all: the backend (the default dist.Backend.GLOO) is resolved like "gloo".
    assert analysis.tests[0].ineligible == [] and analysis.backend == "gloo"


@pytest.mark.parametrize(
    "call,reported",
    [
        ("sys.exit(77)", True),
        ("sys.exit((77))", True),
        ("sys.exit(0x4D)", True),
        ("sys.exit(7_7)", True),
        ("sys.exit(  # two GPUs\n    77,\n)", True),
        ("sys.exit(77 + 1)", False),
        ("sys.exit(1)", False),
        ("print(77)\nsys.exit(code)", False),
    ],
)
def test_dl301_prescreen_lets_through_every_reported_exit(call, reported):
    source = f"import sys\ncode = 3\n{call}\n".encode()
    rule = rules_by_code()["DL301"]
    full = lint_source(source, "test_x.py", Config(select=("DL301",)), [rule], prescreen=False)
    assert bool(full.findings) is reported
    assert rule.may_report(PreScreen(source, "test_x.py"), Config()) is reported


# -- DL202's reason phrases agree with their count ---------------------------------------------

_IRREGULAR = {"are": "is", "have": "has", "do": "does"}


def _third_person(verb: str) -> str:
    """The singular (third person) form of a plural present-tense verb."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in tuple("aeiou"):
        return verb[:-1] + "ies"
    return verb + "s"


def _agree(one: str, many: str) -> bool:
    """``one`` is ``many`` with its verb in the singular (the subject is the count, so the
    phrase starts with it; a verb joined by "or" changes too) and ``their`` as ``its``."""
    singular, plural = one.split(), many.split()
    if len(singular) != len(plural) or singular == plural:
        return False
    verbs = {0} | {i + 1 for i, word in enumerate(plural[:-1]) if word == "or" and i == 1}
    for index, (s, p) in enumerate(zip(singular, plural)):
        if index in verbs:
            if s != _third_person(p):
                return False
        elif p == "their":
            if s != "its":
                return False
        elif s != p:
            return False
    return True


def _class_with_reason(reason: Reason, tests: int, detail: str) -> ClassAnalysis:
    from distlint.analysis.model import Ineligibility, PGCreation, TestAnalysis

    node = ast.parse("class C:\n    pass\n").body[0]
    analysis = ClassAnalysis("C", node, ExecutionModel.PER_TEST_SPAWN)  # type: ignore[arg-type]
    for index in range(tests):
        function = ast.parse(f"def test_{index}(self):\n    pass\n").body[0]
        test = TestAnalysis(f"test_{index}", function)  # type: ignore[arg-type]
        test.creations.append(
            PGCreation(CreationKind.INIT_PROCESS_GROUP, function, ("init_process_group",))
        )
        test.ineligible.append(Ineligibility(reason, function, detail))
        analysis.tests.append(test)
    return analysis


@pytest.mark.parametrize("reason", list(Reason), ids=lambda r: r.code)
def test_every_reason_phrase_agrees_with_its_count(reason):
    """Rendered by DL202 for 1 and for 2 tests, every reason reads as English (derived from the
    Reason enum, whose ReasonText cannot be built without both forms)."""
    from distlint.rules.dl202_per_test_spawn_class import PerTestSpawnClass

    details = [""] + (
        ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] if reason is Reason.PG_ENVIRONMENT else []
    )
    for detail in details:
        rendered = {}
        for count in (1, 2):
            message = PerTestSpawnClass.message(_class_with_reason(reason, count, detail))
            prefix = f"none can move to a continuous class: {count} "
            assert prefix in message, message
            rendered[count] = message.split(prefix, 1)[1].rsplit(" (select DL201", 1)[0]
        assert _agree(rendered[1], rendered[2]), rendered


def test_the_agreement_check_rejects_bad_grammar():
    assert _agree("is in a class", "are in a class")
    assert _agree("aborts or shuts down the PG", "abort or shut down the PG")
    assert _agree("passes its own timeout", "pass their own timeout")
    assert not _agree("are in a class", "are in a class")  # "1 are ..."
    assert not _agree("pass their own timeout", "pass their own timeout")
    assert not _agree("passes their own timeout", "pass their own timeout")
    assert not _agree("aborts or shut down the PG", "abort or shut down the PG")
    assert not _agree("inherit a base class", "inherit a base class")


@pytest.mark.parametrize(
    "constants, backend, expected",
    [
        ('BACKEND = "gloo"', "BACKEND", "gloo"),
        ("", "dist.Backend.NCCL", "nccl"),
        ("import torch.distributed as c10d", "c10d.Backend.GLOO", "gloo"),
        ("BACKEND = dist.Backend.GLOO", "BACKEND", "gloo"),
        ('BACKEND: str = "nccl"', "BACKEND", "nccl"),
        # Bound twice at module level (or not to a backend): distlint cannot tell which.
        (
            'BACKEND = "gloo"\nif sys.platform == "win32":\n    pass\nBACKEND = "nccl"',
            "BACKEND",
            None,
        ),
        ("BACKEND = os.environ['BACKEND']", "BACKEND", None),
    ],
)
def test_backend_from_a_constant_or_torchs_backend_enum(constants, backend, expected):
    analysis = only_class(
        per_test_class(
            f"""
        def test_all_reduce(self):
            dist.init_process_group({backend}, init_method=f"file://{{self.file_name}}",
                                    rank=self.rank, world_size=self.world_size)
        """,
            extra=constants + "\n",
        )
    )
    assert analysis.backend == expected
    assert (Reason.UNKNOWN_BACKEND in {i.reason for i in analysis.ineligible}) == (expected is None)


@pytest.mark.parametrize(
    "device, says",
    [
        (
            "DEVICE",
            "the tests create their PG with create_pg, whose device picks the backend and is not a literal",
        ),
        ('"cpu"', None),
    ],
)
def test_a_device_chosen_backend_says_the_device_is_what_to_change(device, says):
    """DistributedTestBase.create_pg(device): a device that is not a literal leaves the backend
    unknown, and the reason names the device, not a backend argument the test never had."""
    analysis = only_class(f"""
        import torch
        import torch.distributed as dist
        from torch.testing._internal.common_distributed import DistributedTestBase

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

        class ObjectCollectives(DistributedTestBase):
            def test_all_gather_object(self):
                self.create_pg(device={device})
                dist.all_gather_object([None] * self.world_size, self.rank)
        """)
    reasons = [i for i in analysis.ineligible if i.reason is Reason.UNKNOWN_BACKEND]
    if says is None:
        assert not reasons and analysis.backend == "gloo"
    else:
        assert [says in i.detail for i in reasons] == [True], [i.detail for i in reasons]


@pytest.mark.parametrize(
    ("context", "argument_check"),
    [
        ('self.assertRaisesRegex(RuntimeError, "invalid root rank")', True),
        ('self.assertRaisesRegex(ValueError, "requires non-empty tensor list")', True),
        ("self.assertRaises(ValueError)", True),
        ("self.assertRaises(TypeError)", True),
        # Communication failures, or nothing said about what fails: the test expects failure.
        ('self.assertRaisesRegex(RuntimeError, "Connection closed by peer")', False),
        ('self.assertRaisesRegex(RuntimeError, "(?i)timeout")', False),
        ('self.assertRaisesRegex(dist.DistBackendError, "NCCL error")', False),
        ('self.assertRaisesRegex(RuntimeError, "")', False),
        ("self.assertRaises(RuntimeError)", False),
        ("self.assertRaisesRegex(RuntimeError, pattern)", False),
        ("pytest.raises(ValueError)", False),
    ],
)
def test_an_argument_check_context_is_told_from_an_expected_failure(context, argument_check):
    from distlint.analysis.pg.raises import argument_check_context

    expression = ast.parse(context, mode="eval").body
    assert argument_check_context(expression, Source(context)) is argument_check


def test_collectives_in_argument_checks_leave_the_test_migratable_a_creation_does_not():
    source = textwrap.dedent(
        """\
        import torch
        import torch.distributed as dist
        from torch.testing._internal.common_distributed import MultiProcessTestCase


        class ChecksTest(MultiProcessTestCase):
            def setUp(self):
                super().setUp()
                self._spawn_processes()

            def _init(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)

            def test_argument_checks(self):
                self._init()
                with self.assertRaisesRegex(RuntimeError, "invalid root rank"):
                    dist.broadcast(torch.ones(1), src=-1)
                with self.assertRaises(ValueError):
                    dist.all_reduce(torch.ones(1), op="sum")

            def test_bad_init(self):
                with self.assertRaisesRegex(ValueError, "invalid world size"):
                    dist.init_process_group("gloo", rank=self.rank, world_size=-1)
        """
    )
    messages = {
        f.message.split("`")[1]: f.message
        for f in lint_source(source.encode(), "test_checks.py", Config(select=("DL201",))).findings
    }
    assert "; migratable:" in messages["test_argument_checks"]
    assert "expects failure (assertRaises around init_process_group())" in messages["test_bad_init"]

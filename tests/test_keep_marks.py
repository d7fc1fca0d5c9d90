"""``# distlint: keep-per-test``: read by the one analysis (DL201 and migrate alike), written by
``--verify --write`` on what the runs kept behind."""

from __future__ import annotations

import ast
import textwrap

import pytest

from distlint.analysis.keep_marks import keep_mark
from distlint.codemods.keep_marks import with_keep_marks
from distlint.codemods.migrate_continuous import MigrationResult, migrate_source
from distlint.config import Config
from distlint.linter import lint_source
from distlint.syntax.ast_lines import prepare
from distlint.syntax.ast_nodes import Source

SOURCE = textwrap.dedent(
    """\
    import torch
    import torch.distributed as dist
    from torch.testing._internal.common_distributed import MultiProcessTestCase, requires_gloo
    from torch.testing._internal.common_utils import run_tests


    class GlooTest(MultiProcessTestCase):
        world_size = 2

        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def _init(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)

        @requires_gloo()
        def test_sums(self):
            self._init()
            dist.all_reduce(torch.ones(1))

        @requires_gloo()
        def test_leaks(self):
            self._init()
            dist.all_reduce(torch.ones(1))


    if __name__ == "__main__":
        run_tests()
    """
)


def _keep_mark(code: str) -> str | None:
    # After a first statement: a module's leading comments are its header, not the def's.
    text = "x = 1\n" + code
    module = ast.parse(text)
    prepare(module, text)
    _, statement = module.body
    assert isinstance(statement, ast.FunctionDef)
    return keep_mark(statement, module, Source(text))


@pytest.mark.parametrize(
    "code, expected",
    [
        (
            "# distlint: keep-per-test (--verify: diverged)\ndef test_a(self): pass\n",
            "--verify: diverged",
        ),
        ("#distlint:keep-per-test\n@decorate\ndef test_a(self): pass\n", ""),
        (
            "@decorate\n# distlint: keep-per-test (flaky here)\ndef test_a(self): pass\n",
            "flaky here",
        ),
        ("@first\n# distlint: keep-per-test\n@second\ndef test_a(self): pass\n", ""),
        ("# keep this per test, distlint\ndef test_a(self): pass\n", None),
        ("# distlint: keep-per-tests\ndef test_a(self): pass\n", None),
        ("def test_a(self):  # distlint: keep-per-test\n    pass\n", None),
    ],
)
def test_the_mark_is_read_above_the_test_and_its_decorators_only(code, expected):
    assert _keep_mark(code) == expected


def _as_result(source: str) -> MigrationResult:
    """``source`` as a migration's output (what ``--verify`` marks)."""
    return MigrationResult("test_marks.py", source.encode(), source.encode())


def _marked(source: str, test: str, why: str) -> str:
    return with_keep_marks(_as_result(source), {f"GlooTest.{test}": why}).migrated.decode()


def test_a_marked_test_stays_and_dl201_and_migrate_say_so_alike():
    marked = _marked(SOURCE, "test_leaks", "--verify: diverged")
    assert (
        "    # distlint: keep-per-test (--verify: diverged)\n    @requires_gloo()\n    def test_leaks"
        in marked
    )
    result = migrate_source(marked.encode(), "test_marks.py")
    assert result.error is None and result.changed
    (report,) = result.report.classes
    assert report.moved == ["test_sums"]
    assert "left   test_leaks  [kept]" in result.report.text()
    assert "(--verify: diverged)" in result.report.text()
    findings = lint_source(marked.encode(), "test_marks.py", Config(select=("DL201",))).findings
    by_test = {f.message.split("`")[1]: f.message for f in findings}
    assert "migratable" in by_test["test_sums"]
    assert "kept by a comment (--verify: diverged)" in by_test["test_leaks"]


def test_the_mark_is_written_once_and_only_on_a_test_the_module_defines():
    once = _marked(SOURCE, "test_leaks", "--verify: flaky")
    assert _marked(once, "test_leaks", "--verify: flaky") == once
    assert once.count("keep-per-test") == 1
    untouched = _as_result(SOURCE)
    assert (
        with_keep_marks(untouched, {"GlooTest.test_missing": "x", "Other.test_leaks": "x"})
        is untouched
    )

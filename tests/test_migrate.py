"""``distlint migrate``: golden outputs, reports, safety, idempotence, round trip, collection.

Golden files (``fixtures/migrate``): ``test_<name>.py`` is the input,
``test_<name>.py.migrated`` the expected output with the default options (absent: the
file must not change) and ``test_<name>.report`` the expected report text.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import stat
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import libcst as cst
import pytest
from conftest import EXTERNAL_BASE_SOURCE

from distlint.codemods.layout import LINE_LENGTH
from distlint.codemods.migrate_continuous import MigrateOptions, MigrationResult, migrate_source
from distlint.config import Config
from distlint.linter import lint_source

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "migrate"
CASES = sorted(FIXTURES.glob("test_*.py"))
CHANGED = [case for case in CASES if case.with_name(case.name + ".migrated").exists()]
RUNTIMES = ("distlint", "torch")
#: Fixtures whose tests only move to reused workers, which torch's classes do not offer: under
#: ``--runtime torch`` they stay as they are (``test_reused_workers_only_change_on_distlint``).
DISTLINT_ONLY = frozenset({"test_refusals.py"})


def changed_on(runtime: str) -> list[Path]:
    return [c for c in CHANGED if runtime == "distlint" or c.name not in DISTLINT_ONLY]


#: What the small inputs below test: the tests that cannot share a PG stay per test.
SHARED_PG_ONLY = MigrateOptions(reused_workers=False)

CHANGED_PAIRS = [(case, runtime) for runtime in RUNTIMES for case in changed_on(runtime)]


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _migrate(
    path: Path, runtime: str = "distlint", source: bytes = b"", suffix: str = "Continuous"
) -> MigrationResult:
    """Migrate a fixture (results are shared between tests: migrating costs about a second)."""
    return _cached_migrate(source or path.read_bytes(), _relative(path), runtime, suffix)


@functools.cache
def _cached_migrate(source: bytes, path: str, runtime: str, suffix: str) -> MigrationResult:
    return migrate_source(
        source, path, options=MigrateOptions(runtime=runtime, class_suffix=suffix)
    )


def _source_result(
    text: str, runtime: str = "distlint", reused_workers: bool = False
) -> MigrationResult:
    """Small inputs test what can share a class's PG; the tests that cannot stay per test unless
    ``reused_workers`` (tests of that target say so)."""
    return migrate_source(
        textwrap.dedent(text).encode(),
        "test_inline.py",
        options=MigrateOptions(runtime=runtime, reused_workers=reused_workers),
    )


# -- golden files ---------------------------------------------------------------------------


def test_the_fixtures_cover_both_backends_and_changes() -> None:
    names = {case.name for case in CASES}
    assert any("gloo" in n for n in names) and any("nccl" in n for n in names)
    assert len(CHANGED) >= 3 and len(CHANGED) < len(CASES)  # some change, one must stay as it is


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden_output_and_report(case: Path) -> None:
    result = _migrate(case)
    assert result.error is None
    expected = case.with_name(case.name + ".migrated")
    if expected.exists():
        assert result.changed
        assert result.migrated.decode() == expected.read_text()
    else:
        assert not result.changed and result.migrated is None
    assert result.report.text() == case.with_suffix(".report").read_text()


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_second_run_changes_nothing(case: Path, runtime: str) -> None:
    first = _migrate(case, runtime)
    second = _migrate(case, runtime, source=first.migrated or case.read_bytes())
    assert second.error is None
    assert not second.changed, second.diff()
    assert second.report.moved_count == 0


#: Fixtures that are not already on distlint's runtime (a file migrated once with it is not).
NOT_ON_DISTLINT = [c for c in changed_on("torch") if b"from distlint" not in c.read_bytes()]


@pytest.mark.parametrize("name", sorted(DISTLINT_ONLY))
def test_reused_workers_only_change_on_distlint(name: str) -> None:
    """Under ``--runtime torch`` a file whose tests only move to reused workers stays, and the
    report says what the distlint runtime would do."""
    torch = _migrate(FIXTURES / name, "torch")
    assert not torch.changed and torch.report.reused_count == 0
    assert any("use --runtime distlint" in note for c in torch.report.classes for note in c.notes)
    distlint = _migrate(FIXTURES / name)
    assert distlint.changed and distlint.report.reused_count > 0


# -- PR-ready layout (no formatter at test time) -----------------------------------------------


def _import_lists(text: str) -> dict[str, str]:
    """module -> the code of its ``from module import ...`` statement."""
    found = {}
    for statement in cst.parse_module(text).body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(
            statement.body[0], cst.ImportFrom
        ):
            node = statement.body[0]
            module = cst.Module([]).code_for_node(node.module) if node.module else ""
            found[module] = cst.Module([]).code_for_node(statement)
    return found


@pytest.mark.parametrize("case,runtime", CHANGED_PAIRS, ids=lambda p: getattr(p, "name", p))
def test_migrated_lines_need_no_formatter(case: Path, runtime: str) -> None:
    """No trailing whitespace, no added line over black's 88, an import list written one name per
    line stays so, and sorted (PyTorch's lint job runs black and usort)."""
    original = case.read_text()
    migrated = _migrate(case, runtime).migrated.decode()  # shared with the tests above
    before = set(original.splitlines())
    for number, line in enumerate(migrated.splitlines(), 1):
        assert line == line.rstrip(), f"{case.name}:{number} ({runtime}) ends in whitespace"
        if line not in before:
            assert len(line) <= LINE_LENGTH, f"{case.name}:{number} ({runtime}) is too long"
            assert "( " not in line and not line.endswith("( "), f"{case.name}:{number}: {line!r}"
    originals, results = _import_lists(original), _import_lists(migrated)
    for module, statement in results.items():
        written = originals.get(module)
        if written is None or statement == written:
            continue
        names = re.findall(r"[\w.]+(?: as \w+)?(?=,|\s*\)|\s*$)", statement.split(" import ")[1])
        if "(\n" in written:  # one name per line, a trailing comma: it stays so
            assert statement == (
                f"from {module} import (\n" + "".join(f"    {n},\n" for n in names) + ")\n"
            ), statement
        order = [n.split(" as ")[0] for n in names]
        before = re.findall(r"[\w.]+(?: as \w+)?(?=,|\s*\)|\s*$)", written.split(" import ")[1])
        before = [n.split(" as ")[0] for n in before]
        if before == sorted(before, key=str.casefold):  # usort would sort an unsorted one anyway
            assert order == sorted(order, key=str.casefold), f"{module}: {order} is not sorted"
        else:  # its names keep their order, new names after them
            assert order[: len(before)] == [n for n in before if n in order], order


@pytest.mark.parametrize("case", NOT_ON_DISTLINT, ids=lambda p: p.name)
def test_torch_runtime_imports_torchs_continuous_class(case: Path) -> None:
    text = _migrate(case, "torch").migrated.decode()
    module = cst.parse_module(text)
    imports = [
        cst.Module([]).code_for_node(s).strip()
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        and isinstance(s.body[0], (cst.Import, cst.ImportFrom))
    ]
    # MultiProcContinuousTest (common_distributed), DTensorContinuousTestBase (common_dtensor) or
    # FSDPTestContinuous (common_fsdp): torch's continuous counterpart of the per-test base.
    assert any(
        line.startswith("from torch.testing._internal.")
        and re.search(
            r"\b(MultiProcContinuousTest|DTensorContinuousTestBase|FSDPTestContinuous)\b", line
        )
        for line in imports
    ), imports
    # Code that lands in PyTorch cannot depend on distlint (a comment, such as the mark
    # `--verify --write` leaves on a test it kept behind, is no dependency).
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "distlint" in line]
    assert "from torch.testing._internal.common_utils import" in text and "run_tests()" in text


@pytest.mark.parametrize("case", CHANGED, ids=lambda p: p.name)
def test_distlint_runtime_runs_with_distlint_run_tests(case: Path) -> None:
    """torch's run_tests() rejects test classes that do not derive from torch's TestCase."""
    text = _migrate(case).migrated.decode()
    # The continuous base comes from distlint.runtime (MultiProcContinuousTest, or its DTensor/FSDP
    # forms in distlint.runtime.torch_dtensor / torch_fsdp).
    assert re.search(
        r"^from distlint\.runtime(\.torch_\w+)? import "
        r".*(MultiProcContinuousTest|ContinuousTest|ReusedWorkersTest)",
        text,
        re.MULTILINE,
    )
    imports = re.findall(r"^from (\S+) import .*\brun_tests\b", text, re.MULTILINE)
    assert imports == ["distlint.runtime"]
    assert text.rstrip().endswith("run_tests()")


def test_class_suffix_names_the_new_classes() -> None:
    result = _migrate(FIXTURES / "test_gloo_helper_pg.py", suffix="Shared")
    text = result.migrated.decode()
    assert "class ProcessGroupGlooTestShared(MultiProcContinuousTest):" in text
    assert "class ProcessGroupGlooLazyInitTestShared(ProcessGroupGlooTestShared):" in text
    assert "Continuous(" not in text


# -- the report -----------------------------------------------------------------------------


def test_report_names_every_test_left_behind_with_its_reason() -> None:
    report = _migrate(FIXTURES / "test_nccl_pg_ops.py").report
    left = {entry.test: entry.code for cls in report.classes for entry in cls.kept}
    assert left == {
        "test_abort_pg_in_flight": "tests-abort",
        "test_blocking_wait_timeout": "env-decorator",
    }
    moved = [name for cls in report.classes for name in cls.moved]
    # The classes whose setUp sets TORCH_NCCL_* before spawning declare it (worker_env). The two
    # tests sharing _test_reduce_scatter move, each to the class of the options it passes it.
    assert moved == [
        "test_allreduce_ops",
        "test_broadcast_dtypes",
        "test_high_priority_stream",
        "test_reduce_scatter",
        "test_reduce_scatter_high_priority",
        "test_barrier",
        "test_all_gather_into_tensor",
        "test_distribute_tensor",
    ]
    placed = {cls.name: cls for cls in report.classes}["ProcessGroupNCCLOpTest"]
    assert placed.moved_to == {
        "test_high_priority_stream": "ProcessGroupNCCLOpTestHighPriorityStreamTrueContinuous",
        "test_reduce_scatter_high_priority": "ProcessGroupNCCLOpTestHighPriorityStreamTrueContinuous",
    }


SHARED_HELPER_SOURCE = """
import torch
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase
from torch.testing._internal.common_utils import run_tests


class GlooTest(MultiProcessTestCase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def opts(self, threads=2):
        return dist.ProcessGroupGloo._Options()

    def _run_all_reduce(self, opts):
        store = dist.FileStore(self.file_name, self.world_size)
        pg = dist.ProcessGroupGloo(store, self.rank, self.world_size, opts)
        pg.allreduce(torch.ones(1)).wait()
        return pg

    def test_all_reduce(self):
        self._run_all_reduce(self.opts())

    def test_all_reduce_threads(self):
        self._run_all_reduce(self.opts(threads=8))
{extra}

if __name__ == "__main__":
    run_tests()
"""
STAYING_CALLER = """
    def test_all_reduce_then_abort(self):
        pg = self._run_all_reduce(self.opts())
        pg.abort()
"""


@pytest.mark.parametrize(
    "staying_caller", [False, True], ids=["all-callers-move", "a-caller-stays"]
)
def test_a_helper_that_builds_the_pg_moves_with_its_callers_unless_one_stays(
    staying_caller: bool,
) -> None:
    """The helper's rewritten form (``self.pg``) may serve several continuous classes (one per
    options value, through the mixin); only a test that stays calling it keeps its callers back."""
    source = SHARED_HELPER_SOURCE.format(extra=STAYING_CALLER if staying_caller else "").encode()
    result = migrate_source(source, "test_shared_helper.py", options=SHARED_PG_ONLY)
    assert result.error is None
    (report,) = result.report.classes
    left = {entry.test: entry.code for entry in report.kept}
    if staying_caller:
        assert left == {
            "test_all_reduce": "shared-helper",
            "test_all_reduce_threads": "shared-helper",
            "test_all_reduce_then_abort": "tests-abort",
        }
        assert not result.changed
    else:
        assert left == {} and report.moved == ["test_all_reduce", "test_all_reduce_threads"]
        assert report.moved_to == {"test_all_reduce_threads": "GlooTestThreads8Continuous"}
        migrated = result.migrated.decode()
        assert migrated.count("def _run_all_reduce(self, opts):") == 1  # in the mixin, rewritten
        assert "pg = self.pg" in migrated and "ProcessGroupGloo(store" not in migrated


def test_every_refusal_leaves_the_file_unchanged_and_says_why() -> None:
    source = (FIXTURES / "test_refusals.py").read_bytes()
    options = MigrateOptions(reused_workers=False)
    result = migrate_source(source, "fixtures/migrate/test_refusals.py", options=options)
    assert not result.changed
    codes = {entry.test: entry.code for cls in result.report.classes for entry in cls.kept}
    assert codes == {
        "test_all_reduce": "class-body",
        "test_barrier": "existing-continuous",
        "test_broadcast": "class-options",
        "test_init_and_destroy": "rewrite",
        "test_rank_in_range": "no-pg",
    }
    assert any(e.code == "module-reference" for cls in result.report.classes for e in cls.kept)


PG_FIXTURES = ROOT / "fixtures" / "pg"
#: Every fixture with per-test classes: the migrate goldens and the PG analysis' shapes.
REPORT_CASES = CASES + sorted(PG_FIXTURES.rglob("test_*.py"))


@pytest.mark.parametrize("case", REPORT_CASES, ids=lambda p: _relative(p))
def test_the_report_shows_every_per_test_class_and_its_tests(case: Path) -> None:
    """No per-test class the analysis sees is missing from the report, and each of its own
    ``test*`` methods is listed as moved or left (a class without any says where its tests are)."""
    import ast

    from distlint.analysis.external_bases import ExternalBases
    from distlint.analysis.model import ExecutionModel
    from distlint.analysis.pg import analyze_module
    from distlint.config import ConfigResolver

    config = ConfigResolver().for_file(case).config
    text = case.read_text(encoding="utf-8")
    analysis = analyze_module(ast.parse(text), text, config, ExternalBases(str(case)))
    report = migrate_source(case.read_bytes(), _relative(case), config).report
    listed = {cls.name: cls for cls in report.classes}
    for cls in analysis.classes:
        if cls.model is not ExecutionModel.PER_TEST_SPAWN:
            continue
        assert cls.name in listed, f"{cls.name} is missing from the report"
        entry = listed[cls.name]
        own = [
            s.name
            for s in cls.node.body
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name.startswith("test")
        ]
        shown = set(entry.moved) | {left.test for left in entry.kept}
        assert set(own) <= shown, (cls.name, set(own) - shown)
        assert shown or entry.inherits_from or entry.notes, f"{cls.name}: listed with nothing said"
    assert report.left_count + report.reused_count + report.moved_count >= sum(
        len(c.tests) for c in analysis.classes if c.model is ExecutionModel.PER_TEST_SPAWN
    )


@pytest.mark.parametrize("name,left", [("test_refusals.py", 6)])
def test_a_file_nothing_moves_in_still_counts_its_tests_as_left(
    run_cli, tmp_path: Path, name: str, left: int
) -> None:
    (tmp_path / name).write_bytes((FIXTURES / name).read_bytes())
    status, out, err = run_cli("migrate", "--check", "--no-reused-workers", name)
    assert status == 0
    assert out.startswith(f"{name}: 0 tests moved, {left} left\n")
    assert "reused" not in out
    assert f"would migrate 0 of 1 file (0 tests moved, {left} left in place)" in err


def test_tests_from_helper_classes_and_external_bases_are_accounted_for() -> None:
    result = _source_result(
        PER_TEST_HEADER
        + """
    from suite.rpc import RpcAgentTests

    class CollectivesMixin:
        def test_all_reduce(self):
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size)

    class SpawnHelper(MultiProcessTestCase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

    class GlooCollectivesTest(CollectivesMixin, SpawnHelper):
        pass

    class TensorPipeRpcTest(RpcAgentTests, SpawnHelper):
        pass
    """
    )
    classes = {cls.name: cls for cls in result.report.classes}
    gloo = classes["GlooCollectivesTest"]
    assert [(left.test, left.code) for left in gloo.kept] == [("test_all_reduce", "not-analysed")]
    assert "inherited from CollectivesMixin" in gloo.kept[0].text
    assert result.report.left_count == 1
    assert classes["TensorPipeRpcTest"].notes == [
        "defines no tests of its own; any it runs come from RpcAgentTests, defined elsewhere (not analysed)"
    ]
    assert classes["SpawnHelper"].notes == ["defines no tests"]


def test_a_dtensor_only_file_is_analysed_not_screened_out(monkeypatch) -> None:
    """The pre-screen keeps files whose per-test classes come from a base (no _spawn_processes);
    its PG tests move, the one without a PG stays."""
    import distlint.codemods.migrate_continuous as migrate

    calls = []
    real = migrate._analyze
    monkeypatch.setattr(migrate, "_analyze", lambda *a: calls.append(a) or real(*a))
    case = FIXTURES / "test_dtensor_redistribute.py"
    assert b"_spawn_processes" not in case.read_bytes()
    report = migrate_source(case.read_bytes(), _relative(case)).report
    assert (report.moved_count, report.left_count) == (4, 1)
    assert calls


# -- the migrated code is what it should be -----------------------------------------------


def _continuous_class_names(result: MigrationResult) -> dict[str, str]:
    """New class -> the class its tests came from (also their create_local_tensor_test_class twins)."""
    from distlint.codemods.verify import renamed_classes

    return renamed_classes(result)  # a class on reused workers keeps its name


@pytest.mark.parametrize("case", CHANGED, ids=lambda p: p.name)
def test_round_trip_with_the_pg_rules(case: Path) -> None:
    """`distlint check` on migrated code: no DL201/DL202 for moved tests, no DL203 at all."""
    result = _migrate(case)
    moved = {name for cls in result.report.classes for name in cls.moved}
    continuous = set(_continuous_class_names(result))
    # Linted where the file is: bases from other modules are read next to it, as migrate read them.
    before = lint_source(case.read_bytes(), _relative(case), Config(select=("DL2",)))
    after = lint_source(result.migrated, _relative(case), Config(select=("DL2",)))
    assert before.error is None and after.error is None
    assert any(f.code == "DL201" and "migratable" in f.message for f in before.findings)
    assert not [f for f in after.findings if f.code == "DL203"]
    for finding in after.findings:
        named = set(re.findall(r"`(\w+)`", finding.message))
        if finding.code == "DL201":
            assert not named & moved, finding
        if finding.code == "DL202":
            assert not named & continuous, finding
    lines = result.migrated.decode().splitlines()
    for cls in {c.continuous for c in result.report.classes if c.continuous}:
        # The new classes are continuous, so the rules see no per-test PG there.
        line = next(i for i, text in enumerate(lines, 1) if text.startswith(f"class {cls}("))
        assert not [f for f in after.findings if f.line == line]


COLLECTOR = textwrap.dedent("""
    import importlib.machinery, importlib.util, json, os, sys, unittest
    import torch.distributed as dist

    dist.is_nccl_available = lambda: True  # the NCCL fixture exits at import without NCCL; names only
    out = {}
    for index, path in enumerate(sys.argv[1:]):
        name = f"collected_{index}"
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # its sibling modules (common_*.py)
        loader = importlib.machinery.SourceFileLoader(name, path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
        sys.modules[name] = module
        loader.exec_module(module)
        ids = []

        def walk(suite):
            for test in suite:
                walk(test) if isinstance(test, unittest.TestSuite) else ids.append(test.id())

        walk(unittest.defaultTestLoader.loadTestsFromModule(module))
        out[path] = [test_id.split(".", 1)[1] for test_id in ids]
    print(json.dumps(out))
""")


def test_migrated_files_collect_the_same_tests(tmp_path: Path) -> None:
    """unittest collects the same multiset of test names (and, class names mapped back, the same ids)."""
    pytest.importorskip("torch")
    pytest.importorskip("expecttest")
    files: list[str] = []
    renamed: dict[str, dict[str, str]] = {}
    for case in CHANGED:
        files.append(str(case))
        for runtime in [r for r in RUNTIMES if case in changed_on(r)]:
            result = _migrate(case, runtime)
            target = tmp_path / runtime / case.name
            target.parent.mkdir(exist_ok=True)
            for sibling in FIXTURES.glob(
                "common_*.py"
            ):  # modules the fixtures import their bases from
                (target.parent / sibling.name).write_bytes(sibling.read_bytes())
            target.write_bytes(result.migrated)
            files.append(str(target))
            renamed[str(target)] = _continuous_class_names(result)
    completed = subprocess.run(
        [sys.executable, "-c", COLLECTOR, *files],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    collected = json.loads(completed.stdout.strip().splitlines()[-1])
    for case in CHANGED:
        original = collected[str(case)]
        assert original, f"{case.name}: nothing collected"
        for runtime in [r for r in RUNTIMES if case in changed_on(r)]:
            target = str(tmp_path / runtime / case.name)
            migrated = collected[target]
            names = Counter(i.rsplit(".", 1)[1] for i in migrated)
            assert names == Counter(i.rsplit(".", 1)[1] for i in original), (case.name, runtime)
            mapping = renamed[target]
            mapped = Counter(
                f"{mapping.get(c, c)}.{t}" for c, t in (i.rsplit(".", 1) for i in migrated)
            )
            # Migrating again: the original has continuous classes already; named alike on both sides.
            assert mapped == Counter(
                f"{mapping.get(c, c)}.{t}" for c, t in (i.rsplit(".", 1) for i in original)
            ), (case.name, runtime)
            assert any(i.split(".")[0] in mapping for i in migrated)  # tests really moved


# -- mechanics on small inputs --------------------------------------------------------------

PER_TEST_HEADER = """
    import torch
    import torch.distributed as dist
    from torch.testing._internal.common_distributed import MultiProcessTestCase
    from torch.testing._internal.common_utils import run_tests

"""


def test_whole_family_moves_and_empty_classes_go() -> None:
    """A subclass that only flips an attribute gets a counterpart; classes left empty are removed."""
    result = _source_result(
        PER_TEST_HEADER
        + """
    class AllReduceTest(MultiProcessTestCase):
        scale = 1

        def setUp(self):
            super(AllReduceTest, self).setUp()  # explicit super in setUp is fine: setUp goes away
            self._spawn_processes()

        @property
        def world_size(self):
            return 2

        def test_sum(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
            t = torch.ones(2) * self.scale
            dist.all_reduce(t)
            self.assertEqual(t, torch.full((2,), 2.0 * self.scale))
            dist.destroy_process_group()


    class ScaledAllReduceTest(AllReduceTest):
        scale = 3


    if __name__ == "__main__":
        run_tests()
    """
    )
    text = result.migrated.decode()
    assert "class AllReduceTest(" not in text and "class ScaledAllReduceTest(" not in text
    assert (
        "MultiProcessTestCase" not in text
        and "FileStore" not in text
        and "destroy_process_group" not in text
    )
    assert "class AllReduceTestContinuous(MultiProcContinuousTest):\n    scale = 1\n" in text
    assert "class ScaledAllReduceTestContinuous(AllReduceTestContinuous):\n    scale = 3\n" in text
    [base, sub] = result.report.classes
    assert (
        base.removed
        and sub.removed
        and base.moved == ["test_sum"]
        and sub.inherits_from == ["AllReduceTest"]
    )


def test_default_world_size_is_carried() -> None:
    """MultiProcessTestCase spawns DEFAULT_WORLD_SIZE (4) ranks when a class does not say."""
    result = _source_result(
        PER_TEST_HEADER
        + """
    class BarrierTest(MultiProcessTestCase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_barrier(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
            dist.barrier()
    """
    )
    text = result.migrated.decode()
    assert "    world_size = DEFAULT_WORLD_SIZE\n" in text
    assert re.search(
        r"^from torch\.testing\._internal\.common_distributed import .*DEFAULT_WORLD_SIZE",
        text,
        re.M,
    )


def test_existing_torch_continuous_import_gets_an_alias() -> None:
    result = _source_result(
        PER_TEST_HEADER.replace(
            "import MultiProcessTestCase", "import MultiProcContinuousTest, MultiProcessTestCase"
        )
        + """
    class Old(MultiProcContinuousTest):
        def test_nothing(self):
            pass


    class BarrierTest(MultiProcessTestCase):
        world_size = 2

        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_barrier(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
            dist.barrier()
    """
    )
    text = result.migrated.decode()
    assert (
        "from distlint.runtime import" in text
        and "MultiProcContinuousTest as DistlintMultiProcContinuousTest" in text
    )
    assert "class BarrierTestContinuous(DistlintMultiProcContinuousTest):" in text
    assert "class Old(MultiProcContinuousTest):" in text


LAUNCHER = "mypkg.testing.launch_tests"
BARRIER_TEST = """
    class BarrierTest(MultiProcessTestCase):
        world_size = 2

        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_barrier(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
            dist.barrier()
"""


def test_main_block_is_added_when_missing() -> None:
    result = _source_result(
        PER_TEST_HEADER.replace("from torch.testing._internal.common_utils import run_tests\n", "")
        + BARRIER_TEST
    )
    text = result.migrated.decode()
    assert text.rstrip().endswith('if __name__ == "__main__":\n    run_tests()')
    assert "from distlint.runtime import" in text and "run_tests" in text.split("class")[0]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_migrate_honours_the_configured_runners(runtime: str) -> None:
    """``[tool.distlint] runners``: migrate sees the suite's own runner as DL101-DL104 do."""
    config = Config(runners=(LAUNCHER,))
    source = textwrap.dedent(
        PER_TEST_HEADER.replace(
            "from torch.testing._internal.common_utils import run_tests\n",
            "from mypkg.testing import launch_tests\n",
        )
        + BARRIER_TEST
    )
    options = MigrateOptions(runtime=runtime)

    # No main block: the one added calls the configured runner, as DL101's fix would.
    result = migrate_source(source.encode(), "test_inline.py", config, options)
    assert result.migrated is not None
    text = result.migrated.decode()
    assert text.rstrip().endswith('if __name__ == "__main__":\n    launch_tests()'), text
    main_rules = Config(select=("DL101", "DL102", "DL104"), runners=(LAUNCHER,))
    assert not lint_source(result.migrated, "test_inline.py", main_rules).findings

    # The configured runner already runs the tests at import (DL104's case): a main block
    # calling another runner would run them twice, so none is added.
    at_import = source + "\nlaunch_tests()\n"
    result = migrate_source(at_import.encode(), "test_inline.py", config, options)
    assert result.migrated is not None and "BarrierTestContinuous" in result.migrated.decode()
    assert "__main__" not in result.migrated.decode()
    assert [
        f.code for f in lint_source(result.migrated, "test_inline.py", main_rules).findings
    ] == ["DL104"]


def test_files_without_per_test_classes_are_not_analysed(monkeypatch) -> None:
    import distlint.codemods.migrate_continuous as migrate

    def boom(*args, **kwargs):
        raise AssertionError("analysed a file the pre-screen rules out")

    monkeypatch.setattr(migrate, "_analyze", boom)
    result = migrate_source(
        b"import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        pass\n",
        "test_plain.py",
    )
    assert result.error is None and not result.changed and not result.report.classes


def test_invalid_output_is_never_returned(monkeypatch) -> None:
    import distlint.codemods.migrate_continuous as migrate

    def reject(source: bytes, path: str) -> None:
        raise ValueError("result does not compile: simulated (line 1)")

    monkeypatch.setattr(migrate, "verify_python", reject)
    case = FIXTURES / "test_gloo_init_pg.py"
    result = migrate_source(case.read_bytes(), _relative(case))
    assert result.migrated is None and not result.changed
    assert result.error == (
        f"{_relative(case)}: error: not migrated, distlint produced invalid code "
        "(result does not compile: simulated (line 1)); please report this"
    )


@pytest.mark.parametrize(
    "source, message",
    [
        (b"class T(:\n    pass\n", "test_bad.py: error: syntax error at 1:"),
        (
            b"# -*- coding: utf-8 -*-\nx = '\xff\xfe'\n",
            "test_bad.py: error: not valid utf-8: byte 0xff",
        ),
        (b"x = 1\x00\n", "test_bad.py: error: binary file"),
    ],
)
def test_bad_input_is_one_line_error(source: bytes, message: str) -> None:
    result = migrate_source(source, "test_bad.py")
    assert (
        result.error is not None and result.error.startswith(message) and "\n" not in result.error
    )
    assert result.migrated is None


# -- the command line -----------------------------------------------------------------------

#: The files the command-line tests work on (two that change, one that does not).
CLI_FILES = ("test_gloo_helper_pg.py", "test_gloo_init_pg.py", "test_needs_own_process.py")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in CLI_FILES:
        (tmp_path / name).write_bytes((FIXTURES / name).read_bytes())
    return tmp_path


def _expected(name: str) -> str:
    return (FIXTURES / (name + ".migrated")).read_text()


def test_default_prints_diff_and_report_and_writes_nothing(run_cli, project: Path) -> None:
    before = {p.name: p.read_bytes() for p in project.glob("*.py")}
    status, out, err = run_cli("migrate", "test_gloo_init_pg.py")
    assert status == 0
    assert out.startswith("--- a/test_gloo_init_pg.py\n+++ b/test_gloo_init_pg.py\n")
    assert "+class DistCollectivesTestContinuous(MultiProcContinuousTest):" in out
    assert (
        "test_gloo_init_pg.py: 3 tests moved, 3 on reused workers, 0 left\n"
        "  DistCollectivesTest -> DistCollectivesTestContinuous"
    ) in out
    assert err.strip() == (
        "distlint migrate: would migrate 1 of 1 file "
        "(3 tests moved, 3 on reused workers, 0 left in place)"
    )
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == before


def test_diff_prints_only_the_diff(run_cli, project: Path) -> None:
    status, out, _ = run_cli(
        "migrate", "--diff", "test_gloo_helper_pg.py", "test_needs_own_process.py"
    )
    assert status == 0
    assert (
        out.startswith("--- a/test_gloo_helper_pg.py\n")
        and "tests moved" not in out
        and "left " not in out
    )
    assert "test_needs_own_process.py" not in out


def test_check_exits_1_when_a_file_would_change(run_cli, project: Path) -> None:
    before = (project / "test_gloo_helper_pg.py").read_bytes()
    status, out, err = run_cli("migrate", "--check", ".")
    assert status == 1
    assert "would migrate 2 of 3 files" in err and "--- a/" not in out
    assert "ProcessGroupGlooTest -> ProcessGroupGlooTestContinuous" in out  # the report
    assert (project / "test_gloo_helper_pg.py").read_bytes() == before
    status, _, _ = run_cli("migrate", "--check", "test_needs_own_process.py")
    assert status == 0


def test_write_applies_keeps_the_mode_and_a_second_run_is_clean(run_cli, project: Path) -> None:
    target = project / "test_gloo_helper_pg.py"
    target.chmod(0o640)
    status, out, err = run_cli("migrate", "--write", ".")
    assert status == 0, err
    assert target.read_text() == _expected("test_gloo_helper_pg.py")
    assert (project / "test_gloo_init_pg.py").read_text() == _expected("test_gloo_init_pg.py")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert "migrated 2 of 3 files" in err and "--- a/" not in out
    assert not [p for p in project.iterdir() if "distlint-tmp" in p.name]
    status, _, err = run_cli("migrate", "--check", ".")
    assert status == 0 and "would migrate 0 of 3 files" in err


def test_bad_files_are_reported_skipped_and_never_touched(run_cli, project: Path) -> None:
    bad = {
        "test_syntax.py": b"class Broken(:\n    pass\n",
        "test_bytes.py": b"# -*- coding: utf-8 -*-\nname = '\xff'\n",
    }
    for name, content in bad.items():
        (project / name).write_bytes(content)
    readonly = project / "test_gloo_init_pg.py"
    original = readonly.read_bytes()
    readonly.chmod(0o444)
    status, _, err = run_cli("migrate", "--write", ".")
    assert status == 1
    errors = sorted(line for line in err.splitlines() if ": error: " in line)
    assert len(errors) == 3, err
    assert errors[0].startswith("test_bytes.py: error: not valid utf-8: byte 0xff")
    assert errors[1] == "test_gloo_init_pg.py: error: file is read-only, not modified"
    assert errors[2].startswith("test_syntax.py: error: syntax error at 1:")
    for name, content in bad.items():
        assert (project / name).read_bytes() == content
    assert readonly.read_bytes() == original and stat.S_IMODE(readonly.stat().st_mode) == 0o444
    # The other file was still migrated.
    assert (project / "test_gloo_helper_pg.py").read_text() == _expected("test_gloo_helper_pg.py")


def test_usage_errors(run_cli, project: Path) -> None:
    status, _, err = run_cli("migrate", "does_not_exist.py")
    assert status == 2 and "does_not_exist.py: error: no such file or directory" in err
    with pytest.raises(SystemExit) as exit_info:
        run_cli("migrate", "--class-suffix", "not-an-identifier", ".")
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        run_cli("migrate", "--write", "--check", ".")


def test_helper_base_without_tests_stays_and_shares_through_a_mixin() -> None:
    """A base that never ran tests (others may import it) stays; what the moved tests need goes to a mixin."""
    result = _source_result("""
    import torch
    import torch.distributed as c10d
    from torch.testing._internal.common_distributed import MultiProcessTestCase
    from torch.testing._internal.common_utils import run_tests


    class GlooTestBase(MultiProcessTestCase):
        threads = 2

        def setUp(self):
            super().setUp()
            self._spawn_processes()

        @property
        def world_size(self):
            return 2

        def opts(self):
            opts = c10d.ProcessGroupGloo._Options()
            opts._threads = self.threads
            return opts

        def _create_pg(self, store):
            return c10d.ProcessGroupGloo(store, self.rank, self.world_size, self.opts())


    class AllReduceTest(GlooTestBase):
        def test_sum(self):
            store = c10d.FileStore(self.file_name, self.world_size)
            pg = self._create_pg(store)
            t = torch.ones(2)
            pg.allreduce([t]).wait()
            self.assertEqual(t, torch.full((2,), 2.0))
    """)
    text = result.migrated.decode()
    assert "class GlooTestBase(GlooTestBaseMixin, MultiProcessTestCase):" in text
    assert (
        "    @classmethod\n    def opts(cls):\n" in text and "opts._threads = cls.threads" in text
    )
    assert "class AllReduceTestContinuous(GlooTestBaseMixin, MultiProcContinuousTest):" in text
    assert "        pg = self.pg\n" in text and "class AllReduceTest(" not in text
    assert (
        "def _create_pg(self, store):" in text.split("class AllReduceTestContinuous")[0]
    )  # stays with the base


def test_pg_created_by_a_context_manager_is_left_in_place() -> None:
    result = _source_result("""
    import torch
    import torch.distributed as dist
    from torch.testing._internal.common_distributed import MultiProcessTestCase, _dynamo_dist_per_rank_init


    class DynamoTest(MultiProcessTestCase):
        world_size = 2

        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def test_compiled_allreduce(self):
            with _dynamo_dist_per_rank_init(self.rank, self.world_size, backend="gloo"):
                t = torch.ones(2)
                dist.all_reduce(t)
                self.assertEqual(t, torch.full((2,), 2.0))
    """)
    assert not result.changed
    [entry] = result.report.classes[0].kept
    # The analysis says it (DL201 too): the context manager sets up more than the PG.
    assert entry.code == "unresolved-pg" and "with _dynamo_dist_per_rank_init" in entry.text


SPAWNING_CLASS = """
class {name}({base}):
    world_size = 2
{extra}
    def setUp(self):
        super().setUp()
        self._spawn_processes()

    def test_all_reduce(self):
        store = dist.FileStore(self.file_name, self.world_size)
        dist.init_process_group({args})
        t = torch.ones(2)
        dist.all_reduce(t)
        self.assertEqual(t, torch.full((2,), 2.0))
"""
GLOO_ARGS = '"gloo", store=store, rank=self.rank, world_size=self.world_size'


@pytest.mark.parametrize(
    "body, code",
    [
        # The backend is not a literal.
        (
            SPAWNING_CLASS.format(
                name="T",
                base="MultiProcessTestCase",
                extra="    backend = 'gloo'\n",
                args="self.backend, store=store, rank=self.rank, world_size=self.world_size",
            ),
            "unknown-backend",
        ),
        # The shared timeout reads per-test state.
        (
            SPAWNING_CLASS.format(
                name="T",
                base="MultiProcessTestCase",
                extra="    seconds = 30\n",
                args=GLOO_ARGS + ", timeout=timedelta(seconds=self.seconds)",
            ),
            "class-timeout",
        ),
        # A member the continuous class uses for itself.
        (
            SPAWNING_CLASS.format(
                name="T", base="MultiProcessTestCase", extra="    pg = None\n", args=GLOO_ARGS
            ).replace("t = torch.ones(2)", "t = torch.ones(2) if self.pg is None else 0"),
            "reserved-member",
        ),
        # A subclass overrides the test.
        (
            SPAWNING_CLASS.format(name="T", base="MultiProcessTestCase", extra="", args=GLOO_ARGS)
            + "\n\nclass U(T):\n    def test_all_reduce(self):\n        pass\n",
            "overridden",
        ),
        # PG environment set after the ranks were spawned (they never see it), or not a literal.
        (
            SPAWNING_CLASS.format(
                name="T", base="MultiProcessTestCase", extra="", args=GLOO_ARGS
            ).replace(
                "self._spawn_processes()",
                'self._spawn_processes()\n        os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"',
            ),
            "class-environment",
        ),
        (
            SPAWNING_CLASS.format(
                name="T", base="MultiProcessTestCase", extra="", args=GLOO_ARGS
            ).replace(
                "super().setUp()",
                'super().setUp()\n        os.environ["TORCH_NCCL_BLOCKING_WAIT"] = str(1)',
            ),
            "class-environment",
        ),
    ],
)
def test_refusals_on_small_inputs(body: str, code: str) -> None:
    source = (
        PER_TEST_HEADER
        + "    import os\n    from datetime import timedelta\n"
        + textwrap.indent(body, "    ")
    )
    result = _source_result(source)
    assert result.error is None and not result.changed, result.diff()
    codes = {entry.code for cls in result.report.classes for entry in cls.kept}
    assert code in codes, result.report.text()


def test_subclass_with_another_backend_keeps_its_own_tests() -> None:
    base = SPAWNING_CLASS.format(name="T", base="MultiProcessTestCase", extra="", args=GLOO_ARGS)
    sub = SPAWNING_CLASS.format(
        name="U", base="T", extra="", args=GLOO_ARGS.replace('"gloo"', '"mpi"')
    )
    sub = sub.replace("test_all_reduce", "test_all_reduce_mpi").replace(
        "    def setUp(self):\n        super().setUp()\n        self._spawn_processes()\n", ""
    )
    result = _source_result(PER_TEST_HEADER + textwrap.indent(base + "\n" + sub, "    "))
    report = {cls.name: cls for cls in result.report.classes}
    assert report["T"].moved == ["test_all_reduce"]
    assert [(e.test, e.code) for e in report["U"].kept] == [
        ("test_all_reduce_mpi", "base-mismatch")
    ]
    assert report["U"].continuous == "UContinuous"  # it still gets the tests it inherits
    assert "class UContinuous(TContinuous):" in result.migrated.decode()


# -- check and migrate agree ------------------------------------------------------------------

#: Refusals only the rewrite has (what the code around the test would need, not the test itself):
#: DL201 may call such a test migratable while ``distlint migrate`` leaves it, with this code.
MECHANICAL_CODES = frozenset(
    {
        "name-taken",
        "factory-call",
        "class-body",
        "rewrite",
        "shared-helper",
        "options-variant",
        "reserved-member",
        "overridden",
        "base-mismatch",
        "opts-with-default-options",
    }
)
AGREEMENT_CASES = sorted([*(ROOT / "fixtures" / "pg").rglob("test_*.py"), *CASES])


@pytest.mark.parametrize("case", AGREEMENT_CASES, ids=lambda p: _relative(p))
def test_dl201_migratable_is_what_migrate_moves(case: Path) -> None:
    from distlint.config import load_config

    config = load_config(case)
    dl201_only = dataclasses.replace(
        config, select=Config.from_table({"select": ["DL201"]}, "test").select
    )
    findings = lint_source(case.read_bytes(), _relative(case), dl201_only).findings
    migratable = {
        re.match(r"`(\w+)`", f.message).group(1)
        for f in findings
        if f.code == "DL201" and "; migratable:" in f.message
    }
    result = migrate_source(case.read_bytes(), _relative(case), config=config)
    assert result.error is None
    moved = {name for entry in result.report.classes for name in entry.moved}
    mechanical = {
        left.test
        for entry in result.report.classes
        for left in entry.kept
        if left.code in MECHANICAL_CODES
    }
    assert moved <= migratable, (
        f"migrate moved tests DL201 calls per-test-only: {sorted(moved - migratable)}"
    )
    assert migratable - moved <= mechanical, (
        f"DL201 says migratable but migrate refuses for a test/class reason: {sorted(migratable - moved - mechanical)}"
    )
    # The second target, from the same analysis: DL201's "on reused workers" is what migrate
    # runs there (a test DL201 calls migratable and the rewrite refuses runs there too).
    on_reused = {
        re.match(r"`(\w+)`", f.message).group(1)
        for f in findings
        if f.code == "DL201" and "keep its own PG, on reused workers" in f.message
    }
    reused = {entry.test for cls in result.report.classes for entry in cls.reused}
    assert on_reused <= reused, f"DL201 says reused workers, migrate does not: {on_reused - reused}"
    assert reused & set(_dl201_tests(findings)) <= on_reused | (migratable & mechanical), sorted(
        reused - on_reused
    )


def _dl201_tests(findings: list) -> set[str]:
    """The tests DL201 reports."""
    return {re.match(r"`(\w+)`", f.message).group(1) for f in findings if f.code == "DL201"}


def test_a_base_from_an_unseen_module_is_not_handed_to_a_continuous_class(tmp_path: Path) -> None:
    """A base distlint cannot read may define tests: its class stays (the multiset must not grow)."""
    source = EXTERNAL_BASE_SOURCE.encode()
    path = tmp_path / "test_unseen.py"
    dl201 = Config(select=("DL201",))
    result = migrate_source(source, str(path), options=SHARED_PG_ONLY)
    assert not result.changed
    [left] = result.report.classes[0].kept
    assert left.code == "external-base" and "shared_checks.SharedChecks" in left.text
    [finding] = lint_source(source, str(path), dl201).findings  # check says what migrate does
    assert "keep it per-test: a base from another module" in finding.message
    # A module that defines a test: the class stays, in both.
    (tmp_path / "shared_checks.py").write_text(
        "class SharedChecks:\n    def test_shared(self):\n        pass\n"
    )
    assert not migrate_source(source, str(path), options=SHARED_PG_ONLY).changed
    [finding] = lint_source(source, str(path), dl201).findings
    assert "(SharedChecks defines 1 test: test_shared)" in finding.message
    # Once the module defines no tests, the base goes with the moved test, and DL201 says so.
    (tmp_path / "shared_checks.py").write_text(
        "class SharedChecks:\n    def _helper(self):\n        pass\n"
    )
    moved = migrate_source(source, str(path), options=SHARED_PG_ONLY)
    assert moved.changed and moved.report.classes[0].moved == ["test_sum"]
    assert (
        "class AllReduceTestContinuous(SharedChecks, MultiProcContinuousTest)"
        in moved.migrated.decode()
    )
    [finding] = lint_source(source, str(path), dl201).findings
    assert "; migratable:" in finding.message


def test_torch_runtime_concrete_classes_derive_from_torchs_class_directly() -> None:
    """torch's MultiProcContinuousTest keeps its workers on the class: a concrete continuous class
    must never derive from another one (pytorch/pytorch#191745); the tests come from a mixin."""
    result = _migrate(FIXTURES / "test_gloo_subclass_env.py", "torch")
    module = cst.parse_module(result.migrated)
    classes = {
        s.name.value: [code for code in (cst.Module([]).code_for_node(b.value) for b in s.bases)]
        for s in module.body
        if isinstance(s, cst.ClassDef)
    }
    concrete = {name for name, bases in classes.items() if "MultiProcContinuousTest" in bases}
    assert concrete == {
        "GlooCollectivesTestContinuous",
        "GlooCollectivesWideTestContinuous",
        "GlooCollectivesFlagTestContinuous",
    }
    for name in concrete:
        assert classes[name] == ["GlooCollectivesTestContinuousTests", "MultiProcContinuousTest"]
    assert classes["GlooCollectivesTestContinuousTests"] == []
    # The environment the per-test setUp set before spawning is set around torch's spawn.
    text = result.migrated.decode()
    assert 'environment = {"DISTLINT_FIXTURE_FLAG": "1"}' in text
    assert "unittest.mock.patch.dict(os.environ, environment)" in text


def test_explicit_super_of_the_class_becomes_zero_argument_super() -> None:
    """``super(Class, self)`` in a member that moves becomes ``super()``; one that names another
    class, or sits in a nested scope (no ``__class__`` there), keeps the class in place."""
    source = (
        PER_TEST_HEADER
        + """
    class Helpers:
        def _tensor(self):
            return torch.ones(2)

    class DistributedDataParallelTest(Helpers, MultiProcessTestCase):
        world_size = 2

        def setUp(self):
            super(DistributedDataParallelTest, self).setUp()
            self._spawn_processes()

        def _tensor(self):
            return super(DistributedDataParallelTest, self)._tensor() * 2

        def test_all_reduce(self):
            dist.init_process_group("gloo", rank=self.rank, world_size=self.world_size)
            t = self._tensor()
            dist.all_reduce(t)
    """
    )
    result = _source_result(source)
    assert result.report.classes[0].moved == ["test_all_reduce"]
    migrated = result.migrated.decode()
    assert (
        "return super()._tensor() * 2" in migrated
        and "super(DistributedDataParallelTest" not in migrated
    )
    for blocked in (
        "super(Helpers, self)._tensor()",
        "[super(DistributedDataParallelTest, self) for _ in (1,)][0]._tensor()",
    ):
        refused = _source_result(
            source.replace("super(DistributedDataParallelTest, self)._tensor()", blocked)
        )
        assert not refused.changed
        assert {left.code for left in refused.report.classes[0].kept} == {"class-body"}


OPTIONS_VARIANTS = (
    PER_TEST_HEADER
    + """
    class GlooTest(MultiProcessTestCase):
        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def opts(self, threads=2, timeout=5.0):
            opts = dist.ProcessGroupGloo._Options()
            opts._threads = threads
            opts._timeout = timeout
            return opts

        def _pg(self, opts):
            store = dist.FileStore(self.file_name, self.world_size)
            return dist.ProcessGroupGloo(store, self.rank, self.world_size, opts)

        def test_default(self):
            pg = self._pg(self.opts())
            pg.barrier().wait()

        def test_eight(self):
            pg = self._pg(self.opts(threads=8))
            pg.barrier().wait()

        def test_eight_again(self):
            pg = self._pg(self.opts(threads=8))
            pg.allreduce([torch.ones(1)]).wait()

        def test_four_threads(self):
            pg = self._pg(self.opts(timeout=1.0, threads=4))
            pg.barrier().wait()

        def test_computed(self):
            pg = self._pg(self.opts(threads=self.rank + 1))
            pg.barrier().wait()
"""
)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_options_variants_get_a_continuous_class_each(runtime: str) -> None:
    """Tests sharing one literal options value share a class (a pool) whose opts() passes it;
    options that are not literal keyword values stay, with their reason."""
    result = _source_result(OPTIONS_VARIANTS, runtime)
    [entry] = result.report.classes
    assert entry.continuous_classes() == [
        "GlooTestContinuous",
        "GlooTestThreads8Continuous",
        "GlooTestThreads4Timeout1_0Continuous",
    ]
    assert entry.moved == ["test_default", "test_eight", "test_eight_again", "test_four_threads"]
    assert entry.moved_to == {
        "test_eight": "GlooTestThreads8Continuous",
        "test_eight_again": "GlooTestThreads8Continuous",
        "test_four_threads": "GlooTestThreads4Timeout1_0Continuous",
    }
    assert [(left.test, left.code) for left in entry.kept] == [("test_computed", "custom-options")]
    module = cst.parse_module(result.migrated.decode())
    classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    tests = {
        name: sorted(
            f.name.value
            for f in cls.body.body
            if isinstance(f, cst.FunctionDef) and f.name.value.startswith("test")
        )
        for name, cls in classes.items()
    }
    assert tests["GlooTestThreads8Continuous"] == ["test_eight", "test_eight_again"]
    assert tests["GlooTestThreads4Timeout1_0Continuous"] == ["test_four_threads"]
    assert tests["GlooTestContinuous"] == ["test_default"]
    # The variant's opts() builds the shared PG with its own value, through the class's opts().
    opts = next(
        f
        for f in classes["GlooTestThreads4Timeout1_0Continuous"].body.body
        if isinstance(f, cst.FunctionDef) and f.name.value == "opts"
    )
    assert (
        cst.Module([]).code_for_node(opts.params).replace(" ", "")
        == "cls,threads=4,timeout=1.0,**kwargs"
    )
    assert "super().opts(threads=threads, timeout=timeout, **kwargs)" in cst.Module(
        []
    ).code_for_node(opts)
    # Every variant class derives from the shared mixin and the continuous base directly.
    for name in entry.continuous_classes():
        assert [cst.Module([]).code_for_node(b.value) for b in classes[name].bases] == [
            "GlooTestMixin",
            "MultiProcContinuousTest",
        ]


def test_options_variants_of_a_subclass_follow_its_base() -> None:
    """A subclass inheriting a variant test gets a variant class deriving from its base's."""
    source = (
        OPTIONS_VARIANTS
        + """
    class GlooLazyTest(GlooTest):
        lazy = True
"""
    )
    result = _source_result(source)
    report = {entry.name: entry for entry in result.report.classes}
    assert report["GlooLazyTest"].continuous_classes() == [
        "GlooLazyTestContinuous",
        "GlooLazyTestThreads8Continuous",
        "GlooLazyTestThreads4Timeout1_0Continuous",
    ]
    text = result.migrated.decode()
    assert "class GlooLazyTestThreads8Continuous(GlooTestThreads8Continuous):" in text
    # A variant test defined in the subclass itself stays (mechanical: no class of its own there).
    own = (
        source
        + """
        def test_lazy(self):
            pg = self._pg(self.opts())
            pg.barrier().wait()

        def test_sixteen(self):
            pg = self._pg(self.opts(threads=16))
            pg.barrier().wait()
"""
    )
    report = {entry.name: entry for entry in _source_result(own).report.classes}
    assert report["GlooLazyTest"].moved == ["test_lazy"]
    assert [(left.test, left.code) for left in report["GlooLazyTest"].kept] == [
        ("test_sixteen", "options-variant")
    ]


def test_no_pg_names_the_helper_of_another_module_a_test_calls(tmp_path: Path) -> None:
    """A test whose PG is made in a helper of a base from another module (test_c10d_common's
    AbstractCommTest) stays, and the report says where the PG it cannot see may come from."""
    (tmp_path / "common_comm.py").write_text(
        textwrap.dedent("""
        import torch.distributed as dist


        class AbstractCommTest:
            def _test_sequence_num(self, backend):
                dist.init_process_group(backend, rank=self.rank, world_size=self.world_size,
                                        init_method=f"file://{self.file_name}")
                dist.destroy_process_group()
    """)
    )
    source = textwrap.dedent("""
        import common_comm
        import torch.distributed as dist
        from torch.testing._internal.common_distributed import MultiProcessTestCase
        from torch.testing._internal.common_utils import run_tests


        class CommTest(common_comm.AbstractCommTest, MultiProcessTestCase):
            def setUp(self):
                super().setUp()
                self._spawn_processes()

            def test_sequence_num_gloo(self):
                self._test_sequence_num("gloo")

            def test_rank_is_set(self):
                self.assertGreaterEqual(self.rank, 0)


        if __name__ == "__main__":
            run_tests()
    """).encode()
    result = migrate_source(source, str(tmp_path / "test_comm.py"), options=SHARED_PG_ONLY)
    (report,) = result.report.classes
    left = {entry.test: entry for entry in report.kept}
    assert {name: entry.code for name, entry in left.items()} == {
        "test_sequence_num_gloo": "no-pg",
        "test_rank_is_set": "no-pg",
    }
    assert left["test_sequence_num_gloo"].text == (
        "creates no process group distlint can see; it calls _test_sequence_num of "
        "common_comm.AbstractCommTest, from another module, which distlint does not analyse"
    )
    assert left["test_rank_is_set"].text == "creates no process group, nothing to share"


# -- migrating again ------------------------------------------------------------------------

AGAIN = FIXTURES / "test_gloo_migrate_again.py"
NEW_TEST = """
    @requires_gloo()
    def test_reduce_later(self):
        store = c10d.FileStore(self.file_name, self.world_size)
        pg = self._create_pg(store, self.opts())
        tensor = self._rank_tensor()
        pg.allreduce([tensor]).wait()
        self.assertEqual(tensor, torch.tensor([self._expected_sum()]))
"""


def test_migrating_after_adding_a_test_moves_just_that_test() -> None:
    # Migrated without reused workers, so the per-test class can still take the new test (a class
    # on reused workers runs it as written, and DL201 has nothing to say about it).
    first = migrate_source(AGAIN.read_bytes(), "test_again.py", options=SHARED_PG_ONLY)
    migrated = first.migrated.decode()
    anchor = "    @requires_gloo()\n    def test_shutdown_after_allreduce(self):"
    assert anchor in migrated
    source = migrated.replace(anchor, NEW_TEST.lstrip("\n") + "\n" + anchor, 1).encode()
    result = migrate_source(source, "test_again.py", options=SHARED_PG_ONLY)
    assert result.error is None and result.changed
    [entry] = [c for c in result.report.classes if c.moved]
    assert entry.name == "ProcessGroupGlooTest" and entry.moved == ["test_reduce_later"]
    assert entry.existing == ["ProcessGroupGlooTestContinuous"]
    assert "-> into the existing ProcessGroupGlooTestContinuous" in result.report.text()
    changed = [line for line in result.diff().splitlines() if line[:1] in "+-"]
    # Only the test moves: out of the per-test class, into the end of the existing class.
    assert sum(1 for line in changed if line.startswith("+    def ")) == 1, result.diff()
    assert "class " not in "".join(changed[2:]), result.diff()
    assert not migrate_source(result.migrated, "test_again.py", options=SHARED_PG_ONLY).changed


def test_dl202_counts_what_migrating_again_moves() -> None:
    """DL202's "N can move" per class is what migrate moves from it (also into existing classes)."""
    findings = lint_source(AGAIN.read_bytes(), _relative(AGAIN), Config(select=("DL202",))).findings
    counts = {}
    for finding in findings:
        name = re.match(r"`(\w+)`", finding.message).group(1)
        movable = re.search(r"(?:all )?(\d+) can move", finding.message)
        counts[name] = int(movable.group(1)) if movable else 0
    moved = {c.name: len(c.moved) for c in _migrate(AGAIN).report.classes}
    assert counts == moved and sum(moved.values()) == 5


def test_an_existing_class_that_cannot_take_the_tests_says_why_in_check_and_migrate() -> None:
    refusals = FIXTURES / "test_refusals.py"
    [left] = [c for c in _migrate(refusals).report.classes if c.name == "BarrierTest"][0].kept
    assert left.code == "existing-continuous"
    assert (
        "`BarrierTestContinuous` runs at world size 4, the tests of BarrierTest at 2" in left.text
    )
    findings = lint_source(refusals.read_bytes(), _relative(refusals), Config(select=("DL202",)))
    [barrier] = [f for f in findings.findings if f.message.startswith("`BarrierTest`")]
    assert "none can move" in barrier.message
    assert barrier.message.endswith(
        "it can run as written on reused workers: run `distlint migrate`"
    )


@pytest.mark.parametrize(
    "existing, why",
    [
        (
            "class TContinuous(unittest.TestCase):\n    pass\n",
            "`TContinuous` exists and is not a continuous class",
        ),
        (
            (
                "class TContinuous(MultiProcContinuousTest):\n    world_size = 2\n\n"
                "    @classmethod\n    def backend_str(cls):\n        return 'nccl'\n"
            ),
            '`TContinuous` runs backend "nccl", the tests of T "gloo"',
        ),
        (
            "class TContinuous(Helper, MultiProcContinuousTest):\n    pass\n",
            "`TContinuous` derives from `Helper`, which T does not",
        ),
    ],
)
def test_an_existing_class_that_cannot_take_the_tests_keeps_them(existing: str, why: str) -> None:
    base = SPAWNING_CLASS.format(name="T", base="MultiProcessTestCase", extra="", args=GLOO_ARGS)
    source = (
        textwrap.dedent(PER_TEST_HEADER)
        + "import unittest\nfrom torch.testing._internal.common_distributed import MultiProcContinuousTest\n\n\n"
        + "class Helper:\n    pass\n\n"
        + base
        + "\n\n"
        + existing
    )
    result = migrate_source(source.encode(), "test_inline.py", options=SHARED_PG_ONLY)
    assert result.error is None and not result.changed, result.diff()
    [left] = result.report.classes[0].kept
    assert (left.code, why in left.text) == ("existing-continuous", True), left.text
    [finding] = lint_source(source.encode(), "test_inline.py", Config(select=("DL201",))).findings
    assert "keep its own PG, on reused workers" in finding.message and why in finding.message
    # With another --class-suffix the name is free: the tests move to a new class.
    other = migrate_source(
        source.encode(),
        "test_inline.py",
        options=MigrateOptions(class_suffix="Shared", reused_workers=False),
    )
    assert other.report.classes[0].moved == ["test_all_reduce"]


def _with_shared_class(base_import: str, base: str, world_size: int) -> str:
    """A per-test class ``T`` and a continuous ``TShared`` (what ``--class-suffix Shared`` names)."""
    return (
        textwrap.dedent(PER_TEST_HEADER)
        + f"{base_import}\n\n"
        + SPAWNING_CLASS.format(name="T", base="MultiProcessTestCase", extra="", args=GLOO_ARGS)
        + f"\n\nclass TShared({base}):\n    world_size = {world_size}\n\n"
        + "    @classmethod\n    def backend_str(cls):\n        return 'gloo'\n"
    )


def test_another_class_suffix_asks_the_same_question() -> None:
    source = _with_shared_class(
        "from torch.testing._internal.common_distributed import MultiProcContinuousTest",
        "MultiProcContinuousTest",
        4,
    )
    result = migrate_source(
        source.encode(),
        "test_inline.py",
        options=MigrateOptions(class_suffix="Shared", reused_workers=False),
    )
    assert not result.changed
    [left] = result.report.classes[0].kept
    assert left.code == "name-taken" and "`TShared` runs at world size 4" in left.text


def test_another_class_suffix_knows_the_configured_continuous_bases() -> None:
    """The plan asks the analysis' question with the analysis' continuous bases: a class of
    another --class-suffix deriving from a configured continuous base can take the tests."""
    source = _with_shared_class("from our_testing import OurContinuousBase", "OurContinuousBase", 2)
    result = migrate_source(
        source.encode(),
        "test_inline.py",
        Config(continuous_bases=("OurContinuousBase",)),
        MigrateOptions(class_suffix="Shared", reused_workers=False),
    )
    report = result.report.classes[0]
    assert [left.text for left in report.kept if left.code == "name-taken"] == []


RNG_SOURCE = """\
import torch
from torch.distributed.tensor import _random as random
from torch.distributed.tensor import distribute_tensor, Shard
from torch.testing._internal.common_utils import run_tests
from torch.testing._internal.distributed._tensor.common_dtensor import DTensorTestBase, with_comms


class RandomOpsTest(DTensorTestBase):
    @property
    def world_size(self) -> int:
        return 2

    @with_comms
    def test_a_seeds_the_tracker(self):
        random.manual_seed(1234, self.build_device_mesh())

    @with_comms
    def test_b_tracker_starts_unset(self):
        self.assertIsNone(random._rng_tracker)

    @with_comms
    def test_c_shards(self):
        dtensor = distribute_tensor(torch.arange(4.0), self.build_device_mesh(), [Shard(0)])
        self.assertEqual(dtensor.to_local().numel(), 2)


if __name__ == "__main__":
    run_tests()
"""


@pytest.mark.parametrize(
    "runtime, left",
    [
        # The distlint runtime sets DTensor's RNG tracker back to None before every test.
        ("distlint", []),
        # torch's DTensorContinuousTestBase never does: test_b would see test_a's tracker.
        ("torch", ["test_a_seeds_the_tracker", "test_b_tracker_starts_unset"]),
    ],
)
def test_tests_that_read_or_seed_dtensors_rng_tracker_stay_for_torchs_classes(runtime, left):
    result = migrate_source(
        RNG_SOURCE.encode(), "test_random_ops.py", options=MigrateOptions(runtime=runtime)
    )
    assert result.error is None and result.changed
    (report,) = result.report.classes
    assert sorted(item.test for item in report.kept) == left
    assert report.moved == [
        t
        for t in ("test_a_seeds_the_tracker", "test_b_tracker_starts_unset", "test_c_shards")
        if t not in left
    ]
    text = result.report.text()
    for test in left:
        assert f"left   {test}  [rng-state] reads or seeds DTensor's RNG tracker" in text, text


def test_a_factory_call_that_cannot_follow_the_tests_keeps_them_and_dl201_calls_them_mechanical() -> (
    None
):
    """``create_local_tensor_test_class(X, base_class=...)`` chooses its own base: the continuous
    class cannot get the same call, so X's tests stay (``factory-call``, the codemod's refusal:
    the analysis, and so DL201, sees nothing wrong with the tests themselves)."""
    source = textwrap.dedent(
        """\
        import torch.distributed as dist
        from torch.testing._internal.common_utils import run_tests
        from torch.testing._internal.distributed._tensor.common_dtensor import (
            DTensorTestBase,
            LocalDTensorTestBase,
            create_local_tensor_test_class,
            with_comms,
        )


        class MeshTest(DTensorTestBase):
            @with_comms
            def test_barrier(self):
                dist.barrier()


        MeshTestWithLocalTensor = create_local_tensor_test_class(
            MeshTest, base_class=LocalDTensorTestBase
        )

        if __name__ == "__main__":
            run_tests()
        """
    ).encode()
    result = migrate_source(source, "test_factory.py", options=SHARED_PG_ONLY)
    [left] = result.report.classes[0].kept
    assert (left.test, left.code) == ("test_barrier", "factory-call")
    assert "chooses its own base_class" in left.text and "(line 17)" in left.text
    assert not result.changed
    [finding] = lint_source(source, "test_factory.py", Config(select=("DL201",))).findings
    assert "; migratable:" in finding.message  # the rewrite's refusal, not the test's


def test_a_test_whose_pg_helper_lives_outside_the_migrated_classes_stays() -> None:
    """A same-file mixin's helper that creates the PG and does test work: the continuous class
    would inherit it unrewritten and create a second default PG over the shared one, so the
    test stays (it was moved once, calling the mixin's ``init_process_group`` as it was)."""
    result = _source_result(
        """
        import torch
        import torch.distributed as dist
        from torch.testing._internal.common_distributed import MultiProcessTestCase
        from torch.testing._internal.common_utils import run_tests


        class ModelHelpers:
            def _init_with_model(self):
                store = dist.FileStore(self.file_name, self.world_size)
                dist.init_process_group(
                    "gloo", store=store, rank=self.rank, world_size=self.world_size
                )
                self.model = torch.nn.Linear(2, 2)


        class MixinTest(ModelHelpers, MultiProcessTestCase):
            world_size = 2

            def setUp(self):
                super().setUp()
                self._spawn_processes()

            def test_forward(self):
                self._init_with_model()
                out = self.model(torch.ones(2))
                dist.all_reduce(out)
                self.assertEqual(out.shape, torch.Size([2]))


        if __name__ == "__main__":
            run_tests()
        """
    )
    assert result.error is None and not result.changed, result.diff()
    ((test, code),) = [(e.test, e.code) for cls in result.report.classes for e in cls.kept]
    assert (test, code) == ("test_forward", "rewrite"), result.report.text()
    assert "_init_with_model()" in result.report.text()


#: A per-test gloo class around ``{members}`` (methods, written at class level).
CLASS_AROUND = """
    import torch
    import torch.distributed as dist
    from torch.testing._internal.common_distributed import MultiProcessTestCase
    from torch.testing._internal.common_utils import run_tests


    class T(MultiProcessTestCase):
        world_size = 2

        def setUp(self):
            super().setUp()
            self._spawn_processes()

        def _init(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=self.world_size)
{members}
"""


@pytest.mark.parametrize(
    "members, code",
    [
        # The condition of a trailing "teardown" asserts: dropping it would drop the check.
        (
            """
        def _verify(self, t):
            self.assertEqual(t, torch.full((2,), 2.0))
            return True

        def test_verified_teardown(self):
            self._init()
            t = torch.ones(2)
            dist.all_reduce(t)
            if self._verify(t): dist.destroy_process_group()
""",
            "destroys-pg-early",
        ),
        # ``x = self._helper()`` where the helper returns what it reduced, not the PG.
        (
            """
        def _allreduce_ones(self):
            self._init()
            t = torch.ones(2)
            dist.all_reduce(t)
            return t

        def test_helper_result(self):
            result = self._allreduce_ones()
            self.assertEqual(result, torch.full((2,), 2.0))
""",
            "rewrite",
        ),
        # The line creating the PG goes on to use it (and asserts on it).
        (
            """
        def _create_pg(self):
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank, world_size=2)
            return dist.group.WORLD

        def test_uses_the_line(self):
            self.assertEqual(self._create_pg().size(), 3)
            dist.barrier()
""",
            "rewrite",
        ),
        # A helper's PG creation is what the test expects to fail.
        (
            """
        def _bad_init(self):
            dist.init_process_group("gloo", init_method="bogus://x", rank=self.rank,
                                    world_size=self.world_size)

        def test_bad_init_in_a_helper(self):
            with self.assertRaises(RuntimeError):
                self._bad_init()
""",
            "expects-failure",
        ),
        # A helper's collective is what the test expects to fail.
        (
            """
        def _mismatched(self):
            dist.all_reduce(torch.ones(self.rank + 1))

        def test_mismatch_in_a_helper(self):
            self._init()
            with self.assertRaisesRegex(RuntimeError, "Connection closed by peer"):
                self._mismatched()
""",
            "expects-failure",
        ),
        # The test hands destroy_process_group to addCleanup: it would destroy the shared PG.
        (
            """
        def test_cleanup_destroys(self):
            self._init()
            self.addCleanup(dist.destroy_process_group)
            dist.barrier()
""",
            "destroys-pg-early",
        ),
    ],
)
def test_a_test_whose_pg_use_the_rewrite_would_change_keeps_its_own_pg(
    members: str, code: str
) -> None:
    """Shapes where moving the test would drop or change what it tests: each keeps its own PG
    (on reused workers) with its reason, and nothing of it changes."""
    result = _source_result(
        CLASS_AROUND.format(members=textwrap.indent(textwrap.dedent(members), " " * 8)),
        reused_workers=True,
    )
    assert result.error is None, result.error
    (report,) = result.report.classes
    assert report.moved == [], result.report.text()
    ((test, got),) = [(entry.test, entry.code) for entry in report.reused]
    assert got == code, result.report.text()
    migrated = result.migrated.decode()
    # The test's own lines, as written, in the class it stays in.
    written = f"def {test}(self):" + textwrap.dedent(members).split(f"def {test}(self):")[1]
    assert textwrap.indent(written, "    ") in migrated, result.diff()


def test_a_subclass_whose_continuous_name_is_taken_says_so_for_its_base() -> None:
    """The base's tests stay because the subclass cannot move (its continuous class's name is
    taken): the reason names the subclass's own refusal (this once raised UnboundLocalError)."""
    result = _source_result(
        PER_TEST_HEADER
        + textwrap.indent(
            SPAWNING_CLASS.format(
                name="BaseTest", base="MultiProcessTestCase", extra="", args=GLOO_ARGS
            )
            + "\n\nclass ChildTest(BaseTest):\n    def test_child(self):\n        pass\n"
            + "\n\ndef ChildTestContinuous():\n    pass\n",
            "    ",
        )
    )
    assert result.error is None, result.error
    kept = {e.test: (e.code, e.text) for cls in result.report.classes for e in cls.kept}
    assert kept["test_all_reduce"][0] == "subclass"
    assert "ChildTest inherits it and cannot be migrated: the name" in kept["test_all_reduce"][1]
    assert "ChildTestContinuous" in kept["test_all_reduce"][1]


def test_a_same_file_destroy_pg_that_asserts_first_is_test_work() -> None:
    """``destroy_pg`` is torch's teardown-only name, but a same-file one that gathers and
    asserts before destroying does test work: the call stays and only its destroy goes (the
    whole call was once dropped as teardown, and with it the assertion)."""
    members = """
        def destroy_pg(self):
            out = [None] * self.world_size
            dist.all_gather_object(out, self.rank)
            self.assertEqual(out, list(range(self.world_size)))
            dist.destroy_process_group()

        def test_checked_at_teardown(self):
            self._init()
            t = torch.ones(2)
            dist.all_reduce(t)
            self.destroy_pg()
"""
    result = _source_result(
        CLASS_AROUND.format(members=textwrap.indent(textwrap.dedent(members), " " * 8))
    )
    assert result.error is None, result.error
    assert result.report.classes[0].moved == ["test_checked_at_teardown"]
    migrated = result.migrated.decode()
    assert "        dist.all_reduce(t)\n        self.destroy_pg()\n" in migrated, result.diff()
    assert "self.assertEqual(out, list(range(self.world_size)))" in migrated
    assert "dist.destroy_process_group()" not in migrated


@pytest.mark.parametrize(
    "preamble, local",
    [
        ("secs = 30", "secs"),  # a local variable of the test
        ("from datetime import timedelta as td", "td"),  # imported inside the test
    ],
)
def test_a_timeout_built_from_a_tests_own_names_does_not_become_a_class_attribute(
    preamble: str, local: str
) -> None:
    """``timeout = timedelta(seconds=secs)`` at class level would raise NameError when the module
    is imported (the class body cannot see the test's names): the class keeps its tests."""
    timeout = "td(seconds=30)" if local == "td" else "timedelta(seconds=secs)"
    members = f"""
        def test_barrier_waits(self):
            {preamble}
            store = dist.FileStore(self.file_name, self.world_size)
            dist.init_process_group("gloo", store=store, rank=self.rank,
                                    world_size=self.world_size, timeout={timeout})
            dist.barrier()
"""
    source = CLASS_AROUND.format(members=textwrap.indent(textwrap.dedent(members), " " * 8))
    result = _source_result("    from datetime import timedelta\n" + source, reused_workers=True)
    assert result.error is None, result.error
    (report,) = result.report.classes
    assert report.moved == [], result.report.text()
    ((entry),) = report.reused
    assert entry.code == "class-timeout", result.report.text()
    assert f"reads {local}, not bound in the module" in entry.text


def test_invalid_edits_are_reported_at_their_line_of_the_whole_file(monkeypatch) -> None:
    """Only what the edits made is compiled; an error there is worded as the whole file says it."""
    import libcst as cst

    from distlint.codemods.emit import Emitter

    case = FIXTURES / "test_gloo_init_pg.py"
    good = migrate_source(case.read_bytes(), _relative(case)).migrated
    assert good is not None
    module = Emitter.module

    def broken(self):
        edited = module(self)
        return edited.with_changes(body=[*edited.body, cst.parse_statement("return 1\n")])

    monkeypatch.setattr(Emitter, "module", broken)
    import distlint.codemods.migrate_continuous as migrate

    compiled: list[bytes | str] = []
    verify = migrate.verify_python
    monkeypatch.setattr(
        migrate,
        "verify_python",
        lambda source, path: compiled.append(source) or verify(source, path),
    )
    result = migrate_source(case.read_bytes(), _relative(case))
    assert result.migrated is None
    # The edits alone first (a few statements), then the whole file for the error's line.
    assert isinstance(compiled[0], str) and len(compiled[0]) < len(good) < len(compiled[1])
    line = good.count(b"\n") + 1  # the statement added after the file's last line
    assert result.error == (
        f"{_relative(case)}: error: not migrated, distlint produced invalid code "
        f"(result does not compile: 'return' outside function (line {line})); please report this"
    )

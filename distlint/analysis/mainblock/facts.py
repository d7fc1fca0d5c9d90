"""Facts about a test module's ``if __name__ == "__main__":`` block (DL101-DL105).

:func:`analyze_main_block` works on the libcst module and is what every DL1xx finding comes
from (rules call :func:`main_block_facts` so the analysis runs once per file). Its cheap,
conservative twin on the stdlib ``ast`` tree is :mod:`distlint.screens.main_block`.

Name resolution uses an import table built from the module's own import statements
(:class:`~distlint.analysis.names.import_table.ImportTable`, which says why it is not the
module-wide name resolver) instead of libcst's metadata. The rules only need to know which
callable a call names, at module level and in a handful of functions, so the table is
enough: ``import a.b as c``, ``from a import b as c``, star imports, simple aliases
(``rt = common_utils.run_tests``) and function-local imports are followed. What a call
is *written* as also counts (``run_tests()`` is a runner even when its import is
unusual), which errs towards "this block runs the tests", i.e. towards fewer false
DL102 reports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Union

import libcst as cst

from distlint.analysis.mainblock.code_scan import (
    BodyScan,
    binds_names,
    directly_raises,
    iter_statements,
    scan_code,
)
from distlint.analysis.mainblock.continuous_launch import (
    continuous_base_names,
    continuous_classes,
    rank_entry_class,
    spawned_function,
)
from distlint.analysis.mainblock.generated_tests import (
    generating_assignment,
    generating_call,
    is_class_factory,
    loop_label,
)
from distlint.analysis.mainblock.guards import is_any_main_guard, is_main_guard
from distlint.analysis.names import dotted_name, last_component, names_match_any
from distlint.analysis.names.import_table import ImportTable, record_import
from distlint.screens.runners import GUARD_RUNNERS, RAISERS, all_runners, convention_runners
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_RUNNER_MODULE

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.source import FileContext


#: A statement of a module's (or a block's) body: the kinds with leading lines, which are every
#: libcst ``BaseStatement``.
TopStatement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]
_TEST_BASE = re.compile(r"(TestCase|TestBase|Test|Tests)$")


def file_label(path: str) -> str:
    """The file name shown in messages (``python test_x.py``)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1] or "test_x.py"


# -- test definitions --------------------------------------------------------------------------


def is_test_class(node: cst.ClassDef, known_test_classes: set[str]) -> bool:
    """Derived from a TestCase-ish base (or a test class of this module), defining
    ``test_*`` methods, or named ``Test*`` the way pytest collects it.

    pytest refuses a ``Test*`` class with an ``__init__``, so a ``class TestModel(nn.Module)``
    helper (its own ``__init__``, or a ``*Module`` base's) is no test: benchmark scripts and
    model zoos named ``test_*.py`` are full of them.
    """
    bases = [dotted_name(base.value) for base in node.bases]
    if any(
        written and (_TEST_BASE.search(last_component(written)) or written in known_test_classes)
        for written in bases
    ):
        return True
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    methods = [s.name.value for s in body if isinstance(s, cst.FunctionDef)]
    if any(name.startswith("test_") for name in methods):
        return True
    has_init = "__init__" in methods or any(
        written and last_component(written).endswith("Module") for written in bases
    )
    return node.name.value.startswith("Test") and not has_init


@dataclass(frozen=True)
class TestDefinition:
    """A module-level test class or ``test_*`` function, or module-level code that generates
    tests (:mod:`distlint.analysis.mainblock.generated_tests`)."""

    name: str
    node: cst.CSTNode
    #: Index in ``module.body`` of the top-level statement that holds it.
    index: int
    #: ``instantiate_device_type_tests(...)``, ``globals().update(...)``, a loop making
    #: classes...: generates tests instead of writing them.
    generator: bool = False


# -- the facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunnerCall:
    """A call that runs the tests, and how: ``chain`` is e.g. ``("main", "run_tests")``."""

    call: cst.Call
    chain: tuple[str, ...]
    #: The continuous class whose ranks the call launches (``X.run_rank``), if that is how
    #: it runs the tests.
    launches: str | None = None

    @property
    def described(self) -> str:
        written = dotted_name(self.call) or "call"
        if len(self.chain) <= 1:
            return f"`{written}()`"
        return f"`{written}()` (which calls `{self.chain[-1]}`)"


@dataclass(frozen=True)
class MainGuard:
    node: cst.If
    index: int
    #: The first call in the block that runs the tests, if any.
    runner: RunnerCall | None
    #: The block raises ("not meant to be run directly").
    raises: bool
    #: ``if __name__ == "__main__" and CONDITION:``: the block runs only when CONDITION holds.
    conditional: bool = False


@dataclass(frozen=True)
class ImportTimeRun:
    """A runner called at module level outside the guard (DL104)."""

    #: The top-level statement (index into ``module.body``) that runs it at import.
    index: int
    statement: TopStatement
    runner: RunnerCall
    #: Whether the statement can be moved under the guard: it binds no module name.
    movable: bool


@dataclass
class MainBlockFacts:
    module: cst.Module
    imports: ImportTable
    guards: list[MainGuard] = field(default_factory=list)
    tests: list[TestDefinition] = field(default_factory=list)
    import_time_runs: list[ImportTimeRun] = field(default_factory=list)
    #: The convention-runner module the file already uses, for fixes.
    runner_module_in_use: str | None = None
    _uses_convention_runner: Callable[[], bool] | None = field(default=None, repr=False)

    @cached_property
    def nested_guards(self) -> list[cst.If]:
        """``if __name__ == "__main__":`` nested inside another statement (a ``def``, an
        ``if``, a ``try``...): not a main block. Computed on demand (only DL101 asks);
        walks statements only, never expressions, so it stays cheap on big files."""
        top = {id(guard.node) for guard in self.guards}
        return [
            s
            for s in iter_statements(self.module.body)
            if id(s) not in top and is_any_main_guard(s)
        ]

    @cached_property
    def uses_convention_runner(self) -> bool:
        """The module imports (or refers to) a convention runner (computed on demand:
        it may walk the whole module, and only DL101 needs it)."""
        return bool(self._uses_convention_runner and self._uses_convention_runner())

    @property
    def has_tests(self) -> bool:
        """The module defines or generates tests (a helper or a script does neither)."""
        return bool(self.tests)

    @property
    def running_guard(self) -> MainGuard | None:
        """The first guard that runs the tests: code after it never runs under ``python file.py``."""
        return next((g for g in self.guards if g.runner is not None), None)

    def tests_after(self, guard: MainGuard) -> list[TestDefinition]:
        return [t for t in self.tests if t.index > guard.index]


class _Analysis:
    def __init__(
        self, module: cst.Module, config_runners: Sequence[str], continuous_bases: Sequence[str]
    ) -> None:
        self.module = module
        self.runners = all_runners(config_runners)
        self.guard_runners = (*self.runners, *GUARD_RUNNERS)
        self.convention = convention_runners(config_runners)
        self.continuous_base_names = continuous_base_names(continuous_bases)
        #: Classes of this module whose ``run_rank`` runs their tests (set by :meth:`run`).
        self.continuous: frozenset[str] = frozenset()
        self.table = ImportTable()
        self.functions: dict[str, list[cst.FunctionDef]] = {}
        self._local_tables: dict[int, ImportTable] = {}
        self._module_scans: list[tuple[int, TopStatement, BodyScan]] = []

    # -- following calls into this module's functions --------------------------------------
    def _function_table(self, function: cst.FunctionDef) -> ImportTable:
        table = self._local_tables.get(id(function))
        if table is None:
            table = ImportTable(self.table)
            for node in scan_code(function.body.body).imports:
                record_import(table, node)
            self._local_tables[id(function)] = table
        return table

    def _callees(self, call: cst.Call, table: ImportTable) -> list[cst.FunctionDef]:
        """Functions of this module a bare-name call may enter (not shadowed by an import)."""
        if not isinstance(call.func, cst.Name):
            return []
        name = call.func.value
        bound = table.lookup(name)
        if bound is not None and name not in bound:
            return []
        return self.functions.get(name, [])

    def find_runner(
        self,
        calls: Sequence[cst.Call],
        table: ImportTable,
        at_import: bool = False,
        seen: set[int] | None = None,
    ) -> RunnerCall | None:
        """The first of ``calls`` that runs the tests, following this module's functions.

        ``at_import``: the calls run at import, where ``__name__`` is not ``"__main__"``,
        so a guard inside a followed function does not run."""
        seen = set() if seen is None else seen
        for call in calls:
            candidates = table.candidates(call.func)
            if names_match_any(candidates, self.runners if at_import else self.guard_runners):
                return RunnerCall(call, (dotted_name(call) or "",))
            if not at_import:
                launch = self._launch(call, candidates, table, seen)
                if launch is not None:
                    return launch
            for function in self._callees(call, table):
                if id(function) in seen:
                    continue
                seen.add(id(function))
                calls_inside = scan_code(
                    function.body.body, stop_at=is_any_main_guard if at_import else None
                ).calls
                inner = self.find_runner(
                    calls_inside, self._function_table(function), at_import, seen
                )
                if inner is not None:
                    return RunnerCall(call, (function.name.value, *inner.chain), inner.launches)
        return None

    def _launch(
        self, call: cst.Call, candidates: frozenset[str], table: ImportTable, seen: set[int]
    ) -> RunnerCall | None:
        """A main-block call that runs a continuous class's ranks (``X.run_rank(...)``,
        ``mp.spawn(X.run_rank, ...)``) or spawns a function of this module that runs tests.

        Only in a main block: at import, a launch is DL104's business, which it is not.
        """

        def local(name: str) -> bool:
            bound = table.lookup(name)
            return bound is None or name in bound

        written = dotted_name(call) or ""
        entry = rank_entry_class(call.func, self.continuous, local)
        if entry is not None:
            return RunnerCall(call, (written,), entry)
        target = spawned_function(call, candidates)
        if target is None:
            return None
        entry = rank_entry_class(target, self.continuous, local)
        if entry is not None:
            return RunnerCall(call, (written, f"{entry}.run_rank"), entry)
        if isinstance(target, cst.Name):  # mp.spawn(worker, ...): follow worker like a call
            inner = self.find_runner([cst.Call(target)], table, False, seen)
            if inner is not None:
                return RunnerCall(call, (written, *inner.chain), inner.launches)
        return None

    def raises(
        self,
        block: cst.BaseSuite,
        calls: Sequence[cst.Call],
        table: ImportTable,
        seen: set[int] | None = None,
    ) -> bool:
        """Whether running ``block`` raises on its straight path (or calls a raiser)."""
        if directly_raises(block):
            return True
        seen = set() if seen is None else seen
        for call in calls:
            if names_match_any(table.candidates(call.func), RAISERS):
                return True
            for function in self._callees(call, table):
                if id(function) not in seen:
                    seen.add(id(function))
                    if self.raises(
                        function.body,
                        scan_code(function.body.body).calls,
                        self._function_table(function),
                        seen,
                    ):
                        return True
        return False

    # -- the module ------------------------------------------------------------------------
    def run(self) -> MainBlockFacts:
        module_scans = self._module_scans
        guard_nodes: list[tuple[int, cst.If]] = []
        for index, statement in enumerate(self.module.body):
            if is_any_main_guard(statement):
                guard_nodes.append((index, statement))
            else:
                module_scans.append(
                    (index, statement, scan_code([statement], stop_at=is_any_main_guard))
                )
        for _, _, scan in module_scans:
            for node in scan.imports:
                record_import(self.table, node)
            definitions: list[cst.FunctionDef | cst.ClassDef] = [*scan.functions, *scan.classes]
            for definition in definitions:
                self.table.add_local(definition.name.value)
            for function in scan.functions:
                self.functions.setdefault(function.name.value, []).append(function)
        for _, _, scan in module_scans:
            for name, value in scan.aliases:
                self.table.add_alias(name, value)
        self.continuous = continuous_classes(
            (cls for _, _, scan in module_scans for cls in scan.classes),
            self.table.resolve,
            self.continuous_base_names,
        )

        facts = MainBlockFacts(self.module, self.table)
        for index, guard in guard_nodes:
            table = ImportTable(self.table)
            scan = scan_code(guard.body.body)
            for imported in scan.imports:
                record_import(table, imported)
            facts.guards.append(
                MainGuard(
                    guard,
                    index,
                    self.find_runner(scan.calls, table),
                    self.raises(guard.body, scan.calls, table),
                    conditional=not is_main_guard(guard),
                )
            )
        known_classes: set[str] = set()
        for index, scanned, scan in module_scans:
            self._collect_tests(index, scan, known_classes, facts.tests)
            runner = self.find_runner(scan.calls, self.table, at_import=True)
            if runner is not None:
                facts.import_time_runs.append(
                    ImportTimeRun(index, scanned, runner, not binds_names(scanned))
                )
        facts.runner_module_in_use = self._runner_module_in_use()
        facts._uses_convention_runner = self._uses_convention_runner
        return facts

    def _collect_tests(
        self, index: int, scan: BodyScan, known: set[str], out: list[TestDefinition]
    ) -> None:
        defined: set[int] = set()
        for node in scan.classes:
            if is_test_class(node, known):
                known.add(node.name.value)
                defined.add(id(node))
                out.append(TestDefinition(node.name.value, node, index))
        for function in scan.functions:
            if function.name.value.startswith("test_"):
                out.append(TestDefinition(function.name.value, function, index))
        # A loop that makes classes generates tests (one entry for the loop, not one per
        # statement in it); a loop whose classes are all test classes was counted above.
        inside_loops: set[int] = set()
        for loop in scan.loops:
            if id(loop) in inside_loops:
                continue
            inner = scan_code([loop.body])
            if any(id(c) not in defined for c in inner.classes) or any(
                map(is_class_factory, inner.calls)
            ):
                inside_loops.update(map(id, (*inner.calls, *inner.assigns, *inner.loops)))
                out.append(TestDefinition(loop_label(loop), loop, index, generator=True))
        generated: list[tuple[str | None, cst.CSTNode]] = [
            (generating_call(call), call) for call in scan.calls if id(call) not in inside_loops
        ]
        generated += [
            (generating_assignment(node), node)
            for node in scan.assigns
            if id(node) not in inside_loops
        ]
        out.extend(
            TestDefinition(how, node, index, generator=True)
            for how, node in generated
            if how is not None
        )
        out.sort(key=lambda t: t.index)

    def _uses_convention_runner(self) -> bool:
        """An import binds a convention runner, or module-level code or a module-level
        function calls one through its module (``cu.run_tests()``).

        Method bodies are not searched: a runner is not called from a test method, and
        walking every expression of a big file would cost as much as parsing it.
        """
        for name, targets in self.table.bindings.items():
            if names_match_any({name, *targets}, self.convention) and name not in self.functions:
                return True
        places = [(scan.calls, self.table) for _, _, scan in self._module_scans]
        places += [
            (scan_code(f.body.body).calls, self._function_table(f))
            for functions in self.functions.values()
            for f in functions
        ]
        for calls, table in places:
            for call in calls:
                if isinstance(call.func, cst.Name) and call.func.value in self.functions:
                    continue  # a local function that happens to be called run_tests
                if names_match_any(table.candidates(call.func), self.convention):
                    return True
        return False

    def _runner_module_in_use(self) -> str | None:
        used = self.table.module_names()
        for module in (DISTLINT_RUNTIME, TORCH_RUNNER_MODULE):
            if any(name == module or name.startswith(module + ".") for name in used):
                return module
        return None


def analyze_main_block(
    module: cst.Module,
    config_runners: Sequence[str] = ("run_tests",),
    continuous_bases: Sequence[str] = (),
) -> MainBlockFacts:
    """The main-block facts of ``module`` (no metadata needed: any libcst module works).

    ``continuous_bases``: the ``continuous-bases`` config (torch's continuous bases always count).
    """
    return _Analysis(module, config_runners, continuous_bases).run()


def main_block_facts(context: FileContext) -> MainBlockFacts:
    """:func:`analyze_main_block` for the linted file, computed once for all DL1xx rules."""
    runners, bases = context.config.runners, context.config.continuous_bases
    return context.fact(
        ("mainblock", runners, bases), lambda ctx: analyze_main_block(ctx.module, runners, bases)
    )


def main_block_required(facts: MainBlockFacts, config: Config) -> bool:
    """Where DL101 and DL102 apply: the module defines or generates tests and belongs to the
    ``run_tests`` convention under ``require-main`` ("auto": it imports or calls a convention
    runner; "always": every module with tests; "never": nowhere). A script without tests (a
    benchmark launcher, an installation check) never needs a main block that runs tests."""
    if config.require_main == "never" or not facts.has_tests:
        return False
    return config.require_main == "always" or facts.uses_convention_runner

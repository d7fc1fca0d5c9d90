"""Facts about a test module's ``if __name__ == "__main__":`` block (DL101-DL105).

Two views of the same facts:

* :func:`analyze_main_block` works on the libcst module and is what every DL1xx finding
  comes from (rules call :func:`main_block_facts` so the analysis runs once per file).
* :func:`screen_shape` works on the stdlib ``ast`` tree the linter's pre-screen already
  has; it is *conservative*: the rules' ``may_report`` only says "cannot report" when
  the libcst analysis provably agrees (see the soundness notes on :class:`ScreenShape`).

Name resolution uses an import table built from the module's own import statements
(:class:`ImportTable`) instead of libcst's metadata. Measured file by file over 54 real
test-sized modules (``benchmarks/mainblock_names.py``, BENCHMARKS.md "Main-block rules cost"),
relative to the libcst parse itself: this whole analysis costs 0.21x, ``ScopeProvider``
2.65x, ``QualifiedNameProvider`` 5.4x. The rules only need to know which
callable a call names, at module level and in a handful of functions, so the table is
enough: ``import a.b as c``, ``from a import b as c``, star imports, simple aliases
(``rt = common_utils.run_tests``) and function-local imports are followed. What a call
is *written* as also counts (``run_tests()`` is a runner even when its import is
unusual), which errs towards "this block runs the tests", i.e. towards fewer false
DL102 reports.
"""

from __future__ import annotations

import ast
import re
import weakref
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from distlint.analysis.code_scan import BodyScan, binds_names, directly_raises, iter_statements, scan_code
from distlint.analysis.continuous_launch import (continuous_base_names, continuous_classes, rank_entry_class,
                                                 spawned_function)
from distlint.analysis.generated_tests import (ast_node_may_generate, generating_assignment, generating_call,
                                               is_class_factory, loop_label)
from distlint.analysis.import_table import ImportTable, record_import
from distlint.analysis.names import dotted_name, names_match_any
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_RUNNER_MODULE

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.source import FileContext, PreScreen

#: Modules whose ``run_tests`` is always a runner, whatever the config says.
RUNNER_MODULES = (TORCH_RUNNER_MODULE, DISTLINT_RUNTIME)
#: Callables that run a module's tests without being the ``run_tests`` convention:
#: they make a main block valid (DL102) and are bad at import (DL104), but importing
#: them does not make a module "belong" to the convention (DL101): torchrec-style
#: suites import ``unittest`` and are run by pytest.
GENERIC_RUNNERS = ("unittest.main", "pytest.main")
#: Calls that mean "this file is not meant to be run directly" (PyTorch's helper raises).
RAISERS = ("raise_on_run_directly",)

#: Calls that run the tests when a main block makes them, but not at import (building a
#: runner object there runs nothing): ``unittest.TextTestRunner(...).run(suite)``.
GUARD_RUNNERS = ("unittest.TextTestRunner", "unittest.runner.TextTestRunner")

_TEST_BASE = re.compile(r"(TestCase|TestBase|Test|Tests)$")


def convention_runners(config_runners: Iterable[str]) -> Tuple[str, ...]:
    """Runners whose import makes a module part of the ``run_tests`` convention (DL101)."""
    return tuple(dict.fromkeys((*config_runners, *(f"{m}.run_tests" for m in RUNNER_MODULES))))


def all_runners(config_runners: Iterable[str]) -> Tuple[str, ...]:
    """Every callable that runs the tests (DL102, DL104)."""
    return (*convention_runners(config_runners), *GENERIC_RUNNERS)


def _last(dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1]


def file_label(path: str) -> str:
    """The file name shown in messages (``python test_x.py``)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1] or "test_x.py"


# -- guards --------------------------------------------------------------------------------

def is_main_guard(node: cst.CSTNode) -> bool:
    """``if __name__ == "__main__":`` in either order and any quotes (parentheses allowed)."""
    return isinstance(node, cst.If) and _is_main_comparison(node.test)


def is_conditional_main_guard(node: cst.CSTNode) -> bool:
    """``if __name__ == "__main__" and CONDITION:`` (any order of the ``and`` operands).

    A main block that runs only when ``CONDITION`` holds is still the file's main block:
    DL101 must not add a second one (the tests would then run twice).
    """
    return (isinstance(node, cst.If) and isinstance(node.test, cst.BooleanOperation)
            and any(_is_main_comparison(operand) for operand in _conjuncts(node.test)))


def is_any_main_guard(node: cst.CSTNode) -> bool:
    return is_main_guard(node) or is_conditional_main_guard(node)


def _conjuncts(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        yield from _conjuncts(node.left)
        yield from _conjuncts(node.right)
    else:
        yield node


def _is_main_comparison(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison):
        return False
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    left, right = test.left, test.comparisons[0].comparator
    return (_is_dunder_name(left) and _is_main_string(right)) or (_is_dunder_name(right) and _is_main_string(left))


def _is_dunder_name(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "__name__"


def _is_main_string(node: cst.BaseExpression) -> bool:
    # ConcatenatedString is accepted too: stdlib ast cannot tell it apart, and the
    # pre-screen must agree with this function.
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return node.evaluated_value == "__main__"
    return False


def is_ast_main_guard(node: ast.AST) -> bool:
    """The stdlib ``ast`` twin of :func:`is_main_guard` (must accept the same code)."""
    return isinstance(node, ast.If) and _is_ast_main_comparison(node.test)


def is_ast_any_main_guard(node: ast.AST) -> bool:
    """The stdlib ``ast`` twin of :func:`is_any_main_guard` (must accept the same code)."""
    return isinstance(node, ast.If) and any(map(_is_ast_main_comparison, _ast_conjuncts(node.test)))


def _ast_conjuncts(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for value in node.values:
            yield from _ast_conjuncts(value)
    else:
        yield node


def _is_ast_main_comparison(test: ast.AST) -> bool:
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    left, right = test.left, test.comparators[0]

    def dunder(n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == "__name__"

    def main(n: ast.AST) -> bool:
        return isinstance(n, ast.Constant) and n.value == "__main__"

    return (dunder(left) and main(right)) or (dunder(right) and main(left))


# -- test definitions --------------------------------------------------------------------------

def is_test_class(node: cst.ClassDef, known_test_classes: Set[str]) -> bool:
    """Derived from a TestCase-ish base (or a test class of this module), defining
    ``test_*`` methods, or named ``Test*`` the way pytest collects it.

    pytest refuses a ``Test*`` class with an ``__init__``, so a ``class TestModel(nn.Module)``
    helper (its own ``__init__``, or a ``*Module`` base's) is no test: benchmark scripts and
    model zoos named ``test_*.py`` are full of them.
    """
    bases = [dotted_name(base.value) for base in node.bases]
    if any(written and (_TEST_BASE.search(_last(written)) or written in known_test_classes) for written in bases):
        return True
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    methods = [s.name.value for s in body if isinstance(s, cst.FunctionDef)]
    if any(name.startswith("test_") for name in methods):
        return True
    has_init = "__init__" in methods or any(written and _last(written).endswith("Module") for written in bases)
    return node.name.value.startswith("Test") and not has_init


@dataclass(frozen=True)
class TestDefinition:
    """A module-level test class or ``test_*`` function, or module-level code that generates
    tests (:mod:`distlint.analysis.generated_tests`)."""

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
    chain: Tuple[str, ...]
    #: The continuous class whose ranks the call launches (``X.run_rank``), if that is how
    #: it runs the tests.
    launches: Optional[str] = None

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
    runner: Optional[RunnerCall]
    #: The block raises ("not meant to be run directly").
    raises: bool
    #: ``if __name__ == "__main__" and CONDITION:``: the block runs only when CONDITION holds.
    conditional: bool = False


@dataclass(frozen=True)
class ImportTimeRun:
    """A runner called at module level outside the guard (DL104)."""

    #: The top-level statement (index into ``module.body``) that runs it at import.
    index: int
    statement: cst.BaseStatement
    runner: RunnerCall
    #: Whether the statement can be moved under the guard: it binds no module name.
    movable: bool


@dataclass
class MainBlockFacts:
    module: cst.Module
    imports: ImportTable
    guards: List[MainGuard] = field(default_factory=list)
    tests: List[TestDefinition] = field(default_factory=list)
    import_time_runs: List[ImportTimeRun] = field(default_factory=list)
    #: The convention-runner module the file already uses, for fixes.
    runner_module_in_use: Optional[str] = None
    _uses_convention_runner: Optional[Callable[[], bool]] = field(default=None, repr=False)

    @cached_property
    def nested_guards(self) -> List[cst.If]:
        """``if __name__ == "__main__":`` nested inside another statement (a ``def``, an
        ``if``, a ``try``...): not a main block. Computed on demand (only DL101 asks);
        walks statements only, never expressions, so it stays cheap on big files."""
        top = {id(guard.node) for guard in self.guards}
        return [s for s in iter_statements(self.module.body) if id(s) not in top and is_any_main_guard(s)]

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
    def running_guard(self) -> Optional[MainGuard]:
        """The first guard that runs the tests: code after it never runs under ``python file.py``."""
        return next((g for g in self.guards if g.runner is not None), None)

    def tests_after(self, guard: MainGuard) -> List[TestDefinition]:
        return [t for t in self.tests if t.index > guard.index]


class _Analysis:
    def __init__(self, module: cst.Module, config_runners: Sequence[str], continuous_bases: Sequence[str]) -> None:
        self.module = module
        self.runners = all_runners(config_runners)
        self.guard_runners = (*self.runners, *GUARD_RUNNERS)
        self.convention = convention_runners(config_runners)
        self.continuous_base_names = continuous_base_names(continuous_bases)
        #: Classes of this module whose ``run_rank`` runs their tests (set by :meth:`run`).
        self.continuous: FrozenSet[str] = frozenset()
        self.table = ImportTable()
        self.functions: Dict[str, List[cst.FunctionDef]] = {}
        self._local_tables: Dict[int, ImportTable] = {}
        self._module_scans: List[Tuple[int, cst.BaseStatement, BodyScan]] = []

    # -- following calls into this module's functions --------------------------------------
    def _function_table(self, function: cst.FunctionDef) -> ImportTable:
        table = self._local_tables.get(id(function))
        if table is None:
            table = ImportTable(self.table)
            for node in scan_code(function.body.body).imports:
                record_import(table, node)
            self._local_tables[id(function)] = table
        return table

    def _callees(self, call: cst.Call, table: ImportTable) -> List[cst.FunctionDef]:
        """Functions of this module a bare-name call may enter (not shadowed by an import)."""
        if not isinstance(call.func, cst.Name):
            return []
        name = call.func.value
        bound = table.lookup(name)
        if bound is not None and name not in bound:
            return []
        return self.functions.get(name, [])

    def find_runner(self, calls: Sequence[cst.Call], table: ImportTable, at_import: bool = False,
                    seen: Optional[Set[int]] = None) -> Optional[RunnerCall]:
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
                calls_inside = scan_code(function.body.body, stop_at=is_any_main_guard if at_import else None).calls
                inner = self.find_runner(calls_inside, self._function_table(function), at_import, seen)
                if inner is not None:
                    return RunnerCall(call, (function.name.value, *inner.chain), inner.launches)
        return None

    def _launch(self, call: cst.Call, candidates: FrozenSet[str], table: ImportTable,
                seen: Set[int]) -> Optional[RunnerCall]:
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

    def raises(self, block: cst.BaseSuite, calls: Sequence[cst.Call], table: ImportTable,
               seen: Optional[Set[int]] = None) -> bool:
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
                    if self.raises(function.body, scan_code(function.body.body).calls,
                                   self._function_table(function), seen):
                        return True
        return False

    # -- the module ------------------------------------------------------------------------
    def run(self) -> MainBlockFacts:
        module_scans = self._module_scans
        guard_nodes: List[Tuple[int, cst.If]] = []
        for index, statement in enumerate(self.module.body):
            if is_any_main_guard(statement):
                guard_nodes.append((index, statement))
            else:
                module_scans.append((index, statement, scan_code([statement], stop_at=is_any_main_guard)))
        for _, _, scan in module_scans:
            for node in scan.imports:
                record_import(self.table, node)
            for definition in (*scan.functions, *scan.classes):
                self.table.add_local(definition.name.value)
            for function in scan.functions:
                self.functions.setdefault(function.name.value, []).append(function)
        for _, _, scan in module_scans:
            for name, value in scan.aliases:
                self.table.add_alias(name, value)
        self.continuous = continuous_classes((cls for _, _, scan in module_scans for cls in scan.classes),
                                             self.table.resolve, self.continuous_base_names)

        facts = MainBlockFacts(self.module, self.table)
        for index, node in guard_nodes:
            table = ImportTable(self.table)
            scan = scan_code(node.body.body)
            for imported in scan.imports:
                record_import(table, imported)
            facts.guards.append(MainGuard(node, index, self.find_runner(scan.calls, table),
                                          self.raises(node.body, scan.calls, table),
                                          conditional=not is_main_guard(node)))
        known_classes: Set[str] = set()
        for index, statement, scan in module_scans:
            self._collect_tests(index, scan, known_classes, facts.tests)
            runner = self.find_runner(scan.calls, self.table, at_import=True)
            if runner is not None:
                facts.import_time_runs.append(ImportTimeRun(index, statement, runner, not binds_names(statement)))
        facts.runner_module_in_use = self._runner_module_in_use()
        facts._uses_convention_runner = self._uses_convention_runner
        return facts

    def _collect_tests(self, index: int, scan: BodyScan, known: Set[str], out: List[TestDefinition]) -> None:
        defined: Set[int] = set()
        for node in scan.classes:
            if is_test_class(node, known):
                known.add(node.name.value)
                defined.add(id(node))
                out.append(TestDefinition(node.name.value, node, index))
        for node in scan.functions:
            if node.name.value.startswith("test_"):
                out.append(TestDefinition(node.name.value, node, index))
        # A loop that makes classes generates tests (one entry for the loop, not one per
        # statement in it); a loop whose classes are all test classes was counted above.
        inside_loops: Set[int] = set()
        for loop in scan.loops:
            if id(loop) in inside_loops:
                continue
            inner = scan_code([loop.body])
            if any(id(c) not in defined for c in inner.classes) or any(map(is_class_factory, inner.calls)):
                inside_loops.update(map(id, (*inner.calls, *inner.assigns, *inner.loops)))
                out.append(TestDefinition(loop_label(loop), loop, index, generator=True))
        generated = [(generating_call(call), call) for call in scan.calls if id(call) not in inside_loops]
        generated += [(generating_assignment(node), node) for node in scan.assigns if id(node) not in inside_loops]
        out.extend(TestDefinition(how, node, index, generator=True) for how, node in generated if how is not None)
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
        places += [(scan_code(f.body.body).calls, self._function_table(f))
                   for functions in self.functions.values() for f in functions]
        for calls, table in places:
            for call in calls:
                if isinstance(call.func, cst.Name) and call.func.value in self.functions:
                    continue  # a local function that happens to be called run_tests
                if names_match_any(table.candidates(call.func), self.convention):
                    return True
        return False

    def _runner_module_in_use(self) -> Optional[str]:
        used = self.table.module_names()
        for module in (DISTLINT_RUNTIME, TORCH_RUNNER_MODULE):
            if any(name == module or name.startswith(module + ".") for name in used):
                return module
        return None



def analyze_main_block(module: cst.Module, config_runners: Sequence[str] = ("run_tests",),
                       continuous_bases: Sequence[str] = ()) -> MainBlockFacts:
    """The main-block facts of ``module`` (no metadata needed: any libcst module works).

    ``continuous_bases``: the ``continuous-bases`` config (torch's continuous bases always count).
    """
    return _Analysis(module, config_runners, continuous_bases).run()


def main_block_facts(context: "FileContext") -> MainBlockFacts:
    """:func:`analyze_main_block` for the linted file, computed once for all DL1xx rules."""
    runners, bases = context.config.runners, context.config.continuous_bases
    return context.fact(("mainblock", runners, bases), lambda ctx: analyze_main_block(ctx.module, runners, bases))


def main_block_required(facts: MainBlockFacts, config: "Config") -> bool:
    """Where DL101 and DL102 apply: the module defines or generates tests and belongs to the
    ``run_tests`` convention under ``require-main`` ("auto": it imports or calls a convention
    runner; "always": every module with tests; "never": nowhere). A script without tests (a
    benchmark launcher, an installation check) never needs a main block that runs tests."""
    if config.require_main == "never" or not facts.has_tests:
        return False
    return config.require_main == "always" or facts.uses_convention_runner


# -- the pre-screen ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ScreenShape:
    """Cheap, conservative facts from the stdlib ``ast`` tree.

    Soundness (what the rules' ``may_report`` relies on), for the same source:
    ``has_guard`` equals "the libcst analysis finds a top-level guard";
    ``guard_surely_runs`` implies some libcst guard runs a runner or raises (it only
    looks at calls *written* as a runner directly in a guard body, and libcst counts
    what a call is written as); ``code_after_guard`` is implied by tests after the guard;
    ``may_have_tests`` and ``may_run_at_import`` are implied by their libcst facts.
    """

    has_guard: bool
    guard_surely_runs: bool
    code_after_guard: bool
    may_have_tests: bool
    may_run_at_import: bool


def _ast_dotted(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _ast_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _runner_aliases(tree: ast.Module, runner_last: Set[str]) -> Set[str]:
    """Every name that may be bound to a runner anywhere (imports ``as``, ``x = ...run_tests``)."""
    names = set(runner_last)
    assigns: List[Tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname and _last(alias.name) in names:
                    names.add(alias.asname)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _ast_dotted(node.value)
            if value:
                assigns.append((node.targets[0].id, value))
    changed = True
    while changed:  # chains of aliases: a = run_tests; b = a
        changed = False
        for target, value in assigns:
            if _last(value) in names and target not in names:
                names.add(target)
                changed = True
    return names


def _ast_calls_at_import(node: ast.AST) -> Iterator[ast.Call]:
    """Calls in ``node`` that may run when it runs (def/class/lambda bodies excluded)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, ast.Call):
            yield current
        stack.extend(ast.iter_child_nodes(current))


def screen_shape(tree: ast.Module, config_runners: Sequence[str]) -> ScreenShape:
    runners = all_runners(config_runners)
    runner_last = {_last(r) for r in runners}
    guards = [s for s in tree.body if is_ast_any_main_guard(s)]
    guard_surely_runs = False
    for guard in guards:
        for statement in guard.body:
            if isinstance(statement, ast.Raise):
                guard_surely_runs = True
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                written = _ast_dotted(statement.value.func)
                if written and names_match_any({written}, (*runners, *RAISERS)):
                    guard_surely_runs = True
    code_after_guard = bool(guards) and tree.body[-1] is not guards[0]
    may_have_tests = False
    defined: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            may_have_tests = True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
            may_have_tests = may_have_tests or node.name.startswith("test_")
        elif not may_have_tests and ast_node_may_generate(node):
            may_have_tests = True
    suspicious = _runner_aliases(tree, runner_last)
    may_run_at_import = False
    for statement in tree.body:
        if statement in guards:
            continue
        for call in _ast_calls_at_import(statement):
            written = _ast_dotted(call.func)
            if written and (_last(written) in suspicious or written in defined):
                may_run_at_import = True
                break
        if may_run_at_import:
            break
    return ScreenShape(bool(guards), guard_surely_runs, code_after_guard, may_have_tests, may_run_at_import)


_SHAPES: "weakref.WeakKeyDictionary[PreScreen, Dict[Tuple[str, ...], Optional[ScreenShape]]]" = \
    weakref.WeakKeyDictionary()


def screened_shape(screen: "PreScreen", config: "Config") -> Optional[ScreenShape]:
    """The file's :class:`ScreenShape` (memoised per screen); ``None`` when ``ast`` cannot parse it."""
    per_screen = _SHAPES.setdefault(screen, {})
    key = tuple(config.runners)
    if key not in per_screen:
        tree = screen.ast_module
        per_screen[key] = None if tree is None else screen_shape(tree, config.runners)
    return per_screen[key]


def may_belong_to_convention(screen: "PreScreen", config: "Config") -> bool:
    """Conservative: a convention runner's name occurs in the file (every import or use
    of one spells its last name component)."""
    return screen.has_any_word({_last(r) for r in convention_runners(config.runners)})


def may_require_main(screen: "PreScreen", config: "Config") -> bool:
    """The pre-screen twin of :func:`main_block_required` (conservative: ``True`` whenever
    the libcst analysis could say ``True``)."""
    if config.require_main == "never":
        return False
    shape = screened_shape(screen, config)
    if shape is None:
        return True
    if not shape.may_have_tests:
        return False
    return config.require_main == "always" or may_belong_to_convention(screen, config)

"""The main-block rules' pre-screen: cheap, conservative facts from the stdlib ``ast`` tree.

:func:`screen_shape` works on the ``ast`` tree the linter's pre-screen already has; the
rules' ``may_report`` only says "cannot report" when the libcst analysis
(:mod:`distlint.analysis.mainblock.facts`) provably agrees (see the soundness notes on
:class:`ScreenShape`).
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distlint.screens.names import last_component, names_match_any
from distlint.screens.runners import RAISERS, all_runners, convention_runners

if TYPE_CHECKING:
    from typing_extensions import TypeGuard  # typing's own from Python 3.10

    from distlint.config import Config
    from distlint.source import PreScreen


#: At module level these all return the module's namespace.
NAMESPACE_FUNCTIONS = frozenset({"globals", "vars", "locals"})
INSTANTIATE_TESTS = re.compile(r"^instantiate_\w*tests$")


def is_ast_main_guard(node: ast.AST) -> bool:
    """The stdlib ``ast`` twin of :func:`is_main_guard` (must accept the same code)."""
    return isinstance(node, ast.If) and _is_ast_main_comparison(node.test)


def is_ast_any_main_guard(node: ast.AST) -> TypeGuard[ast.If]:
    """The stdlib ``ast`` twin of :func:`is_any_main_guard` (must accept the same code)."""
    return isinstance(node, ast.If) and any(map(_is_ast_main_comparison, _ast_conjuncts(node.test)))


def _ast_conjuncts(node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for value in node.values:
            yield from _ast_conjuncts(value)
    else:
        yield node


def _is_ast_main_comparison(test: ast.AST) -> bool:
    if (
        not isinstance(test, ast.Compare)
        or len(test.ops) != 1
        or not isinstance(test.ops[0], ast.Eq)
    ):
        return False
    left, right = test.left, test.comparators[0]

    def dunder(n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == "__name__"

    def main(n: ast.AST) -> bool:
        return isinstance(n, ast.Constant) and n.value == "__main__"

    return (dunder(left) and main(right)) or (dunder(right) and main(left))


# -- the pre-screen twin of distlint.analysis.mainblock.generated_tests ---------------------------------------------------------------------------


def ast_node_may_generate(node: ast.AST) -> bool:
    """Whether ``node`` may be part of test generation the libcst view recognises.

    Called on every node of the file by the pre-screen. A superset: any use of
    ``globals``/``vars``/``locals`` (``.update(...)``, ``[name] = ...``), any ``setattr(...)``,
    any three-argument ``type(...)`` and any ``instantiate_*tests`` call. Classes made in a
    loop with ``class`` are covered by the screen's "any class" already.
    """
    if isinstance(node, ast.Name):
        return node.id in NAMESPACE_FUNCTIONS
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else None
    )
    if name is None:
        return False
    if name == "setattr" or (name == "type" and len(node.args) == 3):
        return True
    return bool(INSTANTIATE_TESTS.match(name))


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


def _ast_dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _ast_dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


#: The fields of a statement (or handler, or match case) that hold statements. Statements
#: only ever occur there, never inside an expression, so a walk over these fields meets every
#: ``def``, ``class``, import and assignment of the file while skipping the expression nodes
#: that make up most of a tree (``ast.walk`` over a whole test file visits ~10x more nodes).
_STATEMENT_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def ast_statements(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement of ``body`` at any depth (plus except handlers and match cases)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        for name in _STATEMENT_FIELDS:
            children = getattr(node, name, None)
            if (
                children.__class__ is list
            ):  # ``body`` of a Lambda/IfExp is an expression: never reached
                stack.extend(children)


@dataclass
class _Definitions:
    """What one walk over the statements collects for :func:`screen_shape`."""

    has_class_or_test: bool = False
    defined: set[str] = field(default_factory=set)
    imports_as: list[tuple[str, str]] = field(
        default_factory=list
    )  # (imported name, its ``as`` name)
    assigns: list[tuple[str, str]] = field(
        default_factory=list
    )  # (target, the dotted name assigned)


def _definitions(tree: ast.Module) -> _Definitions:
    found = _Definitions()
    # type(node) is ...: exact types (cheaper than isinstance), which the type checker narrows.
    for node in ast_statements(tree.body):
        if type(node) is ast.ClassDef:
            found.has_class_or_test = True
        elif type(node) is ast.FunctionDef or type(node) is ast.AsyncFunctionDef:
            found.defined.add(node.name)
            if node.name.startswith("test_"):
                found.has_class_or_test = True
        elif type(node) is ast.Import or type(node) is ast.ImportFrom:
            found.imports_as.extend(
                (alias.name, alias.asname) for alias in node.names if alias.asname
            )
        elif (
            type(node) is ast.Assign
            and len(node.targets) == 1
            and type(node.targets[0]) is ast.Name
        ):
            value = _ast_dotted(node.value)
            if value:
                found.assigns.append((node.targets[0].id, value))
    return found


def _runner_aliases(found: _Definitions, runner_last: set[str]) -> set[str]:
    """Every name that may be bound to a runner anywhere (imports ``as``, ``x = ...run_tests``),
    through chains of aliases in any order (``a = run_tests; b = a``)."""
    names = set(runner_last)
    pairs = [(last_component(name), asname) for name, asname in found.imports_as]
    pairs += [(last_component(value), target) for target, value in found.assigns]
    changed = True
    while changed:
        changed = False
        for source, alias in pairs:
            if source in names and alias not in names:
                names.add(alias)
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


def _may_generate_tests(tree: ast.Module) -> bool:
    """Whether some node may be part of test generation (only asked of files without a class or
    a ``test_`` function, which are few: this one walks every node)."""
    return any(ast_node_may_generate(node) for node in ast.walk(tree))


def screen_shape(tree: ast.Module, config_runners: Sequence[str]) -> ScreenShape:
    runners = all_runners(config_runners)
    runner_last = {last_component(r) for r in runners}
    guards = [s for s in tree.body if is_ast_any_main_guard(s)]
    guard_surely_runs = any(
        isinstance(statement, ast.Raise) for guard in guards for statement in guard.body
    ) or any(
        _written_as_any(call, (*runners, *RAISERS))
        for guard in guards
        for statement in guard.body
        for call in _ast_calls_at_import(statement)
    )
    code_after_guard = bool(guards) and tree.body[-1] is not guards[0]
    found = _definitions(tree)
    may_have_tests = found.has_class_or_test or _may_generate_tests(tree)
    at_import = [s for s in tree.body if s not in guards]
    may_run_at_import = _may_reach_runner(at_import, found, runner_last)
    return ScreenShape(
        bool(guards), guard_surely_runs, code_after_guard, may_have_tests, may_run_at_import
    )


def _written_as_any(call: ast.Call, wanted: Sequence[str]) -> bool:
    """Whether ``call`` is written as one of ``wanted`` (the libcst analysis counts what a call
    is written as among what it may mean)."""
    written = _ast_dotted(call.func)
    return written is not None and names_match_any({written}, wanted)


def _may_reach_runner(
    statements: Sequence[ast.stmt], found: _Definitions, runner_last: set[str]
) -> bool:
    """Whether running ``statements`` (the module's, outside its guards) may call a runner,
    following calls of the module's own functions by their bare name as the libcst analysis
    does (``copy_tests(...)`` at import runs ``copy_tests``' body). A call of any other name
    the module defines (a class, a nested function) counts as a runner: the analysis does not
    follow those, and the screen stays conservative."""
    suspicious: set[str] | None = None  # computed for the first call, if any
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] | None = None
    pending: list[ast.stmt] = list(statements)
    followed: set[str] = set()
    while pending:
        for call in _ast_calls_at_import(pending.pop()):
            written = _ast_dotted(call.func)
            if not written:
                continue
            if suspicious is None:
                suspicious = _runner_aliases(found, runner_last)
            if last_component(written) in suspicious:
                return True
            if written not in found.defined:
                continue
            if functions is None:
                functions = _module_functions(statements)
            if written not in functions:
                return True
            if written not in followed:
                followed.add(written)
                for function in functions[written]:
                    pending.extend(function.body)
    return False


def _module_functions(
    statements: Sequence[ast.stmt],
) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The module's functions by name: its ``def`` statements outside any function or class
    body (under a module-level ``if``/``try``/``for``/``with`` too), where the libcst analysis
    looks for the functions a call may enter."""
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if type(node) is ast.FunctionDef or type(node) is ast.AsyncFunctionDef:
            functions.setdefault(node.name, []).append(node)
        elif type(node) is not ast.ClassDef:
            for name in _STATEMENT_FIELDS:
                children = getattr(node, name, None)
                if children.__class__ is list:
                    stack.extend(children)
    return functions


_SHAPES: weakref.WeakKeyDictionary[PreScreen, dict[tuple[str, ...], ScreenShape | None]] = (
    weakref.WeakKeyDictionary()
)


def screened_shape(screen: PreScreen, config: Config) -> ScreenShape | None:
    """The file's :class:`ScreenShape` (memoised per screen); ``None`` when ``ast`` cannot parse it."""
    per_screen = _SHAPES.setdefault(screen, {})
    key = tuple(config.runners)
    if key not in per_screen:
        tree = screen.ast_module
        per_screen[key] = None if tree is None else screen_shape(tree, config.runners)
    return per_screen[key]


def may_run_tests_at_import(screen: PreScreen, config: Config) -> bool:
    """DL104's pre-screen: a call at import that may be (or may reach) a runner, and a runner's
    name in the file. The libcst analysis only counts a call as a runner when its name, or
    what an import or assignment of this file binds it to, is a runner's (``run_tests``,
    ``unittest.main``...), and each of those spells the runner's last name component in the
    file: a file without any of them runs no tests at import, whatever its local functions
    do (torch's 1.4 MB ``common_methods_invocations.py`` calls its own helpers at import)."""
    if not screen.has_any_word({last_component(r) for r in all_runners(config.runners)}):
        return False  # the words first: a file without them needs no tree
    shape = screened_shape(screen, config)
    return shape is None or shape.may_run_at_import


def may_belong_to_convention(screen: PreScreen, config: Config) -> bool:
    """Conservative: a convention runner's name occurs in the file (every import or use
    of one spells its last name component)."""
    return screen.has_any_word({last_component(r) for r in convention_runners(config.runners)})


def may_require_main(screen: PreScreen, config: Config) -> bool:
    """The pre-screen twin of :func:`main_block_required` (conservative: ``True`` whenever
    the libcst analysis could say ``True``)."""
    if config.require_main == "never":
        return False
    if config.require_main != "always" and not may_belong_to_convention(screen, config):
        return False  # the words first: a file without them needs no tree
    shape = screened_shape(screen, config)
    return shape is None or shape.may_have_tests

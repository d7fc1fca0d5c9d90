"""How a test class runs its tests: per-test spawn, continuous, threaded or plain.

Bases defined in the same file are followed (their ``setUp``, their own bases);
bases from elsewhere are recognised by name: torch's known test bases plus the
``per-test-bases`` / ``continuous-bases`` config entries.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Union

from distlint.analysis.model import ExecutionModel
from distlint.config import Config
from distlint.screens.names import last_component
from distlint.screens.pg_names import (  # noqa: F401 - names the analysis shares with the pre-screen
    BASE_RUN_PG,
    CONTINUOUS_BASES,
    PER_TEST_BASES,
    REUSED_WORKERS_BASES,
    SPAWN_METHODS,
    config_names,
)
from distlint.syntax.ast_lines import (
    SimpleLine,
    Unit,
    else_units,
    is_one_line,
    is_string_line,
    units,
)
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import dotted_name, walk

#: The per-test bases ``distlint migrate`` moves tests from (``MultiProcessTestCase`` is the
#: fifth: its classes spawn in their own ``setUp``).
MIGRATABLE_PER_TEST_BASES = frozenset(
    {"DTensorTestBase", "FSDPTest", "DistributedTestBase", "DynamoDistributedMultiProcTestCase"}
)
#: Per-test bases that pick the PG's backend themselves (the device's default): their classes
#: need no backend literal for the continuous class.
BASE_CHOOSES_BACKEND = frozenset({"DTensorTestBase", "FSDPTest"})
#: Members each base uses to build or tear down the per-test PG: a class that overrides one
#: builds another PG than the continuous counterpart would.
BASE_PG_MEMBERS = {
    "DTensorTestBase": ("backend", "init_pg", "destroy_pg", "_run"),
    "FSDPTest": ("_run", "init_method", "destroy_pg_upon_exit"),
    "DistributedTestBase": ("backend", "_run"),
    "DynamoDistributedMultiProcTestCase": ("backend", "_run"),
}
#: Class attributes that change the per-test PG of a base (``fake_pg = True``: FSDPTest's _run
#: builds a fake-backend PG).
BASE_PG_ATTRIBUTES = {"FSDPTest": ("fake_pg",)}
THREADED_BASES = frozenset(
    {"MultiThreadedTestCase", "DTensorOpTestBase", "LocalDTensorOpTestBase", "FSDPTestMultiThread"}
)
#: Bases that look per-test but run in one process (local tensor mode): not a target.
NOT_TARGET_BASES = frozenset({"LocalDTensorTestBase"})

#: A ``def`` or an ``async def`` (libcst's ``FunctionDef`` is both: so are the functions here).
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
#: An entry of a class's linearised bases: a class of this file, or an external base's names.
Base = Union[ast.ClassDef, tuple[str, ...]]


@dataclass
class ClassModel:
    model: ExecutionModel
    reason: str = ""
    #: The external base that decided it (e.g. "FSDPTest"), when one did.
    deciding_base: str | None = None


@dataclass
class ClassTable:
    """The module's classes (not nested in functions or classes) and module-level functions."""

    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    order: list[ast.ClassDef] = field(default_factory=list)
    functions: dict[str, Function] = field(default_factory=dict)
    #: Names bound at module level (imports, assignments, defs, classes); ``None`` after a
    #: ``from x import *``, which may bind any name.
    module_names: set[str] | None = field(default_factory=set)
    _linearized: dict[int, list[Base]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, module: ast.Module) -> ClassTable:
        """The table of ``module`` (``ast_lines.prepare`` already called on it)."""
        table = cls()
        for statement in _module_level(units(module)):
            if isinstance(statement, ast.ClassDef):
                table.classes.setdefault(statement.name, statement)
                table.order.append(statement)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                table.functions.setdefault(statement.name, statement)
            table._bind(statement)
        return table

    def _bind(self, statement: Unit) -> None:
        if self.module_names is None:
            return
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            self.module_names.add(statement.name)
        for small in statement.body if isinstance(statement, SimpleLine) else ():
            if isinstance(small, ast.ImportFrom) and any(a.name == "*" for a in small.names):
                self.module_names = None
                return
            if isinstance(small, (ast.Import, ast.ImportFrom)):
                for alias in small.names:
                    bound = alias.asname or alias.name
                    self.module_names.add(bound.split(".", 1)[0])
            targets: list[ast.expr] = []
            if isinstance(small, ast.Assign):
                targets = list(small.targets)
            elif isinstance(small, (ast.AnnAssign, ast.AugAssign)):
                targets = [small.target]
            for target in targets:
                self._bind_target(target)

    def _bind_target(self, target: ast.expr) -> None:
        """The names the libcst analysis took from one assignment target, quirks kept: a
        tuple's or list's own names (``*rest`` included) and the object of an attribute or
        subscript target (``s`` of ``s.t = 1``), but not a plain name target (``x = 1``: the
        libcst code read ``Name.value``, a string) nor the names of a nested tuple."""
        assert self.module_names is not None
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                value = element.value if isinstance(element, ast.Starred) else element
                if isinstance(value, ast.Name):
                    self.module_names.add(value.id)
        elif isinstance(target, (ast.Attribute, ast.Subscript, ast.Starred)):
            if isinstance(target.value, ast.Name):
                self.module_names.add(target.value.id)

    def local_base(self, names: AstNames, base: ast.expr) -> ast.ClassDef | None:
        """The same-file class a base expression (an entry of ``ClassDef.bases``) names, if any."""
        value = base_value(base)
        if not isinstance(value, ast.Name):
            return None
        found = self.classes.get(value.id)
        if found is None:
            return None
        resolved = names.names_of(value)
        # An imported name shadowing nothing local resolves to a dotted module path.
        if resolved and all("." in q and not q.startswith(found.name) for q in resolved):
            return None
        return found

    def linearize(self, names: AstNames, cls: ast.ClassDef) -> list[Base]:
        """The class and its bases, depth first left to right (an MRO approximation), cycle safe."""
        cached = self._linearized.get(id(cls))
        if cached is None:
            cached = self._linearized[id(cls)] = self._linearize(names, cls)
        return cached

    def _linearize(self, names: AstNames, cls: ast.ClassDef) -> list[Base]:
        out: list[Base] = []
        self._visit_bases(names, cls, out, set())
        return out

    def _visit_bases(
        self, names: AstNames, node: ast.ClassDef, out: list[Base], seen: set[int]
    ) -> None:
        # A method, not a closure calling itself: that would be a reference cycle holding the
        # names (and the tree) until the cyclic collector runs.
        if id(node) in seen:
            return
        seen.add(id(node))
        out.append(node)
        for base in node.bases:  # keywords (``metaclass=``) are no bases
            local = self.local_base(names, base)
            if local is not None:
                self._visit_bases(names, local, out, seen)
            else:
                out.append(external_base_names(names, base_value(base)))

    def method(
        self, names: AstNames, cls: ast.ClassDef, name: str
    ) -> tuple[ast.ClassDef, Function] | None:
        """``name`` looked up on ``cls`` and its same-file bases (first definition wins)."""
        for entry in self.linearize(names, cls):
            if isinstance(entry, ast.ClassDef):
                found = class_function(entry, name)
                if found is not None:
                    return entry, found
        return None

    def subclasses(self, names: AstNames, cls: ast.ClassDef) -> tuple[str, ...]:
        return tuple(
            other.name
            for other in self.order
            if other is not cls and any(e is cls for e in self.linearize(names, other))
        )


def base_value(base: ast.expr) -> ast.expr:
    """The expression a base names: ``c`` for ``*c`` (libcst's ``Arg.value`` of a base)."""
    return base.value if isinstance(base, ast.Starred) else base


def _module_level(body: Sequence[Unit]) -> Iterator[Unit]:
    """Module statements, looking into module-level if/try/with blocks (``if HAS_NCCL: class ...``)."""
    for statement in body:
        yield statement
        for block in _blocks(statement):
            yield from _module_level(block)


def _blocks(statement: Unit) -> list[Sequence[Unit]]:
    """Statement lists directly inside a module-level if/try/with (not functions or classes);
    one-line blocks (``try: import x``) are not looked into, as the libcst analysis did not."""
    if isinstance(statement, ast.If):
        orelse = else_units(statement)
        if isinstance(orelse, ast.If):  # an elif: a statement of its own
            return [b for b in [_block(statement, "body")] if b] + [[orelse]]
        blocks = [_block(statement, "body")]
        if orelse is not None:
            blocks.append(_block(statement, "orelse"))
    elif isinstance(statement, ast.Try):
        blocks = [_block(statement, "body")]
        blocks += [_block(handler, "body") for handler in statement.handlers]
        blocks += [_block(statement, "orelse"), _block(statement, "finalbody")]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        blocks = [_block(statement, "body")]
    else:
        return []
    return [body for body in blocks if body]


def _block(node: ast.AST, field: str) -> Sequence[Unit]:
    """The units of an indented block of ``node`` (none for a one-line block)."""
    return () if is_one_line(node, field) else units(node, field)


def external_base_names(names: AstNames, expression: ast.expr) -> tuple[str, ...]:
    """Qualified names of a base from elsewhere; as written when it cannot be resolved (star imports)."""
    named = expression
    while isinstance(named, ast.Subscript):  # ``Base[T]``: libcst names it as ``Base``
        named = named.value
    resolved = names.names_of(named)
    if resolved:
        return tuple(sorted(resolved))
    written = dotted_name(expression)
    return (written,) if written else ()


def class_function(cls: ast.ClassDef, name: str) -> Function | None:
    """The method ``name`` defined in ``cls``'s body (the first written, as the libcst analysis
    found it)."""
    methods: dict[str, Function] | None = getattr(cls, _METHODS, None)
    if methods is None:  # asked for every helper call of every test: indexed once per class
        methods = {}
        for function in class_functions(cls):
            methods.setdefault(function.name, function)
        setattr(cls, _METHODS, methods)
    return methods.get(name)


#: The attribute a class node keeps its methods by name in (:func:`class_function`).
_METHODS = "_distlint_methods"


def class_functions(cls: ast.ClassDef) -> list[Function]:
    return [
        s for s in _block(cls, "body") if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def calls_self_method(func: Function, method_names: Sequence[str]) -> str | None:
    """The first ``self.<m>()`` call in ``func`` (its decorators and defaults included) with
    ``m`` in ``method_names``."""
    for node in walk(func):
        if not isinstance(node, ast.Call):
            continue
        func_ = node.func
        if (
            isinstance(func_, ast.Attribute)
            and isinstance(func_.value, ast.Name)
            and func_.value.id == "self"
            and func_.attr in method_names
        ):
            return func_.attr
    return None


def _matches(base_names: tuple[str, ...], wanted: frozenset) -> str | None:
    for name in base_names:
        if last_component(name) in wanted:
            return last_component(name)
    return None


def class_model(
    table: ClassTable, names: AstNames, cls: ast.ClassDef, config: Config
) -> ClassModel:
    """Decide how ``cls`` runs its tests (see the module docstring)."""
    per_test = PER_TEST_BASES | config_names(config.per_test_bases)
    continuous = CONTINUOUS_BASES | config_names(config.continuous_bases)
    for entry in table.linearize(names, cls):
        if isinstance(entry, ast.ClassDef):
            setup = class_function(entry, "setUp")
            if setup is not None:
                spawn = calls_self_method(setup, SPAWN_METHODS)
                if spawn is not None:
                    where = "setUp" if entry is cls else f"setUp of {entry.name}"
                    return ClassModel(
                        ExecutionModel.PER_TEST_SPAWN, f"{where} calls self.{spawn}()"
                    )
            continue
        for wanted, model in (
            (THREADED_BASES, ExecutionModel.THREADED),
            (NOT_TARGET_BASES, ExecutionModel.PLAIN),
            (REUSED_WORKERS_BASES, ExecutionModel.REUSED_WORKERS),
            (continuous, ExecutionModel.CONTINUOUS),
            (per_test, ExecutionModel.PER_TEST_SPAWN),
        ):
            matched = _matches(entry, wanted)
            if matched is not None:
                return ClassModel(model, f"derives from {matched}", matched)
    return ClassModel(ExecutionModel.PLAIN, "no multi-process base")


@dataclass
class WorldSizeFact:
    value: ast.expr | None = None
    #: The line assigning it (a :class:`SimpleLine`) or the ``world_size`` property's def.
    node: Unit | None = None
    owner: ast.ClassDef | None = None


def world_size_fact(table: ClassTable, names: AstNames, cls: ast.ClassDef) -> WorldSizeFact:
    """The class's ``world_size`` (class attribute or property returning one expression), own or inherited."""
    for entry in table.linearize(names, cls):
        if not isinstance(entry, ast.ClassDef):
            continue
        for statement in _block(entry, "body"):
            if isinstance(statement, SimpleLine):
                for small in statement.body:
                    target_value = _class_assignment(small, "world_size")
                    if target_value is not None:
                        return WorldSizeFact(target_value, statement, entry)
            elif (
                isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                and statement.name == "world_size"
            ):
                return WorldSizeFact(_single_return(statement), statement, entry)
    return WorldSizeFact()


def class_attribute(
    table: ClassTable, names: AstNames, cls: ast.ClassDef, name: str
) -> tuple[ast.ClassDef, SimpleLine] | None:
    """``name = ...`` in the body of ``cls`` or a same-file base (first found): (owner, its line)."""
    for entry in table.linearize(names, cls):
        if not isinstance(entry, ast.ClassDef):
            continue
        for statement in _block(entry, "body"):
            if isinstance(statement, SimpleLine) and any(
                _class_assignment(small, name) is not None for small in statement.body
            ):
                return entry, statement
    return None


def _class_assignment(small: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(small, ast.Assign):
        for target in small.targets:
            if isinstance(target, ast.Name) and target.id == name:
                return small.value
    if (
        isinstance(small, ast.AnnAssign)
        and isinstance(small.target, ast.Name)
        and small.target.id == name
    ):
        return small.value
    return None


def _single_return(func: Function) -> ast.expr | None:
    statements = [s for s in _block(func, "body") if not is_string_line(s)]
    if len(statements) == 1 and isinstance(statements[0], SimpleLine):
        small = statements[0].body[0]
        if isinstance(small, ast.Return):
            return small.value
    return None


def integer_literal(node: ast.AST | None) -> int | None:
    """The value of an integer literal (``4``, ``0x10``, ``1_000``; not ``True``, not ``-2``)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None

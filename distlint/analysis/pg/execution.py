"""How a test class runs its tests: per-test spawn, continuous, threaded or plain.

Bases defined in the same file are followed (their ``setUp``, their own bases);
bases from elsewhere are recognised by name: torch's known test bases plus the
``per-test-bases`` / ``continuous-bases`` config entries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from distlint.analysis.model import ExecutionModel
from distlint.analysis.names import QualifiedNames, dotted_name, last_component, qualified_names
from distlint.analysis.walk import visit_read_only
from distlint.config import Config
from distlint.cst_utils import is_string_statement
from distlint.screens.pg_names import (  # noqa: F401 - names the analysis shares with the pre-screen
    BASE_RUN_PG,
    CONTINUOUS_BASES,
    PER_TEST_BASES,
    REUSED_WORKERS_BASES,
    SPAWN_METHODS,
    config_names,
)

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

#: An entry of a class's linearised bases: a class of this file, or an external base's names.
Base = Union[cst.ClassDef, tuple[str, ...]]


@dataclass
class ClassModel:
    model: ExecutionModel
    reason: str = ""
    #: The external base that decided it (e.g. "FSDPTest"), when one did.
    deciding_base: str | None = None


@dataclass
class ClassTable:
    """The module's classes (not nested in functions or classes) and module-level functions."""

    classes: dict[str, cst.ClassDef] = field(default_factory=dict)
    order: list[cst.ClassDef] = field(default_factory=list)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    #: Names bound at module level (imports, assignments, defs, classes); ``None`` after a
    #: ``from x import *``, which may bind any name.
    module_names: set[str] | None = field(default_factory=set)
    _linearized: dict[int, list[Base]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, module: cst.Module) -> ClassTable:
        table = cls()
        for statement in _module_level(module.body):
            if isinstance(statement, cst.ClassDef):
                table.classes.setdefault(statement.name.value, statement)
                table.order.append(statement)
            elif isinstance(statement, cst.FunctionDef):
                table.functions.setdefault(statement.name.value, statement)
            table._bind(statement)
        return table

    def _bind(self, statement: cst.BaseStatement) -> None:
        if self.module_names is None:
            return
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
            self.module_names.add(statement.name.value)
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                self.module_names = None
                return
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                for alias in small.names:  # type: ignore[union-attr]
                    bound = alias.evaluated_alias or alias.evaluated_name
                    self.module_names.add(bound.split(".", 1)[0])
            targets: list[cst.BaseExpression] = []
            if isinstance(small, cst.Assign):
                targets = [t.target for t in small.targets]
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                targets = [small.target]
            for target in targets:
                elements = (
                    target.elements if isinstance(target, (cst.Tuple, cst.List)) else [target]
                )
                for element in elements:
                    value = getattr(element, "value", element)
                    if isinstance(value, cst.Name):
                        self.module_names.add(value.value)

    def local_base(self, names: QualifiedNames, base: cst.Arg) -> cst.ClassDef | None:
        """The same-file class a base expression names, if any."""
        if base.keyword is not None or not isinstance(base.value, cst.Name):
            return None
        found = self.classes.get(base.value.value)
        if found is None:
            return None
        resolved = qualified_names(names, base.value)
        # An imported name shadowing nothing local resolves to a dotted module path.
        if resolved and all("." in q and not q.startswith(found.name.value) for q in resolved):
            return None
        return found

    def linearize(self, names: QualifiedNames, cls: cst.ClassDef) -> list[Base]:
        """The class and its bases, depth first left to right (an MRO approximation), cycle safe."""
        cached = self._linearized.get(id(cls))
        if cached is None:
            cached = self._linearized[id(cls)] = self._linearize(names, cls)
        return cached

    def _linearize(self, names: QualifiedNames, cls: cst.ClassDef) -> list[Base]:
        out: list[Base] = []
        seen: set = set()

        def visit(node: cst.ClassDef) -> None:
            if id(node) in seen:
                return
            seen.add(id(node))
            out.append(node)
            for base in node.bases:
                if base.keyword is not None:
                    continue
                local = self.local_base(names, base)
                if local is not None:
                    visit(local)
                else:
                    out.append(external_base_names(names, base.value))

        visit(cls)
        return out

    def method(
        self, names: QualifiedNames, cls: cst.ClassDef, name: str
    ) -> tuple[cst.ClassDef, cst.FunctionDef] | None:
        """``name`` looked up on ``cls`` and its same-file bases (first definition wins)."""
        for entry in self.linearize(names, cls):
            if isinstance(entry, cst.ClassDef):
                found = class_function(entry, name)
                if found is not None:
                    return entry, found
        return None

    def subclasses(self, names: QualifiedNames, cls: cst.ClassDef) -> tuple[str, ...]:
        return tuple(
            other.name.value
            for other in self.order
            if other is not cls and any(e is cls for e in self.linearize(names, other))
        )


def _module_level(body: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseStatement]:
    """Module statements, looking into module-level if/try/with blocks (``if HAS_NCCL: class ...``)."""
    for statement in body:
        yield statement
        for block in _blocks(statement):
            yield from _module_level(block)


def _blocks(statement: cst.BaseStatement) -> list[Sequence[cst.BaseStatement]]:
    """Statement lists directly inside a module-level if/try/with (not functions or classes)."""
    suites: list[cst.BaseSuite] = []
    if isinstance(statement, cst.If):
        suites.append(statement.body)
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            return [b for b in [_suite_body(statement.body)] if b] + [[orelse]]
        if orelse is not None:
            suites.append(orelse.body)
    elif isinstance(statement, cst.Try):
        suites.append(statement.body)
        suites += [handler.body for handler in statement.handlers]
        suites += [
            part.body for part in (statement.orelse, statement.finalbody) if part is not None
        ]
    elif isinstance(statement, cst.With):
        suites.append(statement.body)
    return [body for body in map(_suite_body, suites) if body]


def _suite_body(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()


def external_base_names(names: QualifiedNames, expression: cst.BaseExpression) -> tuple[str, ...]:
    """Qualified names of a base from elsewhere; as written when it cannot be resolved (star imports)."""
    resolved = qualified_names(names, expression)
    if resolved:
        return tuple(sorted(resolved))
    written = dotted_name(expression)
    return (written,) if written else ()


def class_function(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    for statement in body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None


def class_functions(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return [s for s in body if isinstance(s, cst.FunctionDef)]


def calls_self_method(func: cst.FunctionDef, method_names: Sequence[str]) -> str | None:
    """The first ``self.<m>()`` call in ``func`` with ``m`` in ``method_names``."""
    found: list[str] = []

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func_ = node.func
            if (
                isinstance(func_, cst.Attribute)
                and isinstance(func_.value, cst.Name)
                and func_.value.value == "self"
                and func_.attr.value in method_names
            ):
                found.append(func_.attr.value)

    visit_read_only(func, _Finder())
    return found[0] if found else None


def _matches(base_names: tuple[str, ...], wanted: frozenset) -> str | None:
    for name in base_names:
        if last_component(name) in wanted:
            return last_component(name)
    return None


def class_model(
    table: ClassTable, names: QualifiedNames, cls: cst.ClassDef, config: Config
) -> ClassModel:
    """Decide how ``cls`` runs its tests (see the module docstring)."""
    per_test = PER_TEST_BASES | config_names(config.per_test_bases)
    continuous = CONTINUOUS_BASES | config_names(config.continuous_bases)
    for entry in table.linearize(names, cls):
        if isinstance(entry, cst.ClassDef):
            setup = class_function(entry, "setUp")
            if setup is not None:
                spawn = calls_self_method(setup, SPAWN_METHODS)
                if spawn is not None:
                    where = "setUp" if entry is cls else f"setUp of {entry.name.value}"
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
    value: cst.BaseExpression | None = None
    node: cst.CSTNode | None = None
    owner: cst.ClassDef | None = None


def world_size_fact(table: ClassTable, names: QualifiedNames, cls: cst.ClassDef) -> WorldSizeFact:
    """The class's ``world_size`` (class attribute or property returning one expression), own or inherited."""
    for entry in table.linearize(names, cls):
        if not isinstance(entry, cst.ClassDef):
            continue
        body = entry.body.body if isinstance(entry.body, cst.IndentedBlock) else ()
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    target_value = _class_assignment(small, "world_size")
                    if target_value is not None:
                        return WorldSizeFact(target_value, statement, entry)
            elif isinstance(statement, cst.FunctionDef) and statement.name.value == "world_size":
                return WorldSizeFact(_single_return(statement), statement, entry)
    return WorldSizeFact()


def class_attribute(
    table: ClassTable, names: QualifiedNames, cls: cst.ClassDef, name: str
) -> tuple[cst.ClassDef, cst.BaseStatement] | None:
    """``name = ...`` in the body of ``cls`` or a same-file base (first found): (owner, statement)."""
    for entry in table.linearize(names, cls):
        if not isinstance(entry, cst.ClassDef):
            continue
        for statement in entry.body.body if isinstance(entry.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.SimpleStatementLine) and any(
                _class_assignment(small, name) is not None for small in statement.body
            ):
                return entry, statement
    return None


def _class_assignment(small: cst.BaseSmallStatement, name: str) -> cst.BaseExpression | None:
    if isinstance(small, cst.Assign):
        for target in small.targets:
            if isinstance(target.target, cst.Name) and target.target.value == name:
                return small.value
    if (
        isinstance(small, cst.AnnAssign)
        and isinstance(small.target, cst.Name)
        and small.target.value == name
    ):
        return small.value
    return None


def _single_return(func: cst.FunctionDef) -> cst.BaseExpression | None:
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else ()
    statements = [s for s in body if not is_string_statement(s)]
    if len(statements) == 1 and isinstance(statements[0], cst.SimpleStatementLine):
        small = statements[0].body[0]
        if isinstance(small, cst.Return):
            return small.value
    return None


def integer_literal(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.evaluated_value)
        except ValueError:
            return None
    return None

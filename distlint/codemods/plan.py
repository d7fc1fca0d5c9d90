"""Decide what moves where: the migration plan of one module.

Input: the module and the shared PG analysis (``ModuleAnalysis``: which tests are
eligible, where their PG is created and torn down). The plan never re-decides
eligibility; it only decides what the *rewrite* can do safely, and says why when it
cannot (:class:`~distlint.codemods.report.Why`).

The per-test classes of a module form *families* (a class and its same-file subclasses).
For each class ``X``:

* its eligible tests move to ``X<Suffix>`` (rewritten to use the shared PG), unless a
  subclass overrides them, a subclass cannot follow, or the rewrite is not possible;
* ``X<Suffix>`` exists when ``X`` moves tests or inherits moved tests; it derives from
  the continuous counterpart of ``X``'s base when that has one (so a subclass keeps its
  overrides and its inherited tests), else from the continuous base class;
* every member (method, property, class attribute) goes where the code that uses it
  ends up: members only continuous code uses move; members both sides use go to
  ``X<Mixin>``, from which both classes derive; the rest stay;
* ``X`` is removed when it has no tests left and nothing derives from it.

Usage is by name (``self.<name>``, ``cls.<name>``, ``super().<name>``, ``getattr(self,
"<name>")``), resolved over the class's same-file bases: conservative, so a member is
never left behind where it is needed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper

from distlint.analysis.pg.class_eligibility import MULTI_PROCESS_TEST_CASE, first_line, is_docstring, uses_class_opts
from distlint.analysis.model import ClassAnalysis, CreationKind, Reason, ExecutionModel, ModuleAnalysis, PGCreation, TestAnalysis
from distlint.analysis.names import QualifiedNames, dotted_name, qualified_name_map, qualified_names
from distlint.codemods import members as m
from distlint.codemods.report import ClassReport, FileReport, LeftBehind, Why
from distlint.codemods.rewrite import (DROP_FINALLY, REMOVE, FunctionEdits, RewriteError, apply_edits,
                                       bind_shared_pg, has_work_left)
from distlint.config import Config
from distlint.metadata import node_spans

#: Members MultiProcContinuousTest itself defines with a meaning of its own.
RESERVED_MEMBERS = frozenset({"pg", "rank", "timeout", "backend_str", "MAIN_PROCESS_RANK", "processes"})
#: Members the continuous runtime reads by itself (no test needs to name them).
RUNTIME_READS = ("world_size", "device_type")
_INSTANTIATE = frozenset({"instantiate_parametrized_tests"})


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


# -- plan data ------------------------------------------------------------------------------

@dataclass
class Decision:
    test: TestAnalysis
    moved: bool = False
    code: str = ""
    text: str = ""

    def leave(self, code: str, text: str) -> None:
        if self.moved or not self.code:  # the first reason wins
            self.moved = False
            self.code, self.text = code, text


@dataclass
class FamilyClass:
    name: str
    node: cst.ClassDef
    analysis: ClassAnalysis
    body: m.ClassBody
    index: int  # position in module.body
    parent: Optional["FamilyClass"] = None
    children: List["FamilyClass"] = field(default_factory=list)
    #: Bases kept on the continuous class (same-file helpers, external mixins).
    kept_bases: List[cst.Arg] = field(default_factory=list)
    refusal: Optional[Tuple[str, str]] = None
    decisions: Dict[str, Decision] = field(default_factory=dict)
    #: Test methods the analysis does not list (``testFoo``): they stay.
    unanalysed_tests: List[str] = field(default_factory=list)
    #: Results.
    has_continuous: bool = False
    removed: bool = False
    placement: Dict[int, str] = field(default_factory=dict)  # id(unit.statement) -> stay|mixin|move|drop
    notes: List[str] = field(default_factory=list)

    def refuse(self, code: str, text: str) -> None:
        if self.refusal is None:
            self.refusal = (code, text)

    def mro(self) -> List["FamilyClass"]:
        out, cursor = [], self
        while cursor is not None:
            out.append(cursor)
            cursor = cursor.parent
        return out

    def descendants(self) -> List["FamilyClass"]:
        out = []
        for child in self.children:
            out.append(child)
            out.extend(child.descendants())
        return out

    def moved_tests(self) -> List[Decision]:
        return [d for d in self.decisions.values() if d.moved]

    def remaining_test_nodes(self) -> List[cst.FunctionDef]:
        moved = {d.test.name for d in self.moved_tests()}
        return [u.statement for u in self.body.tests() if u.name not in moved]  # type: ignore[misc]

    @property
    def root(self) -> "FamilyClass":
        """The class whose continuous counterpart derives from the continuous base directly."""
        cursor = self
        while cursor.parent is not None and cursor.parent.has_continuous:
            cursor = cursor.parent
        return cursor


@dataclass
class MigrationPlan:
    module: cst.Module
    classes: List[FamilyClass]
    #: Rewritten functions (tests and helpers) by ``id()`` of the original node.
    rewritten: Dict[int, cst.FunctionDef]
    #: Module-level ``instantiate_parametrized_tests(X)`` statements by class name.
    instantiations: Dict[str, List[cst.SimpleStatementLine]]
    suffix: str
    report: FileReport
    #: The edits behind ``rewritten`` and the original functions, by ``id()`` of the original.
    edits: Dict[int, FunctionEdits] = field(default_factory=dict)
    functions: Dict[int, cst.FunctionDef] = field(default_factory=dict)
    #: Helpers rewritten for moved tests: ``id(helper)`` -> {(class, test)}.
    helper_users: Dict[int, Set[Tuple[str, str]]] = field(default_factory=dict)
    #: ``opts`` methods that become classmethods (``id()`` of the FunctionDef): the runtime calls
    #: ``cls.opts()`` to build the shared PG of a continuous class whose tests used ``self.opts()``.
    classmethod_opts: Set[int] = field(default_factory=set)

    def rewrite_active(self, key: int) -> bool:
        """Whether the rewritten form of function ``key`` is the one to emit."""
        users = self.helper_users.get(key)
        if users is not None:
            return any(self._decision(c, t).moved for c, t in users)
        return any(d.moved for cls in self.classes for d in cls.decisions.values() if id(d.test.node) == key)

    def _decision(self, class_name: str, test: str) -> Decision:
        return next(c for c in self.classes if c.name == class_name).decisions[test]

    @property
    def changes(self) -> bool:
        return any(c.has_continuous or self.mixin_units(c) or c.removed for c in self.classes)

    def continuous_name(self, cls: FamilyClass) -> str:
        return cls.name + self.suffix

    def mixin_name(self, cls: FamilyClass) -> str:
        return cls.name + "Mixin"

    def units_placed(self, cls: FamilyClass, where: str) -> List[m.Unit]:
        return [u for u in cls.body.units if cls.placement.get(id(u.statement)) == where]

    def mixin_units(self, cls: FamilyClass) -> List[m.Unit]:
        return self.units_placed(cls, "mixin")


# -- building the plan ----------------------------------------------------------------------

class Planner:
    def __init__(self, wrapper: MetadataWrapper, analysis: ModuleAnalysis, config: Config, suffix: str) -> None:
        self.wrapper = wrapper
        self.module = wrapper.module
        self.analysis = analysis
        self.config = config
        self.suffix = suffix
        self.names: QualifiedNames = qualified_name_map(wrapper)
        self.classes: Dict[str, FamilyClass] = {}
        self.order: List[FamilyClass] = []
        self.top_level_names: Set[str] = set()
        self.instantiations: Dict[str, List[cst.SimpleStatementLine]] = {}
        #: Edits per function (tests and helpers), and which tests need which helper rewritten.
        self.edits: Dict[int, FunctionEdits] = {}
        self.functions: Dict[int, cst.FunctionDef] = {}
        self.helper_users: Dict[int, Set[Tuple[str, str]]] = {}  # id(helper) -> {(class, test)}
        self.rewritten: Dict[int, cst.FunctionDef] = {}

    # -- positions (only for messages) ----------------------------------------------------
    def line_of(self, node: cst.CSTNode) -> int:
        # Rare (refusal messages only): the linter's cheap span lookup, not a whole-module provider.
        return node_spans(self.module, [node])[node][0]

    # -- entry point ----------------------------------------------------------------------
    def plan(self) -> MigrationPlan:
        self._collect()
        self._check_bases()
        self._check_bodies()
        self._check_module_references()
        self._decide_tests()
        self._settle()
        return MigrationPlan(self.module, self.order, self.rewritten, self.instantiations, self.suffix,
                             self._report(), self.edits, self.functions, self.helper_users,
                             self._classmethod_opts())

    # -- 1. the family classes ----------------------------------------------------------------
    def _collect(self) -> None:
        positions = {id(statement): index for index, statement in enumerate(self.module.body)}
        for index, statement in enumerate(self.module.body):
            if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
                self.top_level_names.add(statement.name.value)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    for target in getattr(small, "targets", ()):
                        if isinstance(target.target, cst.Name):
                            self.top_level_names.add(target.target.value)
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(
                            getattr(small, "names", None), cst.ImportStar):
                        for alias in small.names:  # type: ignore[union-attr]
                            bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                            self.top_level_names.add(bound)
        for analysis in self.analysis.classes:
            if analysis.model is not ExecutionModel.PER_TEST_SPAWN:
                continue
            index = positions.get(id(analysis.node))
            family = FamilyClass(analysis.name, analysis.node, analysis, m.classify_body(analysis.node),
                                 -1 if index is None else index)
            if index is None:
                family.refuse(Why.CLASS_BODY.code, "the class is defined inside a block (if/try/with); "
                                                  "distlint only rewrites module-level classes")
            self.classes[analysis.name] = family
        self.order = sorted(self.classes.values(), key=lambda c: c.index)

    # -- 2. bases -------------------------------------------------------------------------------
    def _check_bases(self) -> None:
        """The family structure (same-file per-test parent, kept bases); why a class cannot move
        (its base, its setUp, its PG facts) comes from the analysis (``ClassAnalysis.ineligible``)."""
        module_classes = {s.name.value: s for s in self.module.body if isinstance(s, cst.ClassDef)}
        for cls in self.order:
            for base in cls.node.bases:
                if base.keyword is not None:
                    cls.refuse(Why.CLASS_BODY.code, f"the class passes `{base.keyword.value}=` to its bases")
                    continue
                name = base.value.value if isinstance(base.value, cst.Name) else None
                local = module_classes.get(name) if name else None
                if local is not None:
                    family = self.classes.get(name)  # type: ignore[arg-type]
                    if family is None:
                        cls.kept_bases.append(base)  # a same-file helper class: kept as it is
                    elif cls.parent is None:
                        cls.parent = family
                        family.children.append(cls)
                    continue
                resolved = qualified_names(self.names, base.value) or {dotted_name(base.value) or ""}
                if MULTI_PROCESS_TEST_CASE not in {q.rsplit(".", 1)[-1] for q in resolved}:
                    cls.kept_bases.append(base)
            reasons = [i for i in cls.analysis.ineligible if i.reason is not Reason.BASE_CLASS]
            if reasons:
                cls.refuse(reasons[0].reason.code, reasons[0].describe())

    # -- 3. bodies ------------------------------------------------------------------------------
    def _check_bodies(self) -> None:
        for cls in self.order:
            for unit in cls.body.others():
                cls.refuse(Why.CLASS_BODY.code, f"line {self.line_of(unit.statement)} of the class body is "
                                                "neither a method nor a class attribute")
            movable = [u.statement for u in cls.body.units if u.kind in ("method", "attribute", "class", "test")]
            problem = m.needs_fixed_class(movable)
            if problem:
                cls.refuse(Why.CLASS_BODY.code, f"a member {problem}, which breaks when it changes class")

    def _check_module_references(self) -> None:
        """A class used by module-level code other than ``instantiate_parametrized_tests(X)``."""
        family_names = set(self.classes)
        if not family_names:
            return
        for statement in self.module.body:
            if isinstance(statement, cst.ClassDef) and statement.name.value in family_names:
                # Inside a family class: setUp/tearDown stay where they are (``super(X, self)`` is
                # fine there); a member that names a class may move away from it.
                units = self.classes[statement.name.value].body.units
                nodes = [*statement.decorators, *(u.statement for u in units if u.kind != "hook")]
                for node in _names_in(nodes, family_names):
                    self._refuse_reference(node, "inside a class body")
                continue
            if isinstance(statement, cst.ClassDef):
                for node in _names_in([statement], family_names):
                    self._refuse_reference(node, f"in class {statement.name.value}")
                continue
            target = _instantiation_target(statement, self.names)
            if target in family_names:
                self.instantiations.setdefault(target, []).append(statement)  # type: ignore[arg-type]
                continue
            for node in _names_in([statement], family_names):
                self._refuse_reference(node, "at module level")

    def _refuse_reference(self, node: cst.Name, where: str) -> None:
        cls = self.classes[node.value]
        cls.refuse(Why.MODULE_REFERENCE.code, f"{cls.name} is used {where} (line {self.line_of(node)}); "
                                              "migrate it by hand")

    # -- 4. per-test decisions ----------------------------------------------------------------
    def _decide_tests(self) -> None:
        for cls in self.order:
            analysed = {t.name for t in cls.analysis.tests}
            for unit in cls.body.tests():
                if unit.name not in analysed:
                    cls.unanalysed_tests.append(unit.name)
            for test in cls.analysis.tests:
                decision = Decision(test)
                cls.decisions[test.name] = decision
                if not test.creates_pg:
                    decision.leave(Why.NO_PG.code, Why.NO_PG.text)
                elif test.ineligible:
                    first = test.ineligible[0]
                    decision.leave(first.reason.code, "; ".join(i.describe() for i in test.ineligible))
                else:
                    decision.moved = True
        # Class refusals flow down to subclasses (they run the same setUp, the same members).
        for cls in self.order:
            for ancestor in cls.mro()[1:]:
                if ancestor.refusal is not None and cls.refusal is None:
                    cls.refuse(Why.BASE_CLASS.code, f"base class {ancestor.name} cannot be migrated: "
                                                    f"{ancestor.refusal[1]}")
        for cls in self.order:
            if cls.refusal is not None:
                for decision in cls.moved_tests():
                    decision.leave(*cls.refusal)
                continue
            for decision in cls.moved_tests():
                name = decision.test.name
                for descendant in cls.descendants():
                    if descendant.body.defines(name):
                        decision.leave(Why.OVERRIDDEN.code, f"{Why.OVERRIDDEN.text}: {descendant.name}")
                        break
                    if descendant.refusal is not None:
                        decision.leave(Why.SUBCLASS.code, f"{descendant.name} inherits it and cannot be migrated: "
                                                          f"{descendant.refusal[1]}")
                        break
        for cls in self.order:
            for decision in cls.moved_tests():
                try:
                    self._prepare_rewrite(cls, decision.test)
                except RewriteError as exc:
                    decision.leave(Why.REWRITE.code, f"{Why.REWRITE.text}: {exc}")

    def _prepare_rewrite(self, cls: FamilyClass, test: TestAnalysis) -> None:
        """Record the edits that make ``test`` use the shared PG (raises RewriteError)."""
        edits: Dict[int, FunctionEdits] = {}
        helpers: Dict[int, cst.FunctionDef] = {}
        functions = {id(test.node): test.node}
        for creation in test.creations:
            self._creation_edits(test.node, creation, edits, helpers)
        for helper, statement in getattr(test, "helper_teardown", ()):
            helpers[id(helper)] = helper  # the helper ends in the PG teardown: it is rewritten too
            edit = DROP_FINALLY if isinstance(statement, cst.Try) else REMOVE
            edits.setdefault(id(helper), FunctionEdits.empty()).statements[id(statement)] = edit
        functions.update(helpers)
        for statement in test.teardown:
            owner = next((f for f in functions.values() if _contains(f, statement)), None)
            if owner is None:
                raise RewriteError("its PG teardown is not in the test or a helper distlint rewrites")
            edit = DROP_FINALLY if isinstance(statement, cst.Try) else REMOVE
            edits.setdefault(id(owner), FunctionEdits.empty()).statements[id(statement)] = edit
        rewritten: Dict[int, cst.FunctionDef] = {}
        for key, function_edits in edits.items():
            merged = self.edits.get(key)
            if merged is not None:  # a helper several tests share: the edits must agree
                combined = FunctionEdits({**merged.statements, **function_edits.statements},
                                         merged.decorators | function_edits.decorators)
            else:
                combined = function_edits
            rewritten[key] = apply_edits(functions[key], combined)
        if not has_work_left(rewritten.get(id(test.node), test.node)):
            raise RewriteError("nothing would be left of it without its PG setup and teardown")
        for key, function_edits in edits.items():
            merged = self.edits.get(key)
            self.edits[key] = function_edits if merged is None else FunctionEdits(
                {**merged.statements, **function_edits.statements}, merged.decorators | function_edits.decorators)
            self.functions[key] = functions[key]
            self.rewritten[key] = rewritten[key]
        for key in helpers:
            self.helper_users.setdefault(key, set()).add((cls.name, test.name))

    # -- rewriting one creation -----------------------------------------------------------------
    def _creation_edits(self, function: cst.FunctionDef, creation: PGCreation, edits: Dict[int, FunctionEdits],
                        helpers: Dict[int, cst.FunctionDef]) -> None:
        """Edits that make the PG ``creation`` in ``function`` come from the shared PG."""
        function_edits = edits.setdefault(id(function), FunctionEdits.empty())
        kind = creation.kind
        if kind is CreationKind.DEVICE_MESH:
            return  # init_device_mesh reuses the existing default PG: nothing to change
        if kind is CreationKind.DECORATOR:
            decorator = next((d for d in function.decorators if d is creation.node or d.decorator is creation.node
                              or (isinstance(d.decorator, cst.Call) and d.decorator.func is creation.node)), None)
            if decorator is None:
                raise RewriteError("its PG decorator is not on the test")
            function_edits.decorators.add(id(decorator))
            return
        if kind not in (CreationKind.INIT_PROCESS_GROUP, CreationKind.BACKEND_CONSTRUCTOR, CreationKind.KNOWN_HELPER,
                        CreationKind.SELF_HELPER, CreationKind.LOCAL_FUNCTION):
            raise RewriteError(f"its PG comes from {creation.describe()}")
        helper_call = kind in (CreationKind.SELF_HELPER, CreationKind.LOCAL_FUNCTION)
        if helper_call and creation.bound_name is None:
            inner = creation.inner  # the creation as seen inside the helper the test calls
            helper = creation.helper_chain[0] if creation.helper_chain else creation.helper
            name = creation.chain[0] if creation.chain else "a helper"
            if inner is None or helper is None:
                raise RewriteError(f"distlint cannot tell whether {name}() only creates the PG")
            if not is_factory(helper, inner):
                if kind is CreationKind.LOCAL_FUNCTION:
                    raise RewriteError(f"module function {name}() creates the PG and does test work")
                # The helper does the test's work: rewrite its PG creation there.
                helpers[id(helper)] = helper
                self._creation_edits(helper, inner, edits, helpers)
                for statement in creation.store_statements:
                    function_edits.statements[id(statement)] = REMOVE
                return
        statement = creation.statement
        if statement is None:
            raise RewriteError("the analysis did not locate the statement that creates its PG")
        if creation.bound_name:
            function_edits.statements[id(statement)] = bind_shared_pg(statement, creation.bound_name)
        elif _is_call_line(statement):
            function_edits.statements[id(statement)] = REMOVE
        else:  # e.g. ``with _dynamo_dist_per_rank_init(...):``: removing it would remove the test
            raise RewriteError(f"its PG is created by `{_first_line(statement)}`, which is not a plain call")
        for store in creation.store_statements:
            if not isinstance(store, cst.SimpleStatementLine):
                raise RewriteError(f"its store is built by `{_first_line(store)}`, which is not a plain assignment")
            function_edits.statements[id(store)] = REMOVE

    # -- 5. placement, to a fixed point ------------------------------------------------------
    def _settle(self) -> None:
        for _ in range(64):
            self._compute_shape()
            if not self._validate():
                return
        raise RuntimeError("distlint migrate: the plan did not settle")  # pragma: no cover

    def _compute_shape(self) -> None:
        for cls in self.order:
            inherited = any(a.moved_tests() for a in cls.mro()[1:])
            cls.has_continuous = bool(cls.moved_tests()) or inherited
        for cls in reversed(self.order):  # subclasses come after their bases
            # A class that ran tests (its own or inherited ones) and runs none now goes; a base
            # that never ran a test (a helper base other files may import) stays.
            mro = cls.mro()
            had_tests = any(member.body.tests() for member in mro)
            tests_left = any(member.remaining_test_nodes() for member in mro)
            cls.removed = had_tests and not tests_left and all(child.removed for child in cls.children)
        continuous_demand = self._continuous_demand()
        remaining_demand = self._remaining_demand(continuous_demand)
        for cls in self.order:
            cls.placement = {}
            for unit in cls.body.units:
                if unit.kind not in ("method", "attribute", "class"):
                    continue
                key = id(unit.statement)
                cont, rem = key in continuous_demand, key in remaining_demand
                if cont and rem and cls.has_continuous and _is_literal_attribute(unit):
                    # ``lazy_init = True``: both classes get the line (as a person would write it).
                    cls.placement[key] = "copy"
                elif cont and (rem or not cls.has_continuous):
                    cls.placement[key] = "mixin"
                elif cont:
                    cls.placement[key] = "move"
                elif cls.removed:
                    cls.placement[key] = "drop"
                else:
                    cls.placement[key] = "stay"

    def _implicit_continuous_names(self, cls: FamilyClass) -> Set[str]:
        names = set(RUNTIME_READS)
        if _uses_class_opts(cls.root.analysis):
            names.add("opts")
        return names

    def _closure(self, cls: FamilyClass, roots: Iterable[str], seed_units: Iterable[m.Unit] = ()) -> Set[int]:
        """Units of ``cls``'s same-file MRO reached from ``roots`` names and ``seed_units``."""
        mro = cls.mro()
        by_name: Dict[str, List[m.Unit]] = {}
        for member in mro:
            for unit in member.body.units:
                if unit.kind in ("method", "attribute", "class"):
                    for name in unit.names:
                        by_name.setdefault(name, []).append(unit)
        reached: Set[int] = set()
        pending = list(roots)
        for unit in seed_units:
            pending.extend(self._uses(unit))
        seen: Set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for unit in by_name.get(name, ()):
                if id(unit.statement) not in reached:
                    reached.add(id(unit.statement))
                    pending.extend(self._uses(unit))
        return reached

    def _uses(self, unit: m.Unit) -> FrozenSet[str]:
        rewritten = self.rewritten.get(id(unit.statement))
        users = self.helper_users.get(id(unit.statement), ())
        if rewritten is not None and any(self.classes[c].decisions[t].moved for c, t in users):
            return m.member_uses([rewritten])
        return m.uses_of_unit(unit)

    def _continuous_demand(self) -> Set[int]:
        demand: Set[int] = set()
        for cls in self.order:
            if not cls.has_continuous:
                continue
            roots: Set[str] = self._implicit_continuous_names(cls)
            for member in cls.mro():
                for decision in member.moved_tests():
                    roots |= m.member_uses([self.rewritten.get(id(decision.test.node), decision.test.node)])
            demand |= self._closure(cls, roots)
        return demand

    def _remaining_demand(self, continuous_demand: Set[int]) -> Set[int]:
        demand: Set[int] = set()
        for cls in self.order:
            if cls.removed:
                continue
            roots: Set[str] = {"world_size"}
            seeds: List[m.Unit] = []
            for member in cls.mro():
                for node in member.remaining_test_nodes():
                    roots |= m.member_uses([node])
                for unit in member.body.units:
                    if unit.kind == "hook":
                        roots |= m.member_uses([unit.statement])
                    elif unit.kind in ("method", "attribute", "class") and id(unit.statement) not in continuous_demand:
                        seeds.append(unit)  # stays in its class: what it uses must stay reachable
            demand |= self._closure(cls, roots, seeds)
        return demand

    def _validate(self) -> bool:
        """Refuse what the current shape cannot do; True when something changed (recompute)."""
        changed = False
        # A helper that creates the PG and does test work is rewritten: only moved tests may use it.
        for cls in self.order:
            for unit in cls.body.units:
                key = id(unit.statement)
                users = self.helper_users.get(key)
                if not users or cls.placement.get(key) == "move":
                    continue
                for class_name, test_name in users:
                    decision = self.classes[class_name].decisions[test_name]
                    if decision.moved:
                        decision.leave(Why.SHARED_HELPER.code, f"{Why.SHARED_HELPER.text} ({unit.name})")
                        changed = True
        for cls in self.order:
            mixin = cls.name + "Mixin"
            if cls.refusal is None and "mixin" in cls.placement.values() and mixin in self.top_level_names:
                problem = (Why.NAME_TAKEN.code, f"{Why.NAME_TAKEN.text}: {mixin}")
                for member in self._family_of(cls):
                    for decision in member.moved_tests():
                        decision.leave(*problem)
                cls.refuse(*problem)
                changed = True
        for cls in self.order:
            # A subclass's own tests join the continuous class of its base: same PG or they stay.
            mismatch = self._base_mismatch(cls) if cls.has_continuous and cls is not cls.root else None
            if mismatch is not None and cls.moved_tests():
                for decision in cls.moved_tests():
                    decision.leave(Why.BASE_MISMATCH.code, mismatch)
                changed = True
        for cls in self.order:
            if not cls.has_continuous or cls.refusal is not None:
                continue
            problem = self._continuous_problem(cls)
            if problem is not None:
                cls.refuse(*problem)
                for member in [cls, *cls.descendants()]:
                    for decision in member.moved_tests():
                        decision.leave(*problem)
                # Tests the subclasses inherit from the bases cannot move either.
                for ancestor in cls.mro()[1:]:
                    for decision in ancestor.moved_tests():
                        decision.leave(Why.SUBCLASS.code, f"{cls.name} inherits it and cannot be migrated: "
                                                          f"{problem[1]}")
                changed = True
        return changed

    def _continuous_problem(self, cls: FamilyClass) -> Optional[Tuple[str, str]]:
        """Why ``cls`` cannot get a continuous counterpart in the current shape, or None."""
        if cls.name + self.suffix in self.top_level_names:
            return Why.NAME_TAKEN.code, f"{Why.NAME_TAKEN.text}: {cls.name + self.suffix}"
        # The class's backend, options, timeout and opts() were checked by the analysis
        # (Reason.UNKNOWN_BACKEND, CLASS_OPTIONS, CLASS_TIMEOUT).
        root = cls.root
        mro_units = [u for member in cls.mro() for u in member.body.units]
        for unit in mro_units:
            reserved = set(unit.names) & RESERVED_MEMBERS
            if reserved and self._placement_of(unit) in ("move", "mixin", "copy"):
                return Why.RESERVED_MEMBER.code, f"{Why.RESERVED_MEMBER.text}: {sorted(reserved)[0]}"
        if not _uses_class_opts(root.analysis) and any("opts" in u.names and self._placement_of(u) in ("move", "mixin") for u in mro_units):
            return Why.OPTS_WITH_DEFAULT_OPTIONS.code, ("the moved tests call self.opts(), but their PG uses default "
                                            "options; a continuous class's opts() builds the shared PG")
        return None

    def _base_mismatch(self, cls: FamilyClass) -> Optional[str]:
        """How ``cls``'s tests' PG differs from the one of the continuous class it derives from."""
        facts, root = cls.analysis, cls.root
        for label, mine, theirs in (("backend", facts.backend, root.analysis.backend),
                                    ("timeout", facts.timeout, root.analysis.timeout),
                                    ("options", facts.options, root.analysis.options)):
            if mine is None or theirs is None:
                continue
            mine_text = mine if isinstance(mine, str) else _code(mine)
            theirs_text = theirs if isinstance(theirs, str) else _code(theirs)
            if mine_text != theirs_text:
                return f"its PG {label} `{mine_text}` differs from the `{theirs_text}` of {root.name}'s continuous class"
        return None

    def _placement_of(self, unit: m.Unit) -> Optional[str]:
        for cls in self.order:
            where = cls.placement.get(id(unit.statement))
            if where is not None:
                return where
        return None

    def _family_of(self, cls: FamilyClass) -> List[FamilyClass]:
        top = cls.mro()[-1]
        return [top, *top.descendants()]

    def _classmethod_opts(self) -> Set[int]:
        found: Set[int] = set()
        for cls in self.order:
            if cls.has_continuous and _uses_class_opts(cls.root.analysis):
                for member in cls.mro():
                    found |= {id(u.statement) for u in member.body.units_named("opts")}
        return found

    # -- report -------------------------------------------------------------------------------
    def _report(self) -> FileReport:
        """Every per-test class the analysis sees, with each of its tests: moved, or left and why."""
        report = FileReport(path="")
        for cls in self.order:
            entry = ClassReport(cls.name)
            if cls.has_continuous:
                entry.continuous = cls.name + self.suffix
            if any(where == "mixin" for where in cls.placement.values()):
                entry.mixin = cls.name + "Mixin"
            entry.removed = cls.removed
            for decision in cls.decisions.values():
                if decision.moved:
                    entry.moved.append(decision.test.name)
                else:
                    entry.left.append(LeftBehind(decision.test.name, decision.code, decision.text))
            for name in cls.unanalysed_tests:
                entry.left.append(LeftBehind(name, Why.NOT_ANALYSED.code, Why.NOT_ANALYSED.text))
            for helper, name in self._helper_class_tests(cls):
                entry.left.append(LeftBehind(name, Why.NOT_ANALYSED.code,
                                             f"inherited from {helper}, a class distlint does not analyse"))
            if cls.has_continuous:
                entry.inherits_from = [a.name for a in cls.mro()[1:] if a.moved_tests()][:1]
                if cls is cls.root and not _world_size_defined(cls) and cls.kept_bases:
                    entry.notes.append("world_size is not defined in this file; the continuous class takes it "
                                       "from " + ", ".join(_code(b.value) for b in cls.kept_bases)
                                       + " or the runtime's default")
            if not (entry.moved or entry.left or entry.inherits_from):
                entry.notes.append(self._no_tests_note(cls))
            report.classes.append(entry)
        return report

    def _helper_class_tests(self, cls: FamilyClass) -> List[Tuple[str, str]]:
        """``(class, test)`` for the ``test_*`` methods ``cls`` inherits from same-file classes
        that are not per-test classes (mixins): they run per-test here, and stay."""
        module_classes = {s.name.value: s for s in self.module.body if isinstance(s, cst.ClassDef)}
        own = {name for member in cls.mro() for unit in member.body.units for name in unit.names}
        found: List[Tuple[str, str]] = []
        pending = [b.value.value for b in cls.kept_bases if isinstance(b.value, cst.Name)]
        seen: Set[str] = set()
        while pending:
            name = pending.pop(0)
            helper = module_classes.get(name)
            if helper is None or name in seen or name in self.classes:
                continue
            seen.add(name)
            for statement in helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ():
                test = statement.name.value if isinstance(statement, cst.FunctionDef) else ""
                if test.startswith("test") and test not in own and all(test != t for _, t in found):
                    found.append((name, test))
            pending += [b.value.value for b in helper.bases if isinstance(b.value, cst.Name)]
        return found

    def _no_tests_note(self, cls: FamilyClass) -> str:
        """Why a per-test class lists no test: where the tests it runs are, if anywhere."""
        module_classes = {s.name.value for s in self.module.body if isinstance(s, cst.ClassDef)}
        where: List[str] = []
        ancestors = [a for a in cls.mro()[1:] if a.decisions or a.unanalysed_tests or self._helper_class_tests(a)]
        if ancestors:
            where.append(f"it runs those of {ancestors[0].name} (listed there)")
        elsewhere = [_code(b.value) for b in cls.kept_bases
                     if not (isinstance(b.value, cst.Name) and b.value.value in module_classes)]
        if elsewhere:
            where.append(f"any others come from {', '.join(elsewhere)}, defined elsewhere (not analysed)"
                         if ancestors else
                         f"any it runs come from {', '.join(elsewhere)}, defined elsewhere (not analysed)")
        return "defines no tests of its own; " + "; ".join(where) if where else "defines no tests"


# -- helpers ----------------------------------------------------------------------------------

_uses_class_opts = uses_class_opts


def _world_size_defined(cls: FamilyClass) -> bool:
    return any(member.body.defines("world_size") for member in cls.mro())


def _names_in(nodes: Sequence[cst.CSTNode], wanted: Set[str]) -> List[cst.Name]:
    found: List[cst.Name] = []

    class _Find(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in wanted:
                found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # ``x.ClassName`` is an attribute, not a reference
            return False

    for node in nodes:
        node.visit(_Find())
    return found


def _instantiation_target(statement: cst.BaseStatement, names: QualifiedNames) -> Optional[str]:
    """``X`` for a module-level ``instantiate_parametrized_tests(X)`` statement."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    expression = statement.body[0]
    if not isinstance(expression, cst.Expr) or not isinstance(expression.value, cst.Call):
        return None
    call = expression.value
    written = dotted_name(call.func) or ""
    if written.rsplit(".", 1)[-1] not in _INSTANTIATE:
        return None
    if len(call.args) != 1 or not isinstance(call.args[0].value, cst.Name):
        return None
    return call.args[0].value.value


def _first_line(statement: cst.CSTNode) -> str:
    """The statement's first line of code (its leading comments left out)."""
    return first_line(statement)


def _is_call_line(statement: cst.BaseStatement) -> bool:
    """``f(...)`` alone on its line (what an unbound PG creation looks like)."""
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.Call))


def _contains(root: cst.CSTNode, target: cst.CSTNode) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal found
            if node is target:
                found = True
            return not found

    root.visit(_Find())
    return found


_FACTORY_LEFTOVER_CALLS = frozenset({"barrier", "monitored_barrier", "set_device"})


def is_factory(helper: cst.FunctionDef, inner: PGCreation) -> bool:
    """Whether ``helper`` only creates (and returns) a PG: store, creation, barrier, return."""
    body = helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ()
    accounted = {id(inner.statement), *(id(s) for s in inner.store_statements)}
    for statement in body:
        if id(statement) in accounted or is_docstring(statement):
            continue
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Return):
            if small.value is None or (isinstance(small.value, cst.Name) and small.value.value == inner.bound_name):
                continue
            if _is_default_group(small.value):
                continue
            return False
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            written = dotted_name(small.value.func) or ""
            if written.rsplit(".", 1)[-1] in _FACTORY_LEFTOVER_CALLS:
                continue
            return False
        if isinstance(small, cst.Assign) and _is_default_group(small.value):
            continue
        return False
    return True


def _is_default_group(node: Optional[cst.BaseExpression]) -> bool:
    if isinstance(node, cst.Call):
        node = node.func
    written = dotted_name(node) if node is not None else None
    return bool(written) and (written.endswith("_get_default_group") or written.endswith("group.WORLD"))


def _is_literal_attribute(unit: m.Unit) -> bool:
    """``name = <literal>``: a number, string, True/False/None, or a tuple/list of those."""
    if unit.kind != "attribute" or not isinstance(unit.statement, cst.SimpleStatementLine):
        return False
    for small in unit.statement.body:
        value = getattr(small, "value", None)
        if value is None or not _is_literal(value):
            return False
    return True


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_is_literal(e.value) for e in node.elements)
    return False

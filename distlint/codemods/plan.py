"""Decide what moves where: the migration plan of one module.

(One decision per class and test, read top to bottom; placement, families, factories and
the report (:mod:`distlint.codemods.plan_report`) are their own modules, and what bases from
other modules bring comes with the analysis (:mod:`distlint.analysis.external_bases`).
The next cut, if it grows: the per-base target lookup into codemods/bases/.)

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
  ends up (:mod:`distlint.codemods.placement`);
* ``X`` is removed when it has no tests left and nothing derives from it.

The plan's data is :mod:`distlint.codemods.families`; what is specific to the per-test
base is in :mod:`distlint.codemods.bases`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper

from distlint.analysis.model import (
    ExecutionModel,
    Ineligibility,
    ModuleAnalysis,
    Reason,
    TestAnalysis,
)
from distlint.analysis.names import dotted_name
from distlint.analysis.pg.execution import ClassTable
from distlint.analysis.pg.existing_continuous import (
    DEFAULT_SUFFIX,
    continuous_base_names,
    existing_problem,
)
from distlint.codemods import members as m
from distlint.codemods.bases import BASES
from distlint.codemods.creation_edits import creation_edits
from distlint.codemods.existing import find_existing, module_classes
from distlint.codemods.factories import LOCAL_TENSOR, FactoryLine, factory_line, local_tensor_name
from distlint.codemods.families import Decision, FamilyClass, MigrationPlan, test_variant
from distlint.codemods.frozen import Frozen, applicable_reasons, self_calls
from distlint.codemods.placement import Placer
from distlint.codemods.plan_report import build_report
from distlint.codemods.report import FileReport, Why, no_pg_text
from distlint.codemods.reused_workers import decide_reused_workers
from distlint.codemods.rewrite import (
    DROP_FINALLY,
    REMOVE,
    FunctionEdits,
    RewriteError,
    apply_edits,
    has_work_left,
)
from distlint.codemods.twins import Twins
from distlint.config import Config
from distlint.metadata import node_spans
from distlint.source import decode_source
from distlint.syntax.ast_names import AstNames, build_ast_names

# -- building the plan ----------------------------------------------------------------------


class Planner:
    def __init__(
        self,
        wrapper: MetadataWrapper,
        analysis: ModuleAnalysis,
        twins: Twins,
        config: Config,
        suffix: str,
        hold: Mapping[str, tuple[str, str]] | None = None,
        source: bytes | None = None,
        runtime: str | None = "distlint",
        names: AstNames | None = None,
        frozen: Frozen | None = None,
        tree: ast.Module | None = None,
    ) -> None:
        """``source``: the bytes the module was parsed from (line numbers for messages);
        ``runtime``: what the migrated classes run on (reused workers only on distlint's), None
        when the kept tests stay per test (``--no-reused-workers``); ``analysis``: the facts of
        the ``ast`` tree of the module's text, whose statements ``twins`` pairs with the
        module's; ``names``: that tree's names, as the analysis read them (built here when not
        given); ``frozen``: the classes left out of ``wrapper``'s module (stand-ins there), with
        their report entries; ``tree``: the tree the analysis read, when ``twins`` pair another
        (one with those stand-ins)."""
        self.twins = twins
        self.frozen = frozen or Frozen()
        self.analysed_tree = tree or twins.tree
        self.runtime = runtime
        self.wrapper = wrapper
        self.source = source
        #: ``Class.test`` -> ``(code, text)``: tests to leave in place although they could move
        #: (what ``migrate --verify`` found by running them).
        self.hold = dict(hold or {})
        self.module = wrapper.module
        self.analysis = analysis
        self.config = config
        self.suffix = suffix
        #: What the bases of the classes name (the analysis' own resolution of the same text).
        self.names: AstNames = names if names is not None else build_ast_names(twins.tree)
        self.classes: dict[str, FamilyClass] = {}
        self._members: set[int] | None = None
        self.order: list[FamilyClass] = []
        self.top_level_names: set[str] = set()
        self.instantiations: dict[str, list[FactoryLine]] = {}
        #: Edits per function (tests and helpers), and which tests need which helper rewritten.
        self.edits: dict[int, FunctionEdits] = {}
        self.functions: dict[int, cst.FunctionDef] = {}
        self.helper_users: dict[int, set[tuple[str, str]]] = {}  # id(helper) -> {(class, test)}
        self.rewritten: dict[int, cst.FunctionDef] = {}
        self._code: str | None = None  # the decoded source, once a line number is asked for

    # -- positions (only for messages) ----------------------------------------------------
    def line_of(self, node: cst.CSTNode) -> int:
        # Rare (refusal messages only): the linter's cheap span lookup, which with the module's
        # text generates only the statement holding the node (a large file: ~1 s less a call).
        if self._code is None and self.source is not None:
            self._code = decode_source(self.source, "")
        return node_spans(self.module, [node], self._code)[node][0]

    # -- entry point ----------------------------------------------------------------------
    def plan(self) -> MigrationPlan:
        m.forget_visits()  # what members use is remembered for this module's plan only
        try:
            return self._plan()
        finally:
            m.forget_visits()

    def _plan(self) -> MigrationPlan:
        self._collect()
        self._check_bases()
        self._find_existing()
        self._check_bodies()
        self._check_module_references()
        self._decide_tests()
        placer = Placer(
            self.order, self.rewritten, self.helper_users, self.top_level_names, self.twins.source
        )
        placer.settle()
        if self.runtime is not None:
            decide_reused_workers(self.order, self.runtime, self.hold)
        return MigrationPlan(
            self.module,
            self.twins,
            self.order,
            self.rewritten,
            self.instantiations,
            self._report(),
            self.edits,
            self.functions,
            self.helper_users,
            placer.classmethod_opts(),
        )

    def _report(self) -> FileReport:
        """The report of the classes planned here and of the frozen ones, in module order."""
        frozen = self.frozen
        report = build_report(self.order, self.module, frozen.names)
        if frozen.entries:
            entries = [*zip((c.index for c in self.order), report.classes), *frozen.entries]
            report.classes = [entry for _, entry in sorted(entries, key=lambda pair: pair[0])]
        return report

    # -- 1. the family classes ----------------------------------------------------------------
    def _collect(self) -> None:
        positions = {id(statement): index for index, statement in enumerate(self.module.body)}
        for statement in self.module.body:
            if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
                self.top_level_names.add(statement.name.value)
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    for target in getattr(small, "targets", ()):
                        if isinstance(target.target, cst.Name):
                            self.top_level_names.add(target.target.value)
                    if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(
                        getattr(small, "names", None), cst.ImportStar
                    ):
                        for alias in small.names:  # type: ignore[union-attr]
                            bound = alias.evaluated_alias or alias.evaluated_name.split(".")[0]
                            self.top_level_names.add(bound)
        frozen = self.frozen.names
        for analysis in self.analysis.classes:
            if analysis.model is not ExecutionModel.PER_TEST_SPAWN or analysis.name in frozen:
                continue
            node = self.twins.libcst_class(analysis.node)
            index = positions.get(id(node))
            family = FamilyClass(
                analysis.name,
                node,
                analysis,
                m.classify_body(node),
                -1 if index is None else index,
                self.suffix,
            )
            if index is None:
                family.refuse(
                    Why.CLASS_BODY.code,
                    "the class is defined inside a block (if/try/with); "
                    "distlint only rewrites module-level classes",
                )
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
                    cls.refuse(
                        Why.CLASS_BODY.code,
                        f"the class passes `{base.keyword.value}=` to its bases",
                    )
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
                resolved = self._base_names(cls, base) or {dotted_name(base.value) or ""}
                if not BASES.keys() & {q.rsplit(".", 1)[-1] for q in resolved}:
                    cls.kept_bases.append(
                        base
                    )  # from another module: the analysis read what it brings
            reasons = [
                i
                for i in self._applicable(cls.analysis.ineligible)
                if i.reason is not Reason.BASE_CLASS
            ]
            if reasons:
                cls.refuse(reasons[0].reason.code, reasons[0].describe())

    def _base_names(self, cls: FamilyClass, base: cst.Arg) -> frozenset[str]:
        """The qualified names of a base of ``cls`` (empty when it names nothing known), read
        from its ``ast`` twin: libcst's ``ClassDef.bases`` are the positional bases, in order."""
        twin = self.twins.ast_of(cls.node)
        assert isinstance(twin, ast.ClassDef)
        position = next(i for i, b in enumerate(cls.node.bases) if b is base)
        return self.names.names_of(twin.bases[position])

    def _applicable(self, reasons: list[Ineligibility]) -> list[Ineligibility]:
        return applicable_reasons(reasons, self.suffix)

    def _find_existing(self) -> None:
        """Migrating again: the continuous classes (and mixin) of each class already in the module.
        Whether the default-named one can take the tests is a class reason of the analysis (so
        DL201/DL202 agree); for another ``--class-suffix`` the plan asks the analysis here."""
        classes = module_classes(self.module)
        models = {c.name: c.model for c in self.analysis.classes}
        continuous = continuous_base_names(self.config)
        asked: tuple[ClassTable, AstNames] | None = None  # built when a class is asked about
        for cls in self.order:
            for name in classes:
                if not (name.startswith(cls.name) and name.endswith(self.suffix)):
                    continue
                if name in self.classes or models.get(name) is not ExecutionModel.CONTINUOUS:
                    continue
                problem = None
                if self.suffix != DEFAULT_SUFFIX or name != cls.continuous_name:
                    if asked is None:
                        tree = self.analysed_tree
                        asked = ClassTable.build(tree), self.names
                    table, names = asked
                    problem = existing_problem(
                        cls.analysis, name, table, names, models, continuous, self.suffix
                    )
                found = find_existing(name, classes) if problem is None else None
                if found is not None:
                    cls.existing[name] = found
                elif problem is not None:  # said only if a moved test needs that class
                    cls.existing_problems[name] = problem
            cls.mixin_exists = cls.mixin_name in classes and any(
                dotted_name(b.value) == cls.mixin_name for b in cls.node.bases
            )

    # -- 3. bodies ------------------------------------------------------------------------------
    def _check_bodies(self) -> None:
        for cls in self.order:
            for unit in cls.body.others():
                cls.refuse(
                    Why.CLASS_BODY.code,
                    f"line {self.line_of(unit.statement)} of the class body is "
                    "neither a method nor a class attribute",
                )
            movable = [
                u.statement
                for u in cls.body.units
                if u.kind in ("method", "attribute", "class", "test")
            ]
            problem = m.needs_fixed_class(movable, cls.name)
            if problem:
                cls.refuse(
                    Why.CLASS_BODY.code, f"a member {problem}, which breaks when it changes class"
                )
            if cls.analysis.environment and any(
                cls.body.defines(name) for name in ("setUpClass", "worker_env")
            ):
                cls.refuse(
                    Why.CLASS_BODY.code,
                    "its setUp sets environment the continuous class must declare, "
                    "and it defines setUpClass or worker_env itself",
                )

    def _check_module_references(self) -> None:
        """A class other code uses by name (the analysis found where: ``references``) stays; a
        factory call that reads a moved class's tests follows them (``instantiations``)."""
        family_names = set(self.classes)
        if not family_names:
            return
        refused: set[str] = set()
        for use in self.analysis.references:
            if use.name in family_names and use.name not in refused:
                refused.add(use.name)  # the first use is the one the report names
                self._refuse_reference(use.name, use.node.lineno, use.where)
        for statement in self.module.body:
            factory = factory_line(statement, self.twins)
            if factory is not None and factory.source in family_names:
                self._check_factory(factory)
                self.instantiations.setdefault(factory.source, []).append(factory)

    def _check_factory(self, factory: FactoryLine) -> None:
        """A factory call the continuous class cannot get a twin of keeps the class's tests."""
        cls = self.classes[factory.source]
        problem = factory.problem()
        if problem is None and factory.kind == LOCAL_TENSOR:
            name = local_tensor_name(cls.continuous_name)
            if cls.base.local_tensor_base is None:
                problem = f"{factory.source} is not a DTensor test class; migrate its local tensor twin by hand"
            elif name in self.top_level_names and not self._twin_exists(cls.continuous_name):
                problem = f"the name of the local tensor twin is taken: {name}"
        if problem is not None:
            line = factory.found.statement.lineno
            cls.refuse(Why.FACTORY_CALL.code, f"{problem} (line {line})")

    def _twin_exists(self, continuous: str) -> bool:
        """Migrating again: the module has the continuous class's local tensor twin already."""
        return any(
            f is not None and f.kind == LOCAL_TENSOR and f.source == continuous
            for f in (factory_line(s, self.twins) for s in self.module.body)
        )

    def _refuse_reference(self, name: str, line: int, where: str) -> None:
        cls = self.classes[name]
        cls.refuse(
            Reason.MODULE_REFERENCE.code,
            f"{cls.name} is used {where} (line {line}); migrate it by hand",
        )

    # -- 4. per-test decisions ----------------------------------------------------------------
    def _no_pg_text(self, cls: FamilyClass, test: TestAnalysis) -> str:
        """``no-pg``'s text, naming the helpers of other modules the test calls: a PG created
        there is one the analysis does not see (and the test stays, as it must)."""
        called = self_calls(test.node)
        for member in cls.mro():
            for written, found in member.analysis.external_bases:
                helpers = [
                    name
                    for name in called
                    if name in found.members and not member.body.defines(name)
                ]
                if helpers:
                    return no_pg_text(helpers, written)
        return Why.NO_PG.text

    def _decide_tests(self) -> None:
        for cls in self.order:
            analysed = {t.name for t in cls.analysis.tests}
            for unit in cls.body.tests():
                if unit.name not in analysed:
                    cls.unanalysed_tests.append(unit.name)
            for test in cls.analysis.tests:
                variant = test_variant(test, self.twins.source)
                decision = Decision(test, self.twins.libcst_def(test.node), variant)
                cls.decisions[test.name] = decision
                if not test.creates_pg:
                    decision.leave(Why.NO_PG.code, self._no_pg_text(cls, test))
                elif self._applicable(test.ineligible):
                    reasons = self._applicable(test.ineligible)
                    decision.leave(reasons[0].reason.code, "; ".join(i.describe() for i in reasons))
                else:
                    decision.moved = True
                    if variant and cls.parent is not None:
                        decision.leave(Why.OPTIONS_VARIANT.code, Why.OPTIONS_VARIANT.text)
                held = self.hold.get(f"{cls.name}.{test.name}")
                if held is not None and decision.moved:
                    decision.leave(*held)
        # Class refusals flow down to subclasses (they run the same setUp, the same members).
        for cls in self.order:
            for ancestor in cls.mro()[1:]:
                if ancestor.refusal is not None and cls.refusal is None:
                    cls.refuse(
                        Why.BASE_CLASS.code,
                        f"base class {ancestor.name} cannot be migrated: {ancestor.refusal[1]}",
                    )
        for cls in self.order:
            if cls.refusal is not None:
                for decision in cls.moved_tests():
                    decision.leave(*cls.refusal)
                continue
            for decision in cls.moved_tests():
                name = decision.test.name
                for descendant in cls.descendants():
                    if descendant.body.defines(name):
                        decision.leave(
                            Why.OVERRIDDEN.code, f"{Why.OVERRIDDEN.text}: {descendant.name}"
                        )
                        break
                    if descendant.refusal is not None:
                        decision.leave(
                            Why.SUBCLASS.code,
                            f"{descendant.name} inherits it and cannot be migrated: "
                            f"{descendant.refusal[1]}",
                        )
                        break
        for cls in self.order:
            for decision in cls.moved_tests():
                try:
                    self._prepare_rewrite(cls, decision.test)
                except RewriteError as exc:
                    decision.leave(Why.REWRITE.code, f"{Why.REWRITE.text}: {exc}")

    def _family_members(self) -> set[int]:
        """``id()`` of every statement in the body of a class of a family (what emit rewrites)."""
        if self._members is None:
            self._members = {
                id(statement)
                for family in self.classes.values()
                if isinstance(family.node.body, cst.IndentedBlock)
                for statement in family.node.body.body
            }
        return self._members

    def _prepare_rewrite(self, cls: FamilyClass, test: TestAnalysis) -> None:
        """Record the edits that make ``test`` use the shared PG (raises RewriteError)."""
        twins = self.twins
        edits: dict[int, FunctionEdits] = {}
        helpers: dict[int, cst.FunctionDef] = {}
        node = twins.libcst_def(test.node)
        functions = {id(node): node}
        for creation in test.creations:
            creation_edits(test.node, creation, edits, helpers, twins)
        for helper_def, teardown in test.helper_teardown:
            # The helper ends in the PG teardown: it is rewritten too.
            helper, statement = twins.libcst_def(helper_def), twins.libcst_of(teardown)
            helpers[id(helper)] = helper
            edit = DROP_FINALLY if isinstance(statement, cst.Try) else REMOVE
            edits.setdefault(id(helper), FunctionEdits.empty()).statements[id(statement)] = edit
        for helper in helpers.values():
            if id(helper) not in self._family_members():
                # Only the classes of a family are emitted: a rewrite of a helper elsewhere (a
                # same-file mixin, a module function) would be lost, and the moved test would
                # create or destroy a PG on the shared one.
                raise RewriteError(
                    f"its PG is created or torn down in {helper.name.value}(), "
                    "which is not a method of a class distlint migrates"
                )
        functions.update(helpers)
        for statement in map(twins.libcst_of, test.teardown):
            owner = next((f for f in functions.values() if _contains(f, statement)), None)
            if owner is None:
                raise RewriteError(
                    "its PG teardown is not in the test or a helper distlint rewrites"
                )
            edit = DROP_FINALLY if isinstance(statement, cst.Try) else REMOVE
            edits.setdefault(id(owner), FunctionEdits.empty()).statements[id(statement)] = edit
        rewritten: dict[int, cst.FunctionDef] = {}
        for key, function_edits in edits.items():
            # A helper several tests share: its edits are those of every test calling it.
            rewritten[key] = apply_edits(
                functions[key], _merged(self.edits.get(key), function_edits)
            )
        if not has_work_left(rewritten.get(id(node), node)):
            raise RewriteError("nothing would be left of it without its PG setup and teardown")
        for key, function_edits in edits.items():
            self.edits[key] = _merged(self.edits.get(key), function_edits)
            self.functions[key] = functions[key]
            self.rewritten[key] = rewritten[key]
        for key in helpers:
            self.helper_users.setdefault(key, set()).add((cls.name, test.name))


# -- helpers ----------------------------------------------------------------------------------


def _merged(earlier: FunctionEdits | None, edits: FunctionEdits) -> FunctionEdits:
    """The edits of a function another moved test already edits (a shared helper): both sets."""
    if earlier is None:
        return edits
    return FunctionEdits(
        {**earlier.statements, **edits.statements}, earlier.decorators | edits.decorators
    )


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

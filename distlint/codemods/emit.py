"""The emitter of ``distlint migrate``: builds the new module from a
:class:`~distlint.codemods.families.MigrationPlan` (the continuous classes, their mixins and
options variants, factory twins, the imports and the main block's runner).

:mod:`distlint.codemods.migrate_continuous` runs one file end to end and calls
:class:`Emitter`; :mod:`distlint.codemods.plan` decides what moves where.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper

from distlint.analysis.mainblock.fix import ensure_main_block
from distlint.analysis.pg.class_eligibility import uses_class_opts
from distlint.analysis.pg.eligibility import OptionsVariant
from distlint.analysis.walk import statement_nodes
from distlint.codemods import members as m
from distlint.codemods.bases.multi_process_test_case import (
    environment_statements,
    gloo_options_statements,
)
from distlint.codemods.bases.spec import Target, class_statements
from distlint.codemods.existing import ExistingClass, extended, module_classes
from distlint.codemods.factories import LOCAL_TENSOR, FactoryLine, factory_line, twin
from distlint.codemods.families import FamilyClass, MigrationPlan, Placement
from distlint.codemods.layout import (
    INDENT,
    LINE_LENGTH,
    class_header_layout,
    import_layout,
    pep8_spaced,
)
from distlint.codemods.main_block_runner import finish_runner, point_runner_at_placeholder
from distlint.codemods.options import RUNTIME_MODULES, MigrateOptions
from distlint.codemods.reused_workers import (
    REUSED_WORKERS_BASE,
    declare_environment,
    setup_on_ranks,
    spawn_statements,
    swapped_bases,
)
from distlint.codemods.rewrite import (
    DROP_FINALLY,
    REMOVE,
    constant_property_as_attribute,
    leaving_class,
    strip_blank_leading,
    to_classmethod,
)
from distlint.cst_utils import code_of
from distlint.imports import ImportChanges, ImportSpec, add_imports
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_RUNNER_MODULE

# -- building the new module ---------------------------------------------------------------


class Emitter:
    def __init__(
        self,
        plan: MigrationPlan,
        wrapper: MetadataWrapper,
        options: MigrateOptions,
        runners: Sequence[str],
        source: bytes | ast.Module | None = None,
        elsewhere: Sequence[tuple[str, ast.stmt]] = (),
        parsed_text: str | None = None,
    ) -> None:
        """``source``: the bytes ``wrapper``'s module was parsed from, or their stdlib ``ast`` tree
        (saves printing it again); ``elsewhere``: the file's code outside that module, each
        statement with its text (the imports it reads stay); ``parsed_text``: the text the
        module was parsed from (the code of the statements the edits keep is their lines)."""
        self.plan = plan
        self.wrapper = wrapper
        self.options = options
        #: The ``runners`` config: what runs the tests, as DL101-DL104 see it.
        self.runners = tuple(runners)
        self.runtime_module = RUNTIME_MODULES[options.runtime]
        # Imports the new classes need, and those of removed code, applied once at the end.
        self.imports = ImportChanges(wrapper, source, elsewhere, plan.twins.ast_statements)
        if parsed_text is not None:
            self.imports.code.remember_parsed(plan.module, parsed_text, plan.twins.ast_of)
        #: Whether a continuous base of ``--runtime distlint`` is used (the runner switches).
        self.uses_base = False
        #: Names to import (continuous bases, world-size constants), with the name each is bound to.
        self.needed: dict[Target, str] = {}
        self.by_node = {id(c.node): c for c in plan.classes}
        #: Migrating again: what existing classes get, by ``id()`` of the class: statements to
        #: append and bases to put first (a mixin created now).
        self.additions: dict[int, tuple[list[cst.BaseStatement], list[str]]] = {}
        self.module_classes = module_classes(plan.module)
        #: ``(kind, class)`` of the factory calls already in the module (twins of a first run).
        self.factories = {
            (f.kind, f.source)
            for f in (factory_line(s, plan.twins) for s in plan.module.body)
            if f is not None
        }

    # -- names ------------------------------------------------------------------------------
    def _use(self, target: Target) -> str:
        """The name ``target`` is used by in the new module: its own, or an alias when the module
        binds that name otherwise (``DistlintMultiProcContinuousTest``)."""
        bound = self.needed.get(target)
        if bound is None:
            bound = self.needed[target] = self._free_name(target)
        return bound

    def _free_name(self, target: Target) -> str:
        alias = f"{self.options.runtime.capitalize()}{target.name}"
        for statement in self.plan.module.body:
            if isinstance(statement, cst.ClassDef) and statement.name.value == target.name:
                return alias
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(
                    small.names, cst.ImportStar
                ):
                    module = code_of(small.module) if small.module is not None else ""
                    for name in small.names:
                        bound = name.evaluated_alias or name.evaluated_name
                        if bound == target.name and (
                            module != target.module or name.evaluated_name != target.name
                        ):
                            return alias
        return target.name

    def _continuous_base(self, cls: FamilyClass) -> str:
        target = cls.base.targets[self.options.runtime]
        if target.module.startswith(DISTLINT_RUNTIME):
            self.uses_base = True
        return self._use(target)

    # -- the module ---------------------------------------------------------------------------
    def module(self) -> cst.Module:
        body: list[cst.BaseStatement] = []
        instantiated = {
            id(f.statement): f for factories in self.plan.instantiations.values() for f in factories
        }
        # Classes first: they say what the continuous classes already in the module get.
        emitted = {id(cls.node): self._emit_class(cls) for cls in self.plan.classes}
        for statement in self.plan.module.body:
            if id(statement) in emitted:
                body.extend(
                    c
                    if c is statement or not isinstance(c, cst.ClassDef)
                    else class_header_layout(c)
                    for c in emitted[id(statement)]
                )
                continue
            factory = instantiated.get(id(statement))
            if factory is not None:
                body.extend(self._emit_factory(factory, self._family(factory.source)))
                continue
            added = self.additions.get(id(statement))
            if added is not None and isinstance(statement, cst.ClassDef):
                statement = extended(statement, *added)
            body.append(statement)
        module = self.plan.module.with_changes(body=body)
        switch_runner = self.uses_base
        if switch_runner:
            module, replaced, note = point_runner_at_placeholder(module, self.runners)
            if note:
                self.plan.report.notes.append(note)
            if replaced is not None:
                self._schedule_removal([replaced])
            switch_runner = replaced is not None
        module = self._fix_imports(module)
        if switch_runner:
            module, (runner_module, runner, alias) = finish_runner(module)
            module = add_imports(module, [ImportSpec(runner_module, runner, alias)])
        module = _ensure_main_block(module, self.options, self.runners)
        return import_layout(self.plan.module, module)

    def _family(self, name: str) -> FamilyClass:
        return next(c for c in self.plan.classes if c.name == name)

    def _emit_factory(self, factory: FactoryLine, cls: FamilyClass) -> list[cst.BaseStatement]:
        """The factory call for the continuous class too (alone when the class is gone)."""
        if not cls.has_continuous:
            return [factory.statement]
        local_base = None
        if factory.kind == LOCAL_TENSOR:
            assert cls.base.local_tensor_base is not None  # the plan refused the class otherwise
            local_base = self._use(cls.base.local_tensor_base[self.options.runtime])
        # With torch's tests mixin, the mixin is instantiated (the concrete classes inherit the
        # generated tests; instantiate_parametrized_tests cannot delete an inherited template).
        copies: list[cst.BaseStatement] = []
        for variant in [
            (),
            *cls.variants(),
        ]:  # every continuous class of the tests, one per options value
            target = (
                self._tests_mixin_name(cls, variant)
                if self._tests_mixin(cls)
                else cls.variant_name(variant)
            )
            if (factory.kind, target) in self.factories:
                continue  # migrating again: the twin is there
            copies.append(
                twin(factory, target, local_base, keep_leading=cls.removed and not copies)
            )
        return copies if cls.removed else [factory.statement, *copies]

    def _emit_class(self, cls: FamilyClass) -> list[cst.BaseStatement]:
        mixin_units = cls.units_placed(Placement.MIXIN)
        if not (cls.has_continuous or mixin_units or cls.removed or cls.reused):
            return [cls.node]
        out: list[cst.BaseStatement] = []
        if mixin_units and cls.mixin_exists:  # migrating again: the members join it
            mixin = self.module_classes[cls.mixin_name]
            self._add(mixin, [self._unit_statement(cls, u) for u in mixin_units])
        elif mixin_units:
            out.append(self._mixin(cls, mixin_units))
        if not cls.removed:
            out.append(self._remaining(cls, bool(mixin_units)))
        else:
            self._schedule_removal([u.statement for u in cls.body.units if u.kind == "hook"])
            self._schedule_removal([b.value for b in cls.node.bases])
        self._schedule_removal([u.statement for u in cls.units_placed(Placement.DROP)])
        if cls.has_continuous:
            out.extend(self._continuous(cls, bool(mixin_units)))
            for variant in cls.variants():  # a continuous class (a pool) per options value
                out.extend(self._continuous(cls, bool(mixin_units), variant))
        return out

    # -- the three classes --------------------------------------------------------------------
    def _unit_statement(self, cls: FamilyClass, unit: m.Unit) -> cst.BaseStatement:
        """A member as it appears in its new home (opts() as a classmethod, helpers rewritten)."""
        statement = unit.statement
        rewritten = self.plan.rewritten.get(id(statement))
        if rewritten is not None and self.plan.rewrite_active(id(statement)):
            self._schedule_edit_removals(id(statement))
            statement = rewritten
        if id(unit.statement) in self.plan.classmethod_opts and isinstance(
            statement, cst.FunctionDef
        ):
            statement = to_classmethod(statement)
        if isinstance(statement, cst.FunctionDef) and statement.name.value == "world_size":
            attribute = constant_property_as_attribute(statement)
            if attribute is not None:
                return attribute
        return leaving_class(statement, cls.name)

    def _mixin(self, cls: FamilyClass, units: Sequence[m.Unit]) -> cst.ClassDef:
        partner = (
            cls.continuous_name if cls.has_continuous else "the continuous classes derived from it"
        )
        text = f"Members {cls.name} shares with {partner}."
        if cls.has_continuous and cls.variants():  # a continuous class per options value
            text = (
                f"Members {cls.name}'s continuous classes share."
                if cls.removed
                else f"Members {cls.name} shares with its continuous classes."
            )
        docstring = cst.SimpleStatementLine(body=[cst.Expr(cst.SimpleString(f'"""{text}"""'))])
        statements = [docstring] + [self._unit_statement(cls, u) for u in units]
        return cst.ClassDef(
            name=cst.Name(cls.mixin_name),
            body=cst.IndentedBlock(body=pep8_spaced(statements)),
            leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
        )

    def _remaining(self, cls: FamilyClass, has_mixin: bool) -> cst.ClassDef:
        moved_tests = {id(d.node) for d in cls.moved_tests()}
        kept: list[cst.BaseStatement] = []
        for unit in cls.body.units:
            key = id(unit.statement)
            if unit.kind == "test" and key in moved_tests:
                continue
            if unit.kind == "hook" and cls.reused:
                # It spawned the ranks (and removed the store file): the pool does both now. A
                # setUp that also sets environment keeps that part: it runs on the ranks.
                kept_setup = setup_on_ranks(unit.statement, self.plan.twins)
                if kept_setup is None:
                    self._schedule_removal([unit.statement])
                    continue
                self._schedule_removal(spawn_statements(unit.statement, self.plan.twins))
                kept.append(kept_setup)
                continue
            if unit.kind in ("method", "attribute", "class") and cls.placement.get(key) not in (
                Placement.STAY,
                Placement.COPY,
            ):
                continue
            kept.append(unit.statement)
        if not any(not m.is_noise(s) for s in kept):
            kept = [s for s in kept if not m.is_noise(s)] or [
                cst.SimpleStatementLine(body=[cst.Pass()])
            ]
        node = cls.node
        bases = list(node.bases)
        if cls.reused:
            kept = declare_environment(cls, kept, self.options.runtime)
            if cls.parent is None:
                self.uses_base = True
                bases, replaced = swapped_bases(cls, self._use(REUSED_WORKERS_BASE))
                self._schedule_removal(replaced)
        if kept:
            kept[0] = strip_blank_leading(kept[0])
        body = (
            node.body.with_changes(body=kept)
            if isinstance(node.body, cst.IndentedBlock)
            else node.body
        )
        if has_mixin and not cls.mixin_exists:
            bases.insert(0, cst.Arg(cst.Name(cls.mixin_name)))
        return node.with_changes(body=body, bases=bases)

    def _continuous(
        self, cls: FamilyClass, has_mixin: bool, variant: OptionsVariant = ()
    ) -> list[cst.ClassDef]:
        """``X<Suffix>``, or with ``variant`` the class of the tests using those options."""
        existing = cls.existing_for(variant)
        if existing is not None:
            self._join(cls, existing, has_mixin, variant)
            return []
        statements: list[cst.BaseStatement] = []
        docstring = cls.body.docstring
        if cls.removed and docstring is not None and not variant:
            statements.append(docstring.statement)
        # Class attributes first, then what the runtime reads, then methods and tests in source order.
        statements += [
            self._unit_statement(cls, u)
            for u in cls.body.units
            if u.kind == "attribute"
            and cls.placement.get(id(u.statement)) in (Placement.MOVE, Placement.COPY)
        ]
        statements.extend(self._environment(cls))
        if cls is cls.root:
            statements.extend(self._class_facts(cls))
            if variant:
                statements.append(
                    _variant_opts(variant, [d.test.name for d in cls.moved_tests_of(variant)])
                )
        # Copied members (attributes, helpers, the docstring) now appear in two classes, and a
        # member moved with the tests in each class of a variant: one tree, distinct nodes. A
        # moved test appears once (its class lost it) and is most of the body: not copied.
        statements = [s.deep_clone() for s in statements]
        moved_tests = {id(d.node) for d in cls.moved_tests_of(variant)}
        for unit in cls.body.units:
            key = id(unit.statement)
            if unit.kind == "test" and key in moved_tests:
                self._schedule_edit_removals(key)
                statements.append(
                    leaving_class(self.plan.rewritten.get(key, unit.statement), cls.name)
                )
            elif unit.kind in ("method", "class") and cls.placement.get(key) in (
                Placement.MOVE,
                Placement.COPY,
            ):
                member = self._unit_statement(cls, unit)
                # A member that moves to the one continuous class appears once, as a moved test
                # does: cloning it (most of a helper-heavy class) would only cost.
                once = cls.placement.get(key) is Placement.MOVE and not cls.variants()
                statements.append(member if once else member.deep_clone())
        node = cls.node
        body = cst.IndentedBlock(
            body=pep8_spaced(statements) or [cst.SimpleStatementLine(body=[cst.Pass()])]
        )
        leading = (
            node.leading_lines
            if cls.removed and not variant
            else [cst.EmptyLine(), cst.EmptyLine()]
        )
        name = cls.variant_name(variant)
        bases = self._continuous_bases(cls, has_mixin, variant)
        if not self._tests_mixin(cls):
            continuous = cst.ClassDef(
                name=cst.Name(name),
                bases=[cst.Arg(_expression(n)) for n in bases],
                body=body,
                decorators=[d.deep_clone() for d in node.decorators],
                leading_lines=leading,
            )
            return [continuous]
        # torch's MultiProcContinuousTest keeps its workers on the class, so a subclass of a concrete
        # continuous class inherits its base's (finished) workers (pytorch/pytorch#191745): the tests
        # go to a mixin, and every concrete class derives from MultiProcContinuousTest directly.
        continuous_base = self._continuous_base(cls)
        tests_name = self._tests_mixin_name(cls, variant)
        tests = cst.ClassDef(
            name=cst.Name(tests_name),
            bases=[cst.Arg(_expression(n)) for n in bases if n != continuous_base],
            body=body,
            leading_lines=leading,
        )
        concrete = cst.ClassDef(
            name=cst.Name(name),
            bases=[cst.Arg(_expression(tests_name)), cst.Arg(_expression(continuous_base))],
            body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])]),
            decorators=[d.deep_clone() for d in node.decorators],
            leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
        )
        return [tests, concrete]

    def _add(
        self, node: cst.ClassDef, statements: list[cst.BaseStatement], bases: Sequence[str] = ()
    ) -> None:
        added, first = self.additions.setdefault(id(node), ([], []))
        added.extend(statements)
        first.extend(b for b in bases if b not in first)

    def _join(
        self, cls: FamilyClass, existing: ExistingClass, has_mixin: bool, variant: OptionsVariant
    ) -> None:
        """Migrating again: the tests of ``variant`` (and the members only they use) join the
        continuous class already in the module; its world size, backend, opts() are there."""
        statements: list[cst.BaseStatement] = []
        moved_tests = {id(d.node) for d in cls.moved_tests_of(variant)}
        units = [u for u in cls.body.units if u.kind == "attribute"] + [
            u for u in cls.body.units if u.kind != "attribute"
        ]
        for unit in units:
            key = id(unit.statement)
            if unit.kind == "test" and key in moved_tests:
                self._schedule_edit_removals(key)
                statements.append(
                    leaving_class(self.plan.rewritten.get(key, unit.statement), cls.name)
                )
            elif (
                unit.kind in ("method", "class", "attribute")
                and cls.placement.get(key) in (Placement.MOVE, Placement.COPY)
                and not set(unit.names) & existing.provided
            ):
                statements.append(self._unit_statement(cls, unit))
        mixin = [cls.mixin_name] if has_mixin and cls.mixin_name not in existing.bases else []
        if statements or mixin:
            self._add(existing.target, statements, mixin)

    def _tests_mixin(self, cls: FamilyClass) -> bool:
        """Whether ``cls``'s continuous tests go to a mixin: with torch's class, when a subclass's
        continuous class derives from it."""
        if any(e.target.name.value == e.name for e in cls.existing.values()):
            return (
                False  # migrating again: the shape the module has (classes without a tests mixin)
            )
        return self.options.runtime == "torch" and any(
            child.has_continuous for child in cls.children
        )

    @staticmethod
    def _tests_mixin_name(cls: FamilyClass, variant: OptionsVariant = ()) -> str:
        name = f"{cls.variant_name(variant)}Tests"
        return f"_{name}" if name.startswith("Test") else name  # pytest would collect a Test* mixin

    def _class_facts(self, cls: FamilyClass) -> list[cst.BaseStatement]:
        """world_size / timeout / backend_str() of the class that derives from the continuous base."""
        # Without a world size of its own or from a kept base, the class had its base's default.
        default_world_size = not cls.mro_defines("world_size") and not any(
            member.kept_bases for member in cls.mro()
        )
        constant = cls.base.default_world_size.get(self.options.runtime)
        if default_world_size and constant is not None:
            self.needed[constant] = constant.name
        out = class_statements(
            cls.base, self.options.runtime, cls.analysis, default_world_size, self.plan.twins.source
        )
        if (
            self.options.runtime == "torch"
            and cls.analysis.backend == "gloo"
            and uses_class_opts(cls.analysis)
            and not cls.mro_defines("_init_pg")
        ):
            out += gloo_options_statements(self._torch_distributed())
        return out

    def _torch_distributed(self) -> str:
        """The name the module binds ``torch.distributed`` to (``import torch.distributed as dist``
        is added when it binds none)."""
        for statement in self.plan.module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Import):
                    for name in small.names:
                        if name.evaluated_name == "torch.distributed":
                            return name.evaluated_alias or "torch.distributed"
        self.imports.add(ImportSpec("torch.distributed", None, "dist"))
        return "dist"

    def _environment(self, cls: FamilyClass) -> list[cst.BaseStatement]:
        """The environment the per-test setUp gave the ranks, unless the continuous base class has it."""
        environment = cls.analysis.environment
        if (
            cls is not cls.root
            and cls.parent is not None
            and cls.parent.analysis.environment == environment
        ):
            return []  # inherited from the parent's continuous class
        if environment and self.options.runtime == "torch":
            self.imports.add(ImportSpec("os"))
            self.imports.add(ImportSpec("unittest.mock"))
        return environment_statements(environment, self.options.runtime)

    def _continuous_bases(
        self, cls: FamilyClass, has_mixin: bool, variant: OptionsVariant = ()
    ) -> list[str]:
        names: list[str] = [cls.mixin_name] if has_mixin else []
        names += self._bases_in_order(cls, variant)
        continuous_base = self._continuous_base(cls)
        if self.options.runtime == "torch" and continuous_base not in names:
            names.append(continuous_base)  # the parent's tests come from its mixin
        seen: set[str] = set()
        return [n for n in names if not (n in seen or seen.add(n))]  # type: ignore[func-returns-value]

    def _bases_in_order(self, cls: FamilyClass, variant: OptionsVariant = ()) -> list[str]:
        out: list[str] = []
        for base in cls.node.bases:
            if (
                cls.parent is not None
                and isinstance(base.value, cst.Name)
                and base.value.value == cls.parent.name
            ):
                parent = cls.parent
                if parent.has_continuous and self._tests_mixin(parent):
                    out.append(self._tests_mixin_name(parent, variant))
                elif parent.has_continuous:
                    out.append(parent.variant_name(variant))
                else:
                    if parent.has_mixin:
                        out.append(parent.mixin_name)
                    out += self._bases_in_order(parent, variant)
            elif any(base is kept for kept in cls.kept_bases):
                out.append(code_of(base.value))
            else:  # the per-test base (MultiProcessTestCase, DTensorTestBase, ...)
                out.append(self._continuous_base(cls))
        return out

    # -- imports ----------------------------------------------------------------------------
    def _schedule_removal(self, nodes: Sequence[cst.CSTNode]) -> None:
        for node in nodes:
            self.imports.remove_used_by(node)

    def _schedule_edit_removals(self, key: int) -> None:
        """Imports only the removed/replaced statements of a rewritten function used."""
        edits = self.plan.edits.get(key)
        if edits is None:
            return
        removed: list[cst.CSTNode] = []
        function = self.plan.functions[key]
        # Edits name statements and decorators, never expressions: index those alone.
        index = {id(node): node for node in statement_nodes(function)}
        for node_id, edit in edits.statements.items():
            node = index.get(node_id)
            if node is None:
                continue
            if edit == REMOVE:
                removed.append(node)
            elif edit == DROP_FINALLY and isinstance(node, cst.Try) and node.finalbody is not None:
                removed.append(node.finalbody)
            elif isinstance(node, cst.SimpleStatementLine):
                removed.extend(getattr(small, "value", small) for small in node.body)
        removed += [index[d] for d in edits.decorators if d in index]
        self._schedule_removal(removed)

    def code(self, module: cst.Module) -> str:
        """``module.code`` of what :meth:`module` returned, reusing the text printed for the
        unused-import pass."""
        return self.imports.code.of(module)

    def _fix_imports(self, module: cst.Module) -> cst.Module:
        for target, bound in self.needed.items():
            self.imports.add(
                ImportSpec(target.module, target.name, None if bound == target.name else bound)
            )
        return self.imports.apply(module)


def _variant_opts(variant: OptionsVariant, tests: Sequence[str]) -> cst.FunctionDef:
    """``opts()`` of the continuous class for an options variant: the runtime builds its PG with it."""
    params = ", ".join(f"{keyword}={value}" for keyword, value in variant)
    passed = ", ".join(f"{keyword}={keyword}" for keyword, _ in variant)
    # The docstring wrapped as it will be indented (a method of a module-level class).
    text = f"The PG options of {', '.join(tests)}: opts({params})."
    docstring = f"\n{2 * INDENT}".join(textwrap.wrap(text, LINE_LENGTH - len(2 * INDENT) - 6))
    source = (
        f"@classmethod\ndef opts(cls, {params}, **kwargs):\n"
        f'    """{docstring}"""\n'
        f"    return super().opts({passed}, **kwargs)\n"
    )
    return cst.ensure_type(cst.parse_statement(source), cst.FunctionDef)


def _ensure_main_block(
    module: cst.Module, options: MigrateOptions, runners: Sequence[str]
) -> cst.Module:
    """The ``__main__`` block that runs the tests (the DL101 fix, with the same ``runners``)."""
    runner = DISTLINT_RUNTIME if options.runtime == "distlint" else TORCH_RUNNER_MODULE
    return ensure_main_block(module, runner_module=runner, runners=runners)


def _expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)

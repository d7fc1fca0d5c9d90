"""The migration plan's data: families of per-test classes, each test's decision, each member's place.

:mod:`distlint.codemods.plan` fills it (what moves), :mod:`distlint.codemods.placement`
places the members, and :mod:`distlint.codemods.migrate_continuous` emits the new module
from it. A *family* is a per-test class and its same-file subclasses.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

import libcst as cst

from distlint.analysis.model import ClassAnalysis, TestAnalysis
from distlint.analysis.pg.eligibility import OptionsVariant, options_variant
from distlint.analysis.pg.existing_continuous import MIXIN_SUFFIX
from distlint.codemods import members as m
from distlint.codemods.bases import base_named
from distlint.codemods.bases.spec import PerTestBase
from distlint.codemods.existing import ExistingClass
from distlint.codemods.factories import FactoryLine
from distlint.codemods.report import FileReport
from distlint.codemods.rewrite import FunctionEdits
from distlint.codemods.twins import Twins
from distlint.syntax.ast_nodes import Source


class Placement(enum.Enum):
    """Where a member of a per-test class goes (decided per member by the placement step)."""

    #: Only the continuous class's code uses it: it moves to ``X<Suffix>``.
    MOVE = "move"
    #: A literal class attribute both classes use: each gets the line (as a person would write it).
    COPY = "copy"
    #: Both classes use it: it goes to ``X<Mixin>``, from which both derive.
    MIXIN = "mixin"
    #: Only the per-test class uses it.
    STAY = "stay"
    #: Its class is removed and nothing uses it.
    DROP = "drop"


def test_variant(test: TestAnalysis, source: Source) -> OptionsVariant:
    """The options variant ``test``'s PG uses (``self.opts(threads=8)``); ``()`` for the class's
    options (``source``: the text the analysis read)."""
    for creation in test.creations:
        variant = options_variant(creation.options, source)
        if variant is not None:
            return variant
    return ()


def variant_tag(variant: OptionsVariant) -> str:
    """``(("threads", "8"),)`` -> ``Threads8``: the part of the class name that says the options."""
    parts = []
    for keyword, value in variant:
        parts.append("".join(word.capitalize() for word in keyword.split("_")))
        value = re.sub(r"\W", "", value.replace("-", "Minus").replace(".", "_"))
        parts.append(value[:1].upper() + value[1:])
    return "".join(parts)


@dataclass
class Decision:
    test: TestAnalysis
    #: The test's def in the libcst module (the twin of ``test.node``), what emit moves.
    node: cst.FunctionDef
    #: The options variant its PG uses (:func:`test_variant`).
    variant: OptionsVariant = ()
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
    #: ``--class-suffix``: the continuous class is ``<name><suffix>``.
    suffix: str
    parent: FamilyClass | None = None
    children: list[FamilyClass] = field(default_factory=list)
    #: Bases kept on the continuous class (same-file helpers, external mixins).
    kept_bases: list[cst.Arg] = field(default_factory=list)
    refusal: tuple[str, str] | None = None
    decisions: dict[str, Decision] = field(default_factory=dict)
    #: Test methods the analysis does not list (``testFoo``): they stay.
    unanalysed_tests: list[str] = field(default_factory=list)
    #: Results.
    has_continuous: bool = False
    removed: bool = False
    #: The tests it keeps run on reused workers: the family's root derives from ReusedWorkersTest
    #: instead of its per-test base (:mod:`distlint.codemods.reused_workers`).
    reused: bool = False
    placement: dict[int, Placement] = field(
        default_factory=dict
    )  # id(unit.statement) -> where it goes
    notes: list[str] = field(default_factory=list)
    #: Migrating again: the continuous classes of this class already in the module, by name
    #: (``X<Suffix>``, options-variant classes), which moved tests join instead of new ones.
    existing: dict[str, ExistingClass] = field(default_factory=dict)
    #: Classes with those names that cannot take the tests: name -> why.
    existing_problems: dict[str, str] = field(default_factory=dict)
    #: ``X<Mixin>`` is already in the module and ``X`` derives from it: shared members join it.
    mixin_exists: bool = False

    @property
    def base(self) -> PerTestBase:
        """The per-test base the class (through its same-file bases) runs on."""
        return base_named(self.root_analysis.per_test_base)

    @property
    def root_analysis(self) -> ClassAnalysis:
        top = self
        while top.parent is not None:
            top = top.parent
        return top.analysis

    @property
    def continuous_name(self) -> str:
        return self.name + self.suffix

    def variant_name(self, variant: OptionsVariant) -> str:
        """The continuous class of the tests using options ``variant`` (``X<Threads8><Suffix>``;
        ``X<Suffix>Opts2`` when the options do not make a distinct name)."""
        if not variant:
            return self.continuous_name
        variants = self.variants()
        tags = [variant_tag(v) for v in variants]
        index = variants.index(variant)
        tag = tags[index]
        if not tag.isidentifier() or tags.count(tag) > 1:
            return f"{self.continuous_name}Opts{index + 2}"
        return self.name + tag + self.suffix

    def variants(self) -> list[OptionsVariant]:
        """The options variants of the tests moved from this class and its same-file bases (each
        gets a continuous class of its own, a pool per options value), in source order."""
        found: list[OptionsVariant] = []
        for member in reversed(self.mro()):
            for decision in member.moved_tests():
                variant = decision.variant
                if variant and variant not in found:
                    found.append(variant)
        return found

    def existing_for(self, variant: OptionsVariant = ()) -> ExistingClass | None:
        """The continuous class already in the module that the tests of ``variant`` join, if any."""
        return self.existing.get(self.variant_name(variant))

    def new_classes_needed(self) -> bool:
        """Whether some moved test needs a continuous class that is not in the module yet."""
        return any(self.existing_for(v) is None for v in [(), *self.variants()])

    def moved_tests_of(self, variant: OptionsVariant) -> list[Decision]:
        return [d for d in self.moved_tests() if d.variant == variant]

    @property
    def mixin_name(self) -> str:
        return self.name + MIXIN_SUFFIX

    def refuse(self, code: str, text: str) -> None:
        if self.refusal is None:
            self.refusal = (code, text)

    def mro(self) -> list[FamilyClass]:
        out: list[FamilyClass] = []
        cursor: FamilyClass | None = self
        while cursor is not None:
            out.append(cursor)
            cursor = cursor.parent
        return out

    def descendants(self) -> list[FamilyClass]:
        out = []
        for child in self.children:
            out.append(child)
            out.extend(child.descendants())
        return out

    def moved_tests(self) -> list[Decision]:
        return [d for d in self.decisions.values() if d.moved]

    def remaining_test_nodes(self) -> list[cst.FunctionDef]:
        moved = {d.test.name for d in self.moved_tests()}
        return [u.statement for u in self.body.tests() if u.name not in moved]  # type: ignore[misc]

    def units_placed(self, where: Placement) -> list[m.Unit]:
        return [u for u in self.body.units if self.placement.get(id(u.statement)) is where]

    @property
    def has_mixin(self) -> bool:
        return Placement.MIXIN in self.placement.values()

    def mro_defines(self, name: str) -> bool:
        """Whether the class or a same-file base defines ``name``."""
        return any(member.body.defines(name) for member in self.mro())

    @property
    def root(self) -> FamilyClass:
        """The class whose continuous counterpart derives from the continuous base directly."""
        cursor = self
        while cursor.parent is not None and cursor.parent.has_continuous:
            cursor = cursor.parent
        return cursor


@dataclass
class MigrationPlan:
    module: cst.Module
    #: The module's ``ast`` statements (what the analysis's facts hold) paired with its own.
    twins: Twins
    classes: list[FamilyClass]
    #: Rewritten functions (tests and helpers) by ``id()`` of the original node.
    rewritten: dict[int, cst.FunctionDef]
    #: Module-level factory calls (``instantiate_parametrized_tests(X)``,
    #: ``create_local_tensor_test_class(X)``) by class name.
    instantiations: dict[str, list[FactoryLine]]
    report: FileReport
    #: The edits behind ``rewritten`` and the original functions, by ``id()`` of the original.
    edits: dict[int, FunctionEdits] = field(default_factory=dict)
    functions: dict[int, cst.FunctionDef] = field(default_factory=dict)
    #: Helpers rewritten for moved tests: ``id(helper)`` -> {(class, test)}.
    helper_users: dict[int, set[tuple[str, str]]] = field(default_factory=dict)
    #: ``opts`` methods that become classmethods (``id()`` of the FunctionDef): the runtime calls
    #: ``cls.opts()`` to build the shared PG of a continuous class whose tests used ``self.opts()``.
    classmethod_opts: set[int] = field(default_factory=set)

    def rewrite_active(self, key: int) -> bool:
        """Whether the rewritten form of function ``key`` is the one to emit."""
        users = self.helper_users.get(key)
        if users is not None:
            return any(self._decision(c, t).moved for c, t in users)
        return any(
            d.moved for cls in self.classes for d in cls.decisions.values() if id(d.node) == key
        )

    def _decision(self, class_name: str, test: str) -> Decision:
        return next(c for c in self.classes if c.name == class_name).decisions[test]

    @property
    def changes(self) -> bool:
        return any(c.has_continuous or c.has_mixin or c.removed or c.reused for c in self.classes)

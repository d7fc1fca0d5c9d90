"""Where each member of a migrated class goes, and what the resulting shape cannot do.

Every member (method, property, class attribute) goes where the code that uses it ends up
(:class:`~distlint.codemods.families.Placement`): members only continuous code uses move;
members both sides use go to ``X<Mixin>``, from which both classes derive (a literal
attribute is copied instead); the rest stay, or are dropped with a removed class. Usage is
by name (``self.<name>``, ``cls.<name>``, ``super().<name>``, ``getattr(self, "<name>")``),
resolved over the class's same-file bases: conservative, so a member is never left behind
where it is needed.

Placing members can make a test unmovable (a helper rewritten for moved tests that a test
which stays also calls, a name already taken, a member ``MultiProcContinuousTest`` reserves),
which changes the placement again: :meth:`Placer.settle` repeats both until nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from distlint.analysis.pg.class_eligibility import uses_class_opts
from distlint.codemods import members as m
from distlint.codemods.bases.spec import RUNTIME_READS
from distlint.codemods.families import FamilyClass, Placement
from distlint.codemods.report import Why
from distlint.cst_utils import is_literal
from distlint.syntax.ast_nodes import Source


class Placer:
    """Places the members of a module's families (``order``: the per-test classes, bases first)."""

    def __init__(
        self,
        order: list[FamilyClass],
        rewritten: dict[int, cst.FunctionDef],
        helper_users: dict[int, set[tuple[str, str]]],
        top_level_names: set[str],
        source: Source,
    ) -> None:
        """``source``: the text whose ``ast`` tree the analysis read (its expressions' text)."""
        self.source = source
        self.order = order
        self.classes = {cls.name: cls for cls in order}
        self.rewritten = rewritten
        self.helper_users = helper_users
        self.top_level_names = top_level_names
        #: Units (``id()`` of their statement) that code staying per-test uses, as last computed.
        self.remaining_demand: set[int] = set()

    def settle(self) -> None:
        """Place every member and refuse what the resulting shape cannot do, until nothing changes."""
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
            cls.removed = (
                had_tests and not tests_left and all(child.removed for child in cls.children)
            )
        continuous_demand = self._continuous_demand()
        remaining_demand = self._remaining_demand(continuous_demand)
        self.remaining_demand = remaining_demand
        for cls in self.order:
            cls.placement = {}
            for unit in cls.body.units:
                if unit.kind not in ("method", "attribute", "class"):
                    continue
                key = id(unit.statement)
                cont, rem = key in continuous_demand, key in remaining_demand
                if (
                    cont
                    and (rem or cls.variants())
                    and cls.has_continuous
                    and _is_literal_attribute(unit)
                ):
                    # ``lazy_init = True``: each class gets the line (as a person would write it).
                    cls.placement[key] = Placement.COPY
                elif cont and (rem or not cls.has_continuous or cls.variants()):
                    # With options variants, several continuous classes share it.
                    cls.placement[key] = Placement.MIXIN
                elif cont:
                    cls.placement[key] = Placement.MOVE
                elif cls.removed:
                    cls.placement[key] = Placement.DROP
                else:
                    cls.placement[key] = Placement.STAY

    def _implicit_continuous_names(self, cls: FamilyClass) -> set[str]:
        names = set(RUNTIME_READS)
        if uses_class_opts(cls.root.analysis):
            names.add("opts")
        return names

    def _closure(
        self,
        cls: FamilyClass,
        roots: Iterable[str],
        seed_units: Iterable[m.Unit] = (),
        provided: frozenset[str] = frozenset(),
    ) -> set[int]:
        """Units of ``cls``'s same-file MRO reached from ``roots`` names and ``seed_units``."""
        mro = cls.mro()
        by_name: dict[str, list[m.Unit]] = {}
        for member in mro:
            for unit in member.body.units:
                if unit.kind in ("method", "attribute", "class"):
                    for name in unit.names:
                        by_name.setdefault(name, []).append(unit)
        reached: set[int] = set()
        pending = list(roots)
        for unit in seed_units:
            pending.extend(self._uses(unit))
        seen: set[str] = set(provided)
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

    def _uses(self, unit: m.Unit) -> frozenset[str]:
        rewritten = self.rewritten.get(id(unit.statement))
        users = self.helper_users.get(id(unit.statement), ())
        if rewritten is not None and any(self.classes[c].decisions[t].moved for c, t in users):
            return m.member_uses([rewritten])
        return m.uses_of_unit(unit)

    def _continuous_demand(self) -> set[int]:
        demand: set[int] = set()
        for cls in self.order:
            if not cls.has_continuous:
                continue
            roots: set[str] = self._implicit_continuous_names(cls)
            for member in cls.mro():
                for decision in member.moved_tests():
                    roots |= m.member_uses([self.rewritten.get(id(decision.node), decision.node)])
            provided: frozenset[str] = frozenset()
            if not cls.new_classes_needed():
                # Migrating again into existing classes only: what they define is there already.
                homes = [cls.existing_for(v) for v in [(), *cls.variants()]]
                provided = frozenset.intersection(*(h.provided for h in homes if h))
            demand |= self._closure(cls, roots - provided, provided=provided)
        return demand

    def _remaining_demand(self, continuous_demand: set[int]) -> set[int]:
        demand: set[int] = set()
        for cls in self.order:
            if cls.removed:
                continue
            roots: set[str] = {"world_size"}
            seeds: list[m.Unit] = []
            for member in cls.mro():
                for node in member.remaining_test_nodes():
                    roots |= m.member_uses([node])
                for unit in member.body.units:
                    if unit.kind == "hook":
                        roots |= m.member_uses([unit.statement])
                    elif (
                        unit.kind in ("method", "attribute", "class")
                        and id(unit.statement) not in continuous_demand
                    ):
                        seeds.append(unit)  # stays in its class: what it uses must stay reachable
            demand |= self._closure(cls, roots, seeds)
        return demand

    def _validate(self) -> bool:
        """Refuse what the current shape cannot do; True when something changed (recompute)."""
        changed = False
        # A helper that creates the PG and does test work is rewritten: only moved tests may use
        # it. It may still sit in the mixin when several continuous classes (options variants)
        # share it; what must not happen is code that stays calling its rewritten form.
        for cls in self.order:
            for unit in cls.body.units:
                key = id(unit.statement)
                users = self.helper_users.get(key)
                if not users or key not in self.remaining_demand:
                    continue
                for class_name, test_name in users:
                    decision = self.classes[class_name].decisions[test_name]
                    if decision.moved:
                        decision.leave(
                            Why.SHARED_HELPER.code, f"{Why.SHARED_HELPER.text} ({unit.name})"
                        )
                        changed = True
        for cls in self.order:
            if (
                cls.refusal is None
                and cls.has_mixin
                and not cls.mixin_exists
                and cls.mixin_name in self.top_level_names
            ):
                problem = (Why.NAME_TAKEN.code, f"{Why.NAME_TAKEN.text}: {cls.mixin_name}")
                for member in self._family_of(cls):
                    for decision in member.moved_tests():
                        decision.leave(*problem)
                cls.refuse(*problem)
                changed = True
        for cls in self.order:
            # A subclass's own tests join the continuous class of its base: same PG or they stay.
            mismatch = (
                self._base_mismatch(cls) if cls.has_continuous and cls is not cls.root else None
            )
            if mismatch is not None and cls.moved_tests():
                for decision in cls.moved_tests():
                    decision.leave(Why.BASE_MISMATCH.code, mismatch)
                changed = True
        for cls in self.order:
            if not cls.has_continuous or cls.refusal is not None:
                continue
            refusal = self._continuous_problem(cls)
            if refusal is not None:
                cls.refuse(*refusal)
                for member in [cls, *cls.descendants()]:
                    for decision in member.moved_tests():
                        decision.leave(*refusal)
                # Tests the subclasses inherit from the bases cannot move either.
                for ancestor in cls.mro()[1:]:
                    for decision in ancestor.moved_tests():
                        decision.leave(
                            Why.SUBCLASS.code,
                            f"{cls.name} inherits it and cannot be migrated: {refusal[1]}",
                        )
                changed = True
        return changed

    def _continuous_problem(self, cls: FamilyClass) -> tuple[str, str] | None:
        """Why ``cls`` cannot get a continuous counterpart in the current shape, or None."""
        for name in [cls.continuous_name, *map(cls.variant_name, cls.variants())]:
            if name in cls.existing:
                continue  # migrating again: the tests join it
            if name in self.top_level_names:
                why = cls.existing_problems.get(name, name)
                return Why.NAME_TAKEN.code, f"{Why.NAME_TAKEN.text}: {why}"
        # The class's backend, options, timeout and opts() were checked by the analysis
        # (Reason.UNKNOWN_BACKEND, CLASS_OPTIONS, CLASS_TIMEOUT).
        root = cls.root
        mro_units = [u for member in cls.mro() for u in member.body.units]
        for unit in mro_units:
            reserved = set(unit.names) & root.base.reserved
            if reserved and self._placement_of(unit) in (
                Placement.MOVE,
                Placement.MIXIN,
                Placement.COPY,
            ):
                return (
                    Why.RESERVED_MEMBER.code,
                    f"{Why.RESERVED_MEMBER.text}: {sorted(reserved)[0]}",
                )
        if not uses_class_opts(root.analysis) and any(
            "opts" in u.names and self._placement_of(u) in (Placement.MOVE, Placement.MIXIN)
            for u in mro_units
        ):
            return Why.OPTS_WITH_DEFAULT_OPTIONS.code, (
                "the moved tests call self.opts(), but their PG uses default "
                "options; a continuous class's opts() builds the shared PG"
            )
        return None

    def _base_mismatch(self, cls: FamilyClass) -> str | None:
        """How ``cls``'s tests' PG differs from the one of the continuous class it derives from."""
        facts, root = cls.analysis, cls.root
        for label, mine, theirs in (
            ("backend", facts.backend, root.analysis.backend),
            ("timeout", facts.timeout, root.analysis.timeout),
            ("options", facts.options, root.analysis.options),
        ):
            if mine is None or theirs is None:
                continue
            mine_text = mine if isinstance(mine, str) else self.source.segment(mine)
            theirs_text = theirs if isinstance(theirs, str) else self.source.segment(theirs)
            if mine_text != theirs_text:
                return f"its PG {label} `{mine_text}` differs from the `{theirs_text}` of {root.name}'s continuous class"
        return None

    def _placement_of(self, unit: m.Unit) -> Placement | None:
        for cls in self.order:
            where = cls.placement.get(id(unit.statement))
            if where is not None:
                return where
        return None

    def _family_of(self, cls: FamilyClass) -> list[FamilyClass]:
        top = cls.mro()[-1]
        return [top, *top.descendants()]

    def classmethod_opts(self) -> set[int]:
        """``opts`` methods that become classmethods (the runtime builds the shared PG with ``cls.opts()``)."""
        found: set[int] = set()
        for cls in self.order:
            if cls.has_continuous and uses_class_opts(cls.root.analysis):
                for member in cls.mro():
                    found |= {id(u.statement) for u in member.body.units_named("opts")}
        return found


def _is_literal_attribute(unit: m.Unit) -> bool:
    """``name = <literal>``: a number, string, True/False/None, or a tuple/list of those."""
    if unit.kind != "attribute" or not isinstance(unit.statement, cst.SimpleStatementLine):
        return False
    for small in unit.statement.body:
        value = getattr(small, "value", None)
        if value is None or not is_literal(value):
            return False
    return True

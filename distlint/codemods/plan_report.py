"""The migration report of one module: every per-test class the analysis sees, with each
of its tests moved (and where) or left (and why), built from the plan's decisions
(:mod:`distlint.codemods.plan`)."""

from __future__ import annotations

import libcst as cst

from distlint.codemods.families import FamilyClass
from distlint.codemods.report import (
    ClassReport,
    FileReport,
    LeftBehind,
    Why,
    inherited_from_elsewhere,
    inherited_from_helper,
    no_tests_note,
)
from distlint.cst_utils import code_of


def build_report(
    order: list[FamilyClass], module: cst.Module, frozen: frozenset[str] = frozenset()
) -> FileReport:
    """Every per-test class the analysis sees, with each of its tests: moved, or left and why
    (``frozen``: the per-test classes the plan left out, reported by
    :mod:`distlint.codemods.frozen`)."""
    report = FileReport(path="")
    family = {cls.name for cls in order} | frozen
    for cls in order:
        entry = ClassReport(cls.name)
        if cls.has_continuous:
            entry.continuous = cls.continuous_name
            entry.variants = [cls.variant_name(v) for v in cls.variants()]
            entry.existing = [n for n in entry.continuous_classes() if n in cls.existing]
        if cls.has_mixin:
            entry.mixin = cls.mixin_name
            entry.mixin_existed = cls.mixin_exists
        entry.removed = cls.removed
        entry.reused_workers = cls.reused and cls.parent is None
        entry.notes += cls.notes
        for decision in cls.decisions.values():
            if decision.moved:
                entry.moved.append(decision.test.name)
                if decision.variant:
                    entry.moved_to[decision.test.name] = cls.variant_name(decision.variant)
            elif cls.reused:
                entry.reused.append(LeftBehind(decision.test.name, decision.code, decision.text))
            else:
                entry.left.append(LeftBehind(decision.test.name, decision.code, decision.text))
        for name in cls.unanalysed_tests:
            entry.left.append(LeftBehind(name, Why.NOT_ANALYSED.code, Why.NOT_ANALYSED.text))
        own = {name for unit in cls.body.units for name in unit.names}
        for written, found in cls.analysis.external_bases:
            for name in found.tests:
                if name not in own:
                    inherited = inherited_from_elsewhere(name, written)
                    (entry.reused if cls.reused else entry.left).append(inherited)
        for helper, name in _helper_class_tests(cls, module, family):
            entry.left.append(inherited_from_helper(name, helper))
        if cls.has_continuous:
            entry.inherits_from = [a.name for a in cls.mro()[1:] if a.moved_tests()][:1]
            if (
                cls is cls.root
                and not cls.mro_defines("world_size")
                and cls.kept_bases
                and cls.continuous_name not in cls.existing  # its world size is there already
            ):
                entry.notes.append(
                    "world_size is not defined in this file; the continuous class takes it "
                    "from "
                    + ", ".join(code_of(b.value) for b in cls.kept_bases)
                    + " or the runtime's default"
                )
        if not (entry.moved or entry.reused or entry.left or entry.inherits_from):
            entry.notes.append(_no_tests_note(cls, module, family))
        report.classes.append(entry)
    return report


def _helper_class_tests(
    cls: FamilyClass, module: cst.Module, family: set[str]
) -> list[tuple[str, str]]:
    """``(class, test)`` for the ``test_*`` methods ``cls`` inherits from same-file classes
    that are not per-test classes (mixins): they run per-test here, and stay."""
    module_classes = {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}
    own = {name for member in cls.mro() for unit in member.body.units for name in unit.names}
    found: list[tuple[str, str]] = []
    pending = [b.value.value for b in cls.kept_bases if isinstance(b.value, cst.Name)]
    seen: set[str] = set()
    while pending:
        name = pending.pop(0)
        helper = module_classes.get(name)
        if helper is None or name in seen or name in family:
            continue
        seen.add(name)
        for statement in helper.body.body if isinstance(helper.body, cst.IndentedBlock) else ():
            test = statement.name.value if isinstance(statement, cst.FunctionDef) else ""
            if test.startswith("test") and test not in own and all(test != t for _, t in found):
                found.append((name, test))
        pending += [b.value.value for b in helper.bases if isinstance(b.value, cst.Name)]
    return found


def _no_tests_note(cls: FamilyClass, module: cst.Module, family: set[str]) -> str:
    """Why a per-test class lists no test: where the tests it runs are, if anywhere."""
    module_classes = {s.name.value for s in module.body if isinstance(s, cst.ClassDef)}
    ancestors = [
        a
        for a in cls.mro()[1:]
        if a.decisions or a.unanalysed_tests or _helper_class_tests(a, module, family)
    ]
    elsewhere = [
        code_of(b.value)
        for b in cls.kept_bases
        if not (isinstance(b.value, cst.Name) and b.value.value in module_classes)
    ]
    return no_tests_note(ancestors[0].name if ancestors else None, elsewhere)

"""Migrating again: the continuous classes (and mixins) a first ``distlint migrate`` run created.

Tests written into a per-test class ``X`` after its continuous class exists move into that
class like the first time: into ``X<Suffix>`` (or the options-variant class of their options,
or, in torch's tests-mixin shape, ``_X<Suffix>Tests``), the members only they use with them,
the members both sides use into ``X<Mixin>``. Whether the existing class can take them (a
continuous class, same backend and world size, bases of the shapes distlint creates) is the
analysis' question (:mod:`distlint.analysis.pg.existing_continuous`); this module finds the
classes and what they already define, so nothing is added twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from distlint.analysis.names import dotted_name
from distlint.analysis.pg.existing_continuous import tests_mixin_names
from distlint.codemods import members as m
from distlint.codemods.rewrite import with_blank_leading
from distlint.cst_utils import is_string_statement


@dataclass(frozen=True)
class ExistingClass:
    """A continuous class already in the module, and where moved code goes in it."""

    name: str
    #: The class that receives the moved tests and members: the continuous class itself, or the
    #: tests mixin it derives from in torch's shape (``class XContinuous(_XContinuousTests, ...)``).
    target: cst.ClassDef
    #: Member names it and its same-file bases define (what moved code must not bring again).
    provided: frozenset[str]
    #: Written names of the bases of the continuous class and of its tests mixin.
    bases: frozenset[str]


def module_classes(module: cst.Module) -> dict[str, cst.ClassDef]:
    return {s.name.value: s for s in module.body if isinstance(s, cst.ClassDef)}


def find_existing(name: str, classes: dict[str, cst.ClassDef]) -> ExistingClass | None:
    """The module-level class ``name`` as a home for moved tests, or None when there is none."""
    node = classes.get(name)
    if node is None:
        return None
    bases = [dotted_name(b.value) or "" for b in node.bases]
    target = node
    tests = next((classes[b] for b in bases if b in tests_mixin_names(name) and b in classes), None)
    if tests is not None and _only_pass(node):
        target = tests
        bases += [dotted_name(b.value) or "" for b in tests.bases]
    return ExistingClass(name, target, frozenset(_defined_names(node, classes)), frozenset(bases))


def _only_pass(node: cst.ClassDef) -> bool:
    body = m.class_statements(node)
    return all(
        is_string_statement(s)
        or (isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, cst.Pass) for x in s.body))
        for s in body
    )


def _defined_names(node: cst.ClassDef, classes: dict[str, cst.ClassDef]) -> set[str]:
    """Members ``node`` and its same-file bases define (depth first, cycle safe)."""
    names: set[str] = set()
    pending, seen = [node], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for unit in m.classify_body(current).units:
            if unit.kind not in ("docstring", "noise"):
                names.update(unit.names)
        for base in current.bases:
            local = classes.get(dotted_name(base.value) or "")
            if local is not None:
                pending.append(local)
    return names


def extended(
    node: cst.ClassDef, statements: Sequence[cst.BaseStatement], first_bases: Sequence[str]
) -> cst.ClassDef:
    """``node`` with ``statements`` appended to its body (PEP 8 spacing) and ``first_bases``
    put in front of its bases (a mixin created now, which the continuous class derives from)."""
    body = list(m.class_statements(node))
    if statements:
        body = [s for s in body if not _is_pass(s)]
    for statement in statements:
        previous = body[-1] if body else None
        compound = (cst.FunctionDef, cst.ClassDef)
        if previous is not None and (
            isinstance(statement, compound)
            or isinstance(previous, compound)
            or is_string_statement(previous)
        ):
            statement = with_blank_leading(statement)
        body.append(statement)
    bases = [cst.Arg(cst.Name(name)) for name in first_bases] + list(node.bases)
    block = node.body if isinstance(node.body, cst.IndentedBlock) else cst.IndentedBlock(body=[])
    return node.with_changes(body=block.with_changes(body=body), bases=bases).deep_clone()


def _is_pass(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) for s in statement.body
    )

"""Migrating again: whether a per-test class's continuous class, already in the file, can take more tests.

After ``distlint migrate``, tests written later into a per-test class ``X`` move into the
continuous class ``X<Suffix>`` the first run created (and its mixins). That is only right
when the existing class builds the PG those tests used: a continuous class (or torch's
tests-mixin pair), with the same backend and world size, deriving from nothing ``X`` and
the shapes distlint creates do not. This module says why not, in one sentence, or ``None``;
the analysis makes it a class-level reason (so DL201/DL202 say what ``migrate`` does), and
the codemod asks again for a ``--class-suffix`` other than the default.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from distlint.analysis.model import ClassAnalysis, ExecutionModel
from distlint.analysis.pg.execution import (
    CONTINUOUS_BASES,
    ClassTable,
    base_value,
    external_base_names,
    integer_literal,
    world_size_fact,
)
from distlint.screens.pg_names import config_names
from distlint.syntax.ast_lines import SimpleLine, is_one_line, units
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import dotted_name

if TYPE_CHECKING:
    from distlint.config import Config


def continuous_base_names(config: Config) -> frozenset[str]:
    """The continuous bases a class may derive from: torch's, distlint's and the configured
    ``continuous-bases``."""
    return CONTINUOUS_BASES | config_names(config.continuous_bases)


#: The class-name suffix ``distlint migrate`` uses unless ``--class-suffix`` says otherwise.
DEFAULT_SUFFIX = "Continuous"
MIXIN_SUFFIX = "Mixin"


def tests_mixin_names(continuous: str) -> tuple[str, ...]:
    """Names of the class holding ``continuous``'s tests in torch's tests-mixin shape."""
    name = f"{continuous}Tests"
    return (f"_{name}", name)


def existing_problem(
    cls: ClassAnalysis,
    existing_name: str,
    table: ClassTable,
    names: AstNames,
    models: dict[str, ExecutionModel],
    continuous_bases: frozenset[str],
    suffix: str = DEFAULT_SUFFIX,
) -> str | None:
    """Why the module's class ``existing_name`` cannot take ``cls``'s tests; None when it can
    (or does not exist). ``models``: each module class's execution model, by name."""
    existing = table.classes.get(existing_name)
    if existing is None:
        return None
    if models.get(existing_name) is not ExecutionModel.CONTINUOUS:
        return f"`{existing_name}` exists and is not a continuous class"
    written_bases = [dotted_name(base_value(b)) or "" for b in cls.node.bases]
    allowed = {cls.name + MIXIN_SUFFIX, *tests_mixin_names(existing_name), *written_bases}
    for base in map(base_value, existing.bases):
        written = dotted_name(base) or ""
        resolved = {q.rsplit(".", 1)[-1] for q in external_base_names(names, base)}
        if written in allowed or resolved & continuous_bases:
            continue
        # A subclass's continuous classes derive from those of its base (or their tests mixin).
        stem = written.lstrip("_").removesuffix("Tests")
        if written in table.classes and any(
            stem.startswith(b) and stem.endswith(suffix) for b in written_bases
        ):
            continue
        return f"`{existing_name}` derives from `{written}`, which {cls.name} does not"
    theirs = _backend(existing, table, names)
    if cls.backend is not None and theirs != cls.backend:
        # No backend_str(): the first run found no backend literal, the base's default it is.
        runs = f'backend "{theirs}"' if theirs is not None else "its base's default backend"
        return f'`{existing_name}` runs {runs}, the tests of {cls.name} "{cls.backend}"'
    mine = integer_literal(world_size_fact(table, names, cls.node).value)
    other = integer_literal(world_size_fact(table, names, existing).value)
    if mine is not None and other is not None and mine != other:
        return f"`{existing_name}` runs at world size {other}, the tests of {cls.name} at {mine}"
    return None


def _backend(existing: ast.ClassDef, table: ClassTable, names: AstNames) -> str | None:
    """The string literal ``backend_str()`` of ``existing`` (or a same-file base) returns."""
    found = table.method(names, existing, "backend_str")
    if found is None:
        return None
    for statement in () if is_one_line(found[1]) else units(found[1]):
        if isinstance(statement, SimpleLine):
            small = statement.body[0]
            if (
                isinstance(small, ast.Return)
                and isinstance(small.value, ast.Constant)
                and isinstance(small.value.value, (str, bytes))
            ):
                value = small.value.value
                return value if isinstance(value, str) else None
    return None

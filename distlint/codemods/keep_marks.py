"""``--verify --write``: a ``# distlint: keep-per-test`` comment on each test the runs kept behind.

Without it, a test ``--verify`` demoted (or found flaky) looks movable again to the analysis, which
does not run tests: the next ``distlint migrate --check`` in CI or pre-commit would name it
again, forever. The comment (:mod:`distlint.analysis.keep_marks`) goes on the line above the test's
definition in its class, as a person would write it; libcst adds it to the node's leading lines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import libcst as cst

from distlint.analysis.keep_marks import MARK, mark_text
from distlint.codemods.migrate_continuous import MigrationResult
from distlint.source import parse, verify_python


def with_keep_marks(result: MigrationResult, marks: Mapping[str, str]) -> MigrationResult:
    """``result`` with a mark above each ``Class.test`` of ``marks`` (its text: why) that a
    top-level class of the migrated module defines and that carries none yet."""
    if not marks or result.migrated is None:
        return result
    module = parse(result.migrated, result.path)
    body = [_marked_class(s, marks) if isinstance(s, cst.ClassDef) else s for s in module.body]
    if all(new is old for new, old in zip(body, module.body)):
        return result
    migrated = module.with_changes(body=body).code.encode(module.encoding)
    verify_python(migrated, result.path)
    return dataclasses.replace(result, migrated=migrated)


def _marked_class(cls: cst.ClassDef, marks: Mapping[str, str]) -> cst.ClassDef:
    if not isinstance(cls.body, cst.IndentedBlock):
        return cls
    members = [_marked_member(cls.name.value, member, marks) for member in cls.body.body]
    if all(new is old for new, old in zip(members, cls.body.body)):
        return cls
    return cls.with_changes(body=cls.body.with_changes(body=members))


def _marked_member(
    class_name: str, member: cst.BaseStatement, marks: Mapping[str, str]
) -> cst.BaseStatement:
    if not isinstance(member, cst.FunctionDef):
        return member
    why = marks.get(f"{class_name}.{member.name.value}")
    if why is None or _has_mark(member):
        return member
    return member.with_changes(leading_lines=[*member.leading_lines, mark_line(why)])


def _has_mark(test: cst.FunctionDef) -> bool:
    """Whether a comment libcst gives the def (above it, its decorators, or between them and
    ``def``) is a mark already (what :func:`distlint.analysis.keep_marks.keep_mark` reads)."""
    lines = [*test.leading_lines, *test.lines_after_decorators]
    for decorator in test.decorators:
        lines += decorator.leading_lines
    return any(
        line.comment is not None and mark_text(line.comment.value) is not None for line in lines
    )


def mark_line(why: str) -> cst.EmptyLine:
    """The comment line ``--verify --write`` puts above a test it kept behind."""
    text = f"# {MARK} ({why})" if why else f"# {MARK}"
    return cst.EmptyLine(indent=True, comment=cst.Comment(text))

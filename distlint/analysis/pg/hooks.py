"""A per-test class's ``setUp``/``tearDown`` as a continuous class sees them: what they do
besides calling ``super()``, spawning the workers and removing ``self.file_name`` (a continuous
class runs them on its ranks, not in the parent), and how the analysis quotes a statement.

Shared by the class reasons (:mod:`~distlint.analysis.pg.class_eligibility`), the reused-workers
decision (:mod:`~distlint.analysis.pg.reuse`) and the codemod, which keeps a reused class's
environment-only ``setUp``.
"""

from __future__ import annotations

import ast

from distlint.analysis.pg.class_environment import declared_assignment, is_environment_undo
from distlint.analysis.pg.execution import SPAWN_METHODS, Function
from distlint.syntax.ast_lines import SimpleLine, Unit, is_one_line, is_string_line, units
from distlint.syntax.ast_nodes import Source


def hook_problem(function: Function, source: Source) -> str | None:
    """What a setUp/tearDown does beyond super(), spawning and removing self.file_name
    (``source``: the module's text, the statement is quoted from)."""
    name = function.name
    if name == "__init__":
        return "is overridden"
    body = units(function) if not is_one_line(function) else []
    for statement in body:
        if is_string_line(statement) or is_super_call(statement, name) or is_spawn(statement):
            continue
        if name == "setUp" and declared_assignment(statement) is not None:
            continue  # environment the ranks start with: a continuous class declares it
        if name == "tearDown" and is_environment_undo(statement):
            continue
        if name == "tearDown" and _removes_file_name(statement, source):
            continue
        return f"does more than {'spawn the workers' if name == 'setUp' else 'call super()'}: `{first_line(statement, source)}`"
    return None


def is_super_call(statement: Unit, method: str) -> bool:
    """``super().setUp()``, ``super(X, self).setUp()``, ``return super().tearDown()``."""
    if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    value = small.value if isinstance(small, (ast.Expr, ast.Return)) else None
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    receiver = value.func.value
    return (
        value.func.attr == method
        and isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Name)
        and receiver.func.id == "super"
    )


def is_spawn(statement: Unit) -> bool:
    if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if not isinstance(small, ast.Expr) or not isinstance(small.value, ast.Call):
        return False
    func = small.value.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and func.attr in SPAWN_METHODS
    )


def _removes_file_name(statement: Unit, source: Source) -> bool:
    """``try: os.remove(self.file_name) except OSError: pass`` (or the bare call)."""
    text = statement_text(statement, source)
    return (
        "self.file_name" in text
        and ("remove(" in text or "unlink(" in text)
        and "self." not in text.replace("self.file_name", "")
    )


# -- quoting statements ---------------------------------------------------------------------------


def first_line(statement: Unit, source: Source) -> str:
    """The statement's first line of code as written in ``source`` (the module's text), its
    trailing comment included; a decorated definition's is its first decorator's."""
    line, column = _start(statement)
    return source.line(line).encode("utf-8")[column:].decode("utf-8").strip()


def _start(statement: Unit) -> tuple[int, int]:
    """Line and (UTF-8) column where ``statement``'s code starts, its decorators included."""
    if isinstance(statement, SimpleLine):
        return statement.lineno, statement.body[0].col_offset
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    if decorators:
        return decorators[0].lineno, 0  # only indentation comes before the ``@``
    return statement.lineno, statement.col_offset


def statement_text(statement: Unit, source: Source) -> str:
    """The text libcst gave a statement (``code_of``): the comment lines right above it at its
    indentation or less, then its lines (trailing comments included), from where it starts."""
    line, column = _start(statement)
    end = statement.end_lineno or line
    indentation = len(source.line(line)) - len(source.line(line).lstrip())
    leading: list[str] = []
    above = line - 1
    while above >= 1:
        text = source.line(above)
        stripped = text.lstrip()
        if stripped and not stripped.startswith("#"):
            break
        if stripped and len(text) - len(stripped) > indentation:
            break  # indented further: the footer of the block above (libcst's ownership)
        leading.insert(0, text)
        above -= 1
    first = source.line(line).encode("utf-8")[column:].decode("utf-8")
    lines = [first] + [source.line(n) for n in range(line + 1, end + 1)]
    return "\n".join(leading + lines) + "\n"

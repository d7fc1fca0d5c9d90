"""A per-test class's environment that a continuous class can declare instead.

``ProcessGroupNCCLTest.setUp`` sets ``os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1"``
before ``super().setUp()`` spawns the ranks, and ``ProcessGroupGlooLazyInitTest`` sets
``TORCH_GLOO_LAZY_INIT`` the same way (its ``tearDown`` deletes it again). The ranks inherit
the variable and the PG reads it when it is created. A continuous class gets the same by
declaring it (``worker_env`` with ``distlint.runtime``; set around the spawn with torch's
class), so such a class is not a blocker when every write is declarable:

* ``os.environ["KEY"] = "value"`` with a literal key and a literal string, in a ``setUp``
  of the class or of a same-file base, *before* the workers are spawned (``super().setUp()``
  or ``self._spawn_processes()``): written after the spawn, the ranks never saw it;
* ``tearDown`` may only undo such writes (``del os.environ["KEY"]``, ``os.environ.pop("KEY"...)``).

Anything else that touches the environment keeps ``Reason.CLASS_ENVIRONMENT``.
"""

from __future__ import annotations

import ast
from typing import Callable

from distlint.analysis.pg.creation import string_literal
from distlint.analysis.pg.execution import Function
from distlint.syntax.ast_lines import SimpleLine, Unit, is_one_line, units
from distlint.syntax.ast_nodes import dotted_name


def declared_assignment(statement: Unit) -> tuple[str, str] | None:
    """``(key, value)`` for ``os.environ["KEY"] = "value"`` (both literals), else None."""
    if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, ast.Assign) or len(small.targets) != 1:
        return None
    key = _environ_key(small.targets[0])
    value = string_literal(small.value)
    return (key, value) if key is not None and value is not None else None


def is_environment_undo(statement: Unit) -> bool:
    """``del os.environ["KEY"]`` or ``os.environ.pop("KEY"[, default])`` (a tearDown undoing a write)."""
    if not isinstance(statement, SimpleLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    if isinstance(small, ast.Delete):
        # ``del a, b`` deletes a tuple (libcst's one ``Del.target``): no key.
        return len(small.targets) == 1 and _environ_key(small.targets[0]) is not None
    if isinstance(small, ast.Expr) and isinstance(small.value, ast.Call):
        call = small.value
        return (
            dotted_name(call.func) == "os.environ.pop"
            and string_literal(_first_argument(call)) is not None
        )
    return False


def _first_argument(call: ast.Call) -> ast.expr | None:
    """The value of ``call``'s first argument as written, positional or keyword (``*x``: ``x``)."""
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if not arguments:
        return None
    first = min(arguments, key=lambda a: (a.lineno, a.col_offset))
    return first.value if isinstance(first, (ast.keyword, ast.Starred)) else first


def _environ_key(target: ast.expr) -> str | None:
    if not isinstance(target, ast.Subscript) or dotted_name(target.value) != "os.environ":
        return None
    return string_literal(target.slice)


def setup_environment_writes(
    setups: list[Function],
    spawns: Callable[[Unit], bool],
    calls_super: Callable[[Unit], bool],
) -> tuple[dict[str, str], Unit | None]:
    """The variables the ``setUp`` chain sets before the spawn, and the first write after it (the
    ranks never see that one: a per-test class that relies on it cannot be reproduced), if any.

    ``setups``: the class's own ``setUp`` first, then its bases' (the order they run in: each
    writes before it calls ``super().setUp()``, so a base's value wins). ``spawns``: whether a
    statement (a unit of the body) spawns the ranks; ``calls_super``: whether it is
    ``super().setUp()``, which spawns them when a same-file base's ``setUp`` follows in the chain
    (MultiProcessTestCase's does not)."""
    environment: dict[str, str] = {}
    for index, setup in enumerate(setups):
        spawned = False
        base_follows = index + 1 < len(setups)
        body = () if is_one_line(setup) else units(setup)
        for statement in body:
            written = declared_assignment(statement)
            if written is not None:
                if spawned:
                    return environment, statement
                environment[written[0]] = written[1]
            elif spawns(statement) or (base_follows and calls_super(statement)):
                spawned = True
    return environment, None

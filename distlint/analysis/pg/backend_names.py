"""A backend written otherwise than as a string literal, resolved like one.

``init_process_group(backend=BACKEND, ...)`` with a module constant ``BACKEND = "gloo"``,
``dist.Backend.NCCL`` or ``c10d.Backend.GLOO`` (torch's ``Backend`` attributes are the
lower-case backend names), or a constant bound to one of those: a continuous class can carry
each into ``backend_str()`` as the literal it stands for. A name bound more than once at
module level, or anything else, stays unknown (``Reason.UNKNOWN_BACKEND``).
"""

from __future__ import annotations

import ast

from distlint.analysis.pg.creation import string_literal
from distlint.syntax.ast_lines import SimpleLine, units
from distlint.syntax.ast_names import AstNames

#: Where torch defines ``Backend`` (``torch.distributed.Backend``, also reached as ``c10d.Backend``).
_BACKEND_CLASSES = ("torch.distributed.Backend", "torch.distributed.distributed_c10d.Backend")


def module_constants(module: ast.Module, names: AstNames) -> dict[str, str]:
    """Module-level names bound exactly once, to a backend literal or a ``Backend.X`` attribute
    (``module``: ``ast_lines.prepare`` already called on it)."""
    bound: dict[str, int] = {}
    values: dict[str, str] = {}
    for statement in units(module):
        if not isinstance(statement, SimpleLine):
            continue
        for small in statement.body:
            targets: list[ast.expr] = (
                list(small.targets)
                if isinstance(small, ast.Assign)
                else ([small.target] if isinstance(small, (ast.AnnAssign, ast.AugAssign)) else [])
            )
            for target in targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, 0) + 1
                    resolved = (
                        _backend_of(small.value, names)
                        if isinstance(small, (ast.Assign, ast.AnnAssign))
                        else None
                    )
                    if resolved is not None and len(targets) == 1:
                        values[target.id] = resolved
    return {name: value for name, value in values.items() if bound[name] == 1}


def resolve_backend(
    node: ast.expr | None, names: AstNames, constants: dict[str, str]
) -> str | None:
    """The backend string ``node`` stands for, or None when distlint cannot tell."""
    if node is None:
        return None
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return _backend_of(node, names)


def _backend_of(node: ast.expr | None, names: AstNames) -> str | None:
    literal = string_literal(node)
    if literal is not None or not isinstance(node, ast.Attribute):
        return literal
    for qualified in names.names_of(node):
        owner, _, member = qualified.rpartition(".")
        if owner in _BACKEND_CLASSES and member.isupper():
            return member.lower()
    return None

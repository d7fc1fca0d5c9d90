"""A backend written otherwise than as a string literal, resolved like one.

``init_process_group(backend=BACKEND, ...)`` with a module constant ``BACKEND = "gloo"``,
``dist.Backend.NCCL`` or ``c10d.Backend.GLOO`` (torch's ``Backend`` attributes are the
lower-case backend names), or a constant bound to one of those: a continuous class can carry
each into ``backend_str()`` as the literal it stands for. A name bound more than once at
module level, or anything else, stays unknown (``Reason.UNKNOWN_BACKEND``).
"""

from __future__ import annotations

import libcst as cst

from distlint.analysis.names import QualifiedNames, qualified_names
from distlint.analysis.pg.creation import string_literal

#: Where torch defines ``Backend`` (``torch.distributed.Backend``, also reached as ``c10d.Backend``).
_BACKEND_CLASSES = ("torch.distributed.Backend", "torch.distributed.distributed_c10d.Backend")


def module_constants(module: cst.Module, names: QualifiedNames) -> dict[str, str]:
    """Module-level names bound exactly once, to a backend literal or a ``Backend.X`` attribute."""
    bound: dict[str, int] = {}
    values: dict[str, str] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            targets = (
                [t.target for t in small.targets]
                if isinstance(small, cst.Assign)
                else ([small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
            )
            for target in targets:
                if isinstance(target, cst.Name):
                    bound[target.value] = bound.get(target.value, 0) + 1
                    value = getattr(small, "value", None)
                    resolved = (
                        _backend_of(value, names)
                        if isinstance(small, (cst.Assign, cst.AnnAssign))
                        else None
                    )
                    if resolved is not None and len(targets) == 1:
                        values[target.value] = resolved
    return {name: value for name, value in values.items() if bound[name] == 1}


def resolve_backend(
    node: cst.BaseExpression | None, names: QualifiedNames, constants: dict[str, str]
) -> str | None:
    """The backend string ``node`` stands for, or None when distlint cannot tell."""
    if node is None:
        return None
    if isinstance(node, cst.Name) and node.value in constants:
        return constants[node.value]
    return _backend_of(node, names)


def _backend_of(node: cst.BaseExpression | None, names: QualifiedNames) -> str | None:
    literal = string_literal(node)
    if literal is not None or not isinstance(node, cst.Attribute):
        return literal
    for qualified in qualified_names(names, node):
        owner, _, member = qualified.rpartition(".")
        if owner in _BACKEND_CLASSES and member.isupper():
            return member.lower()
    return None

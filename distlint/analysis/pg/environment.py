"""Which environment variables a statement or call writes (the PG scan's environment events).

Only the variable names are read here; whether one affects a PG is
:func:`~distlint.analysis.pg.creation.is_pg_env_key`'s call, made by the scan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import libcst as cst

from distlint.analysis.names import QualifiedNames, qualified_names
from distlint.analysis.pg.creation import method_name, string_literal

#: ``(key, node)``: the variable written (None when not a literal) and the node writing it.
Written = tuple[Optional[str], cst.CSTNode]


def is_os_environ(names: QualifiedNames, node: cst.BaseExpression) -> bool:
    return "os.environ" in qualified_names(names, node)


def environ_subscripts(
    names: QualifiedNames, targets: Sequence[cst.BaseExpression]
) -> list[Written]:
    """``os.environ[KEY]`` among the targets of an assignment, ``+=`` or ``del``."""
    written: list[Written] = []
    for target in targets:
        if (
            isinstance(target, cst.Subscript)
            and is_os_environ(names, target.value)
            and target.slice
        ):
            index = target.slice[0].slice
            written.append(
                (string_literal(index.value) if isinstance(index, cst.Index) else None, target)
            )
    return written


def environment_call_keys(names: QualifiedNames, call: cst.Call) -> list[str | None] | None:
    """The variables ``call`` writes, or None when it is not an environment call.

    ``os.environ.update/setdefault/pop``, ``os.putenv/unsetenv``, ``patch.dict(os.environ, ...)``,
    ``monkeypatch.setenv/delenv``. A key that is not a literal reads as None.
    """
    resolved = qualified_names(names, call)
    func = call.func
    keys: list[str | None] = []
    if isinstance(func, cst.Attribute) and is_os_environ(names, func.value):
        if func.attr.value == "update":
            for arg in call.args:
                if arg.keyword is not None:
                    keys.append(arg.keyword.value)
                elif isinstance(arg.value, cst.Dict):
                    keys += _dict_keys(arg.value)
        elif func.attr.value in ("setdefault", "pop", "__setitem__", "__delitem__") and call.args:
            keys.append(string_literal(call.args[0].value))
    elif resolved & {"os.putenv", "os.unsetenv"} and call.args:
        keys.append(string_literal(call.args[0].value))
    elif resolved & {"unittest.mock.patch.dict", "mock.patch.dict"} and call.args:
        target = call.args[0].value
        if is_os_environ(names, target) or string_literal(target) == "os.environ":
            for arg in call.args[1:]:
                if arg.keyword is not None and arg.keyword.value not in ("values", "clear"):
                    keys.append(arg.keyword.value)
                elif isinstance(arg.value, cst.Dict):
                    keys += _dict_keys(arg.value)
    elif (
        method_name(call) in ("setenv", "delenv")
        and isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "monkeypatch"
        and call.args
    ):
        keys.append(string_literal(call.args[0].value))
    else:
        return None
    return keys


def _dict_keys(node: cst.Dict) -> list[str | None]:
    return [string_literal(e.key) for e in node.elements if isinstance(e, cst.DictElement)]

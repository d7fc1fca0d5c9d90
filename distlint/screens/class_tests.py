"""Whether a module's classes define any test method: the ``ast`` twin of what the PG analysis reads.

DL201, DL202 and DL203 (and ``distlint migrate``) only ever report or move a ``test*``
method defined in a class's own body (``distlint.analysis.pg``: ``ClassTable`` takes the
module's classes, ``class_functions`` their direct ``def`` statements; inherited tests are
analysed on the class that defines them). A module where no class body holds such a
``def`` cannot give them anything to say, whatever its words: torch's own
``common_distributed.py``, ``common_fsdp.py`` and ``common_dtensor.py`` name every per-test
base and PG call, define no test, and reached libcst for nothing.

Conservative by construction: every class of the tree counts (nested ones too, which the
analysis never takes), and so does a ``def test*`` at any depth of a class body (under an
``if``, inside a method), not only a direct one.
"""

from __future__ import annotations

import ast

from distlint.screens.main_block import ast_statements


def defines_test_methods(tree: ast.Module) -> bool:
    """Whether some class of ``tree`` has a ``def test*`` anywhere in its body."""
    return any(
        type(node) is ast.ClassDef and _has_test_def(node) for node in ast_statements(tree.body)
    )


def _has_test_def(cls: ast.ClassDef) -> bool:
    return any(
        (type(node) is ast.FunctionDef or type(node) is ast.AsyncFunctionDef)
        and node.name.startswith("test")
        for node in ast_statements(cls.body)
    )

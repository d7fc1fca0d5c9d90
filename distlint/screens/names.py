"""Matching dotted names by their spelling, and reading them from stdlib ``ast`` trees: helpers
the pre-screens and the analyses share.

No libcst here: the pre-screens (:mod:`distlint.screens`) run before anything imports it;
:mod:`distlint.analysis.names` re-exports these next to its libcst name resolution.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


def names_match_any(resolved: Iterable[str], wanted: Iterable[str]) -> bool:
    """:func:`matches_any` for names resolved some other way (dotted: exact; bare: last component)."""
    resolved = set(resolved)
    dotted = {w for w in wanted if "." in w}
    bare = {w for w in wanted if "." not in w}
    if resolved & dotted:
        return True
    return any(q.rsplit(".", 1)[-1] in bare for q in resolved)


def last_component(name: str) -> str:
    """``c`` for ``a.b.c``."""
    return name.rsplit(".", 1)[-1]


def ast_dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for an ``ast`` name or attribute chain; ``None`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = ast_dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def top_level_imports(tree: ast.Module, package: str | None) -> dict[str, str]:
    """What the module's top-level imports bind: local name -> qualified name (``import a.b``
    binds ``a``). Relative imports resolve against ``package``; with ``None`` (the module's
    package is not known) they are left out."""
    table: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                head = alias.name.split(".")[0]
                table[alias.asname or head] = alias.name if alias.asname else head
        elif isinstance(statement, ast.ImportFrom):
            source = statement.module or ""
            if statement.level:
                if package is None:
                    continue
                source = ".".join(p for p in [package, source] if p)
            for alias in statement.names:
                table[alias.asname or alias.name] = f"{source}.{alias.name}"
    return table

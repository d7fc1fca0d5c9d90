"""Matching dotted names by their spelling: helpers the pre-screens and the libcst analyses share.

No libcst here: the pre-screens (:mod:`distlint.screens`) run before anything imports it;
:mod:`distlint.analysis.names` re-exports these next to its libcst name resolution.
"""

from __future__ import annotations

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

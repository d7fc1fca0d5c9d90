"""Name resolution helpers on top of libcst's ``QualifiedNameProvider``.

Shared by every analysis: add a helper here instead of writing it twice.
"""

from __future__ import annotations

from typing import Collection, FrozenSet, Iterable, Mapping, Optional

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, QualifiedName, QualifiedNameProvider

QualifiedNames = Mapping[cst.CSTNode, Collection[QualifiedName]]


def qualified_name_map(wrapper: MetadataWrapper) -> QualifiedNames:
    """The module's qualified names (resolved once per wrapper, then cached by libcst)."""
    return wrapper.resolve(QualifiedNameProvider)


def qualified_names(names: QualifiedNames, node: cst.CSTNode) -> FrozenSet[str]:
    """Qualified names of ``node`` (a Name, Attribute or Call's func); empty when unknown."""
    if isinstance(node, cst.Call):
        node = node.func
    return frozenset(q.name for q in names.get(node, ()))


def matches_any(names: QualifiedNames, node: cst.CSTNode, wanted: Iterable[str]) -> bool:
    """Whether ``node`` resolves to one of ``wanted``.

    A wanted entry with a dot is a qualified name (``torch.distributed.init_process_group``);
    one without a dot matches the last component of any resolution, which is how users
    name helpers and bases in config (``run_tests``, ``MultiProcessTestBase``).
    """
    resolved = qualified_names(names, node)
    dotted = {w for w in wanted if "." in w}
    bare = {w for w in wanted if "." not in w}
    if resolved & dotted:
        return True
    return any(q.rsplit(".", 1)[-1] in bare for q in resolved)


def dotted_name(node: Optional[cst.CSTNode]) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain (or a Call's func), else None."""
    if node is None:
        return None
    if isinstance(node, cst.Call):
        node = node.func
    return get_full_name_for_node(node)

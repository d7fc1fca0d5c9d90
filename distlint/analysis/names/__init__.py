"""Name resolution helpers: libcst ``QualifiedNameProvider`` answers, computed cheaply.

Shared by every analysis: add a helper here instead of writing it twice. The map comes from
:mod:`distlint.analysis.names.resolver` (same answers as the provider, ~16x cheaper, resolved
per node on lookup); :func:`use_libcst_provider` switches to the real provider, for the tests
that prove the two agree.

The main-block rules use a cheaper, looser view built from import statements only:
:mod:`distlint.analysis.names.import_table` says why the two exist.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import cast

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, QualifiedName, QualifiedNameProvider

from distlint.analysis.names.resolver import NameResolver, build_resolver
from distlint.screens.names import last_component, names_match_any  # noqa: F401 - part of this interface

QualifiedNames = Mapping[cst.CSTNode, Collection[QualifiedName]]

_USE_PROVIDER = False


def qualified_name_map(wrapper: MetadataWrapper) -> QualifiedNames:
    """The module's qualified names, as ``QualifiedNameProvider`` gives them (one map per wrapper).

    Cached in the wrapper's metadata cache under :class:`NameResolver`, so the rules and the
    analyses of one file share it (MetadataWrapper has slots: nowhere else to keep it).
    """
    if _USE_PROVIDER:
        return wrapper.resolve(QualifiedNameProvider)
    # ``wrapper._metadata`` is private (pyproject.toml pins libcst for it). The public way, a
    # ``BaseMetadataProvider`` read through ``wrapper.resolve``, makes libcst run an empty
    # batched traversal of the whole module on first resolve: +10-30% lint CPU on fixtures/.
    # Keyed by NameResolver here, which is no metadata provider (what libcst's types expect).
    cache = cast("dict[type, Mapping[cst.CSTNode, Collection[QualifiedName]]]", wrapper._metadata)
    names = cache.get(NameResolver)
    if names is None:
        names = cache[NameResolver] = build_resolver(wrapper.module)
    return names


@contextmanager
def use_libcst_provider() -> Iterator[None]:
    """Within the block, :func:`qualified_name_map` returns libcst's own provider map (tests only)."""
    global _USE_PROVIDER
    previous, _USE_PROVIDER = _USE_PROVIDER, True
    try:
        yield
    finally:
        _USE_PROVIDER = previous


def qualified_names(names: QualifiedNames, node: cst.CSTNode) -> frozenset[str]:
    """Qualified names of ``node`` (a Name, Attribute or Call's func); empty when unknown."""
    if isinstance(node, cst.Call):
        node = node.func
    return node_names(names, node)


def node_names(names: QualifiedNames, node: cst.CSTNode) -> frozenset[str]:
    """Qualified names of exactly ``node`` (a Call's own entry, not its func's)."""
    found = names.get(node, ())
    if callable(found):  # libcst >= 1.x stores lazily computed names (LazyValue)
        found = found()
    return frozenset(q.name for q in found)


def matches_any(names: QualifiedNames, node: cst.CSTNode, wanted: Iterable[str]) -> bool:
    """Whether ``node`` resolves to one of ``wanted``.

    A wanted entry with a dot is a qualified name (``torch.distributed.init_process_group``);
    one without a dot matches the last component of any resolution, which is how users
    name helpers and bases in config (``run_tests``, ``MultiProcessTestBase``).
    """
    return names_match_any(qualified_names(names, node), wanted)


def dotted_name(node: cst.CSTNode | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain (or a Call's func), else None."""
    if node is None:
        return None
    if isinstance(node, cst.Call):
        node = node.func
    return get_full_name_for_node(node)

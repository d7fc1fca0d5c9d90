"""Main blocks that launch a continuous test class's ranks themselves (DL102).

Before ``run_tests()`` could run continuous classes, PyTorch's continuous-test PR 125648
told authors to launch such a file with ``torchrun`` or with ``mp.spawn()`` under the main
guard, and real files (symmetric memory, NVSHMEM, pipelining, ``test_c10d_ops_nccl.py`` of
that time) end like this::

    if __name__ == "__main__":
        rank = int(os.getenv("RANK", -1))
        if rank != -1:  # started by torchrun: this process is one rank
            SomeTest.run_rank(rank, world_size)
        else:
            torch.multiprocessing.spawn(SomeTest.run_rank, nprocs=world_size, args=(world_size, rdvz_file))

``run_rank`` runs the class's tests in one rank, so this block runs the tests. What counts:
``X.run_rank(...)`` and ``torch.multiprocessing.spawn``/``start_processes`` of
``X.run_rank`` (any import alias), where ``X`` is a class of this module that derives,
directly or through other classes of this module, from a continuous base (the DL2xx list:
``MultiProcContinuousTest``, the misspelled ``MultiProcContinousTest``, ... and
``continuous-bases``). A function of this module handed to ``spawn`` is followed by the
caller like a call of it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Callable

import libcst as cst

from distlint.analysis.names import dotted_name, names_match_any
from distlint.analysis.pg.execution import CONTINUOUS_BASES
from distlint.screens import RANK_ENTRY

#: Process launchers whose first argument runs in every spawned rank.
SPAWNERS = (
    "torch.multiprocessing.spawn",
    "torch.multiprocessing.start_processes",
    "torch.multiprocessing.spawn.spawn",
    "torch.multiprocessing.spawn.start_processes",
)

Resolve = Callable[[str], frozenset[str]]


def continuous_base_names(config_bases: Iterable[str]) -> frozenset[str]:
    """Last name components that make a class continuous (torch's bases plus the config's)."""
    return CONTINUOUS_BASES | frozenset(base.rsplit(".", 1)[-1] for base in config_bases)


def continuous_classes(
    classes: Iterable[cst.ClassDef], resolve: Resolve, base_names: frozenset[str]
) -> frozenset[str]:
    """Names of ``classes`` that derive from a continuous base, directly or through each other.

    ``resolve`` maps a written base (``cd.MultiProcContinuousTest``) to what it may mean.
    """
    pending = {cls.name.value: cls for cls in classes}
    found: set[str] = set()
    changed = True
    while changed:  # a subclass may come before its base in a module with conditional classes
        changed = False
        for name, cls in list(pending.items()):
            if any(_is_continuous_base(base, resolve, base_names, found) for base in cls.bases):
                found.add(name)
                del pending[name]
                changed = True
    return frozenset(found)


def _is_continuous_base(
    base: cst.Arg, resolve: Resolve, base_names: frozenset[str], local: set[str]
) -> bool:
    if base.keyword is not None or base.star:
        return False
    written = dotted_name(base.value)
    if written is None:
        return False
    if written in local:
        return True
    return any(name.rsplit(".", 1)[-1] in base_names for name in resolve(written) | {written})


def rank_entry_class(
    expression: cst.BaseExpression, continuous: frozenset[str], is_local: Callable[[str], bool]
) -> str | None:
    """``X`` for ``X.run_rank`` when ``X`` is one of ``continuous`` (and not rebound by an import)."""
    if (
        isinstance(expression, cst.Attribute)
        and expression.attr.value == RANK_ENTRY
        and isinstance(expression.value, cst.Name)
    ):
        name = expression.value.value
        if name in continuous and is_local(name):
            return name
    return None


def spawned_function(call: cst.Call, candidates: frozenset[str]) -> cst.BaseExpression | None:
    """What ``call`` runs in every rank when it is ``torch.multiprocessing.spawn(fn, ...)`` (or
    ``start_processes``), given the names ``candidates`` its callee may mean; else None."""
    if not names_match_any(candidates, SPAWNERS):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "fn":
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[0].value if positional else None

"""The one place that adds and removes imports: libcst's ``AddImportsVisitor`` and ``RemoveImportsVisitor``.

Lint fixes (:func:`distlint.linter.apply_fixes`), the main-block rewrites and the migrate
codemod all collect the imports they need and the ones they made unused in an
:class:`ImportChanges`, and apply them once, after their own edits - as libcst's
``CodemodCommand`` runs the two visitors after a transform. Nobody edits import lines by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import MetadataWrapper

# libcst.codemod is imported only when an import is really added or removed: it pulls in
# libcst.matchers, whose import alone (~0.5 s) costs more than linting a file, and a lint
# run without fixes never needs it (BENCHMARKS.md, "Where the time goes").

#: ``(module, obj, asname)``, as ``RemoveImportsVisitor`` schedules them.
_Scheduled = tuple[str, Optional[str], Optional[str]]


@dataclass(frozen=True)
class ImportSpec:
    """An import: ``import module [as asname]`` or ``from module import obj [as asname]``."""

    module: str
    obj: str | None = None
    asname: str | None = None


class ImportChanges:
    """Imports to add, and imports to remove if unused, applied to a module in one go.

    ``wrapper`` is needed only by :meth:`remove_used_by`, to resolve what names in the
    removed nodes referred to; it must wrap the module those nodes belong to.
    """

    def __init__(self, wrapper: MetadataWrapper | None = None) -> None:
        from libcst.codemod import CodemodContext

        self._additions = CodemodContext()
        self._removals = CodemodContext(wrapper=wrapper)

    def add(self, spec: ImportSpec) -> ImportChanges:
        """Add the import unless the module already has it (``from`` lines are reused)."""
        from libcst.codemod.visitors import AddImportsVisitor

        AddImportsVisitor.add_needed_import(self._additions, spec.module, spec.obj, spec.asname)
        return self

    def remove_if_unused(self, spec: ImportSpec) -> ImportChanges:
        """Remove the import if nothing in the edited module uses it any more."""
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import(
            self._removals, spec.module, spec.obj, spec.asname
        )
        return self

    def remove_used_by(self, node: cst.CSTNode) -> ImportChanges:
        """Remove the imports ``node`` (a node that the edit drops) used, if nothing else uses them."""
        from libcst.codemod.visitors import RemoveImportsVisitor

        RemoveImportsVisitor.remove_unused_import_by_node(self._removals, node)
        return self

    def apply(self, module: cst.Module) -> cst.Module:
        """``module`` with the additions made, then the unused removals."""
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
        from libcst.metadata import MetadataWrapper

        if AddImportsVisitor.CONTEXT_KEY in self._additions.scratch:
            module = module.visit(AddImportsVisitor(self._additions))
        scheduled: list[_Scheduled] = self._removals.scratch.get(
            RemoveImportsVisitor.CONTEXT_KEY, []
        )
        for batch in _removal_batches(list(dict.fromkeys(scheduled))):
            # RemoveImportsVisitor reads the metadata of the module it transforms through its context.
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            context = CodemodContext(wrapper=wrapper)
            context.scratch[RemoveImportsVisitor.CONTEXT_KEY] = batch
            module = wrapper.visit(RemoveImportsVisitor(context))
        return module


def add_imports(module: cst.Module, imports: Sequence[ImportSpec]) -> cst.Module:
    """``module`` with ``imports`` added (those it already has are not repeated)."""
    changes = ImportChanges()
    for spec in imports:
        changes.add(spec)
    return changes.apply(module)


def _removal_batches(scheduled: list[_Scheduled]) -> list[list[_Scheduled]]:
    """Split scheduled import removals so no batch holds two aliases of one module.

    ``RemoveImportsVisitor`` keeps one alias per module for ``import a.b as x`` removals,
    and test files often import the same module twice (``import torch.distributed as
    c10d`` and ``... as dist``): each alias gets its own pass.
    """
    batches: list[list[_Scheduled]] = []
    for item in scheduled:
        module, obj, _ = item
        for batch in batches:
            if obj is not None or not any(m == module and o is None for m, o, _ in batch):
                batch.append(item)
                break
        else:
            batches.append([item])
    return batches

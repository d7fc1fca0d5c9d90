"""The one place that adds and removes imports: libcst's ``AddImportsVisitor`` and ``RemoveImportsVisitor``.

Lint fixes (:func:`distlint.linter.apply_fixes`), the main-block rewrites and the migrate
codemod all collect the imports they need and the ones they made unused in an
:class:`ImportChanges`, and apply them once, after their own edits - as libcst's
``CodemodCommand`` runs the two visitors after a transform. Nobody edits import lines by hand.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import RemoveImportsVisitor
    from libcst.metadata import MetadataWrapper

# libcst.codemod is imported only when an import is really added or removed: it pulls in
# libcst.matchers, whose import alone (~0.5 s) costs more than linting a file, and a lint
# run without fixes never needs it (BENCHMARKS.md, "Where the time goes").

from distlint.import_usage import ImportedName, ImportUsage, imported_names, may_read
from distlint.import_usage import Scheduled as _Scheduled
from distlint.libcst_shortcuts import matchers_gathered_once, statement_level_adder
from distlint.module_code import ModuleCode

#: The ``ast`` statements a top-level libcst statement was parsed as, None for one made since.
OriginalStatements = Callable[["cst.CSTNode"], "Sequence[ast.stmt] | None"]


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

    def __init__(
        self,
        wrapper: MetadataWrapper | None = None,
        source: bytes | ast.Module | None = None,
        elsewhere: Sequence[tuple[str, ast.stmt]] = (),
        originals: OriginalStatements | None = None,
    ) -> None:
        """``source``: the text ``wrapper``'s module was parsed from, or its stdlib ``ast`` tree,
        when the caller has it (its imports are read from it, rather than from the module printed
        again).
        ``elsewhere``: the code of the file outside the module (the classes migrate leaves out of
        its tree), each statement with its text: an import it uses is never removed.
        ``originals``: the ``ast`` statements of a top-level statement of the module as parsed
        (None for one the edits made): the unused-import pass reads those rather than parse
        them again from the printed module."""
        from libcst.codemod import CodemodContext

        self._additions = CodemodContext()
        self._removals = CodemodContext(wrapper=wrapper)
        self._source = source
        self._elsewhere = elsewhere
        self._originals = originals
        self._original_imports: list[ImportedName] | None = None
        #: The edited module's code, printed for the unused-import pass: ask it for the code of
        #: the result too (only the import lines are printed again).
        self.code = ModuleCode()

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
        """Remove the imports ``node`` (a node that the edit drops) used, if nothing else uses them.

        The names ``node`` reads are matched against the module's top-level imports, as libcst's
        ``RemovedNodeVisitor`` matches them (it follows scopes up to the module's, so a top-level
        import always matches), without its scope analysis of the whole module; a name an import
        below the top level also binds is left to that analysis.
        """
        import libcst as cst
        from libcst.codemod.visitors import RemoveImportsVisitor

        from distlint.import_usage import read_names

        if isinstance(node, (cst.Import, cst.ImportFrom)):  # names what it removes: no wrapper
            RemoveImportsVisitor.remove_unused_import_by_node(self._removals, node)
            return self
        wrapper = self._removals.wrapper
        if wrapper is None:
            # libcst would fail too, with an error whose type depends on its version.
            raise ValueError(
                "removing the imports a node uses needs the MetadataWrapper of its module: "
                "the metadata is not computed for this node"
            )
        if self._original_imports is None:
            source = self._source if self._source is not None else wrapper.module.bytes
            self._original_imports = imported_names(source)
        names = read_names(node)
        hits = [entry for entry in self._original_imports if entry.read_by(names)]
        if any(not entry.top_level for entry in hits):
            RemoveImportsVisitor.remove_unused_import_by_node(self._removals, node)
            return self
        for entry in hits:
            RemoveImportsVisitor.remove_unused_import(self._removals, *entry.scheduled)
        return self

    def apply(self, module: cst.Module) -> cst.Module:
        """``module`` with the additions made, then the unused removals.

        libcst's visitors make every edit, but each walks the module it is given, and a test
        file is thousands of nodes where the edits touch a few import lines: additions are
        made on the module's top import block alone (all ``AddImportsVisitor`` reads or
        changes), and removals on each top-level import statement alone, once a stdlib
        ``ast`` pass over the edited module has said which scheduled imports nothing uses
        (:mod:`distlint.import_usage`). A scheduled import that also appears below the top
        level (in a function, under ``if``) is left to libcst's scope analysis of the whole
        module.
        """
        from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

        with matchers_gathered_once():
            if AddImportsVisitor.CONTEXT_KEY in self._additions.scratch:
                module = _add_at_top(module, self._additions)
            scheduled: list[_Scheduled] = list(
                dict.fromkeys(self._removals.scratch.get(RemoveImportsVisitor.CONTEXT_KEY, []))
            )
            if self._elsewhere and scheduled:
                used = ImportUsage.used_among(self._elsewhere, scheduled, scheduled_words)
                scheduled = [item for item in scheduled if item not in used]
            if scheduled:
                module = _remove_unused(module, scheduled, self._usage(module, scheduled))
        return module

    def _usage(self, module: cst.Module, scheduled: list[_Scheduled]) -> ImportUsage | None:
        """What the edited ``module`` reads of ``scheduled``: the ``ast`` statements of the
        top-level statements the edits kept (``originals``), and those of the others parsed from
        their own code (a top-level statement's code is a module of its own). None where that
        does not parse.

        Only statements that may mention what is scheduled are looked at (:func:`may_mention`;
        the module's code is printed anyway, for the result)."""
        if self._originals is None:
            return ImportUsage.of(self.code.of(module))
        mentions = scheduled_words(scheduled)
        statements: list[ast.stmt] = []
        for node in module.body:
            code = self.code.of_statement(module, node)
            if not may_mention(code, mentions):
                continue
            original = self._originals(node)
            if original is None:
                try:
                    original = ast.parse(code).body
                except (SyntaxError, ValueError):
                    return None  # libcst decides (as for a module that does not parse)
            statements.extend(original)
        return ImportUsage.of_statements(statements)


def may_mention(code: str, words: re.Pattern[str]) -> bool:
    """Whether ``code`` may read or import a name of ``words`` (:func:`scheduled_words`): a name
    read, a string naming it, an import of it, all write the word out. Code with a character
    outside ASCII or a backslash (a name ``ast`` normalises, a string with escapes) always may."""
    return may_read(words).search(code) is not None


def scheduled_words(scheduled: Sequence[_Scheduled]) -> re.Pattern[str]:
    """A pattern finding, as a whole word, each name code must write to read what ``scheduled``
    imports (``ImportUsage.in_use``: the alias, else the object, else the module's first part)
    or import it again below the top level (``imported_below_top_level``: the object, else the
    module's last part)."""
    words: set[str] = set()
    for module, obj, asname in scheduled:
        parts = module.split(".")
        words.update(w for w in (asname, obj) if w)
        if obj is None:
            words.add(parts[-1])
            if asname is None:
                words.add(parts[0])
    alternatives = "|".join(sorted(re.escape(w) for w in words if w))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])")


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


def _add_at_top(module: cst.Module, context: CodemodContext) -> cst.Module:
    """``AddImportsVisitor`` on the statements it reads and writes: the top import block and
    the statement after it, whose leading lines it may change (a stand-in carries them)."""
    import libcst as cst

    end = top_import_block_end(module)
    body = list(module.body)
    after = body[end] if end < len(body) else None
    head = body[:end]
    if after is not None:
        head.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=after.leading_lines))
    adder = statement_level_adder()(context)
    added = list(module.with_changes(body=head).visit(adder).body)
    if after is not None:
        stand_in = added.pop()
        added.append(after.with_changes(leading_lines=stand_in.leading_lines))
    return module.with_changes(body=[*added, *body[end + 1 :]])


def top_import_block_end(module: cst.Module) -> int:
    """Index of the first statement after the module's top import block (after its docstring),
    as ``AddImportsVisitor`` finds it: lines holding one ``import`` or ``from`` statement."""
    import libcst as cst

    body = module.body
    start = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and len(body[0].body) == 1:
        first = body[0].body[0]
        if (isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString)) or (
            isinstance(first, cst.Assign)
            and any(
                isinstance(t.target, cst.Name) and t.target.value == "__strict__"
                for t in first.targets
            )
        ):
            start = 1
    end = start
    while end < len(body) and _is_import_line(body[end]):
        end += 1
    return end


def _is_import_line(statement: cst.BaseStatement) -> bool:
    import libcst as cst

    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], (cst.Import, cst.ImportFrom))
    )


def _remove_unused(
    module: cst.Module, scheduled: list[_Scheduled], usage: ImportUsage | None
) -> cst.Module:
    if usage is None or any(usage.imported_below_top_level(item) for item in scheduled):
        return _remove_with_scopes(module, scheduled)
    unused = [item for item in scheduled if not usage.in_use(item)]
    if not unused:
        return module
    body: list[cst.BaseStatement] = []
    for statement in module.body:
        if _imports_any(statement, unused):
            body.extend(_remove_from_line(module.with_changes(body=[statement]), unused).body)
        else:
            body.append(statement)
    return module.with_changes(body=body)


def _remove_from_line(module: cst.Module, scheduled: list[_Scheduled]) -> cst.Module:
    """``RemoveImportsVisitor`` on a module of one import line, where nothing can read a name:
    every alias is unused, as libcst's scope analysis would find (:func:`_line_remover`)."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import RemoveImportsVisitor

    remover = _line_remover()
    for batch in _removal_batches(scheduled):
        context = CodemodContext()
        context.scratch[RemoveImportsVisitor.CONTEXT_KEY] = batch
        module = module.visit(remover(context))
    return module


@functools.cache
def _line_remover() -> type[RemoveImportsVisitor]:
    """``RemoveImportsVisitor`` without its scope analysis, for a module of import lines alone.

    Its ``visit_Module`` asks ``GatherUnusedImportsVisitor`` which aliases are unused: with scope
    metadata, and three more visitors built and run, ~30 ms a call however small the module. In
    a module of import lines nothing reads a name, so the answer is every alias of every
    ``import`` and of every ``from`` import that visitor looks at (not ``*``, not relative, not
    ``__future__``); the rest of the visitor (which aliases match, the commas and parentheses
    left behind) is libcst's own. tests/test_imports.py compares the results with libcst's
    visitors on whole modules.
    """
    import libcst as cst
    from libcst.codemod.visitors import RemoveImportsVisitor
    from libcst.codemod.visitors._gather_unused_imports import MODULES_IGNORED_BY_DEFAULT

    class LineRemover(RemoveImportsVisitor):
        # No scope metadata to compute (libcst types this as a one-element tuple).
        METADATA_DEPENDENCIES = ()  # type: ignore[assignment, misc]

        def visit_Module(self, node: cst.Module) -> None:
            unused: dict[cst.ImportAlias, cst.Import | cst.ImportFrom] = {}
            for statement in node.body:
                for small in getattr(statement, "body", ()):
                    if isinstance(small, cst.Import):
                        names: Sequence[cst.ImportAlias] = small.names
                    elif (
                        isinstance(small, cst.ImportFrom)
                        and not isinstance(small.names, cst.ImportStar)
                        and small.module is not None
                        and small.module.value not in MODULES_IGNORED_BY_DEFAULT
                    ):
                        names = small.names
                    else:
                        continue
                    for alias in names:
                        unused[alias] = small
            self._unused_imports = unused

    return LineRemover


def _remove_with_scopes(module: cst.Module, scheduled: list[_Scheduled]) -> cst.Module:
    """``RemoveImportsVisitor`` on ``module``: libcst's scope analysis decides what is unused."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import RemoveImportsVisitor
    from libcst.metadata import MetadataWrapper

    for batch in _removal_batches(scheduled):
        # RemoveImportsVisitor reads the metadata of the module it transforms through its context.
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        context = CodemodContext(wrapper=wrapper)
        context.scratch[RemoveImportsVisitor.CONTEXT_KEY] = batch
        module = wrapper.visit(RemoveImportsVisitor(context))
    return module


def _imports_any(statement: cst.BaseStatement, scheduled: list[_Scheduled]) -> bool:
    """Whether top-level ``statement`` is an import line holding one of ``scheduled``."""
    import libcst as cst
    from libcst.helpers import get_absolute_module_for_import

    from distlint.import_usage import ImportKey

    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        names: set[ImportKey]
        if isinstance(small, cst.Import):
            names = {(alias.evaluated_name, None) for alias in small.names}
        elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            module = get_absolute_module_for_import(None, small)
            names = {(module, alias.evaluated_name) for alias in small.names}
        else:
            continue
        if any((module, obj) in names for module, obj, _ in scheduled):
            return True
    return False

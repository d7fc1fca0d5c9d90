"""Which imports an edited module still uses, read with stdlib ``ast`` the way libcst's
unused-import check (``GatherUnusedImportsVisitor``) reads them.

An import is in use when a name it binds is read anywhere in the module (``import a.b`` binds
``a``), named in ``__all__``, or appears in a string annotation. Unlike libcst, no scopes: a
function's local that shadows an imported name counts as a use, so an import is at worst kept
where libcst would drop it, never dropped where libcst keeps it. :mod:`distlint.imports` uses it
to hand libcst's ``RemoveImportsVisitor`` only the import lines with something to remove.
"""

from __future__ import annotations

import ast
import bisect
import copy
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from distlint.syntax.ast_lines import first_line
from distlint.syntax.ast_nodes import statements_below

if TYPE_CHECKING:
    import libcst as cst

#: ``(module, obj, asname)``, as libcst's ``RemoveImportsVisitor`` schedules removals.
Scheduled = tuple[str, Optional[str], Optional[str]]
#: ``(module, obj)`` of an import (module None: a relative ``from . import``).
ImportKey = tuple[Optional[str], Optional[str]]

#: Calls whose string arguments (keywords too: ``bound=``) libcst reads as annotations.
_STRING_ANNOTATION_CALLS = frozenset({"TypeVar"})
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class ImportUsage:
    #: Names read anywhere, ``__all__`` entries, and every dotted prefix in string annotations.
    names: frozenset[str]
    #: ``(module, obj)`` of the imports that are not statements of the module's top level.
    nested: frozenset[ImportKey]

    @classmethod
    def of(cls, code: str) -> ImportUsage | None:
        """The usage of module ``code``; None when it does not parse (libcst decides then)."""
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            return None
        return cls.of_statements(tree.body)

    @classmethod
    def of_statements(cls, statements: Iterable[ast.stmt]) -> ImportUsage:
        """The usage of a module's top-level ``statements`` (all of them, or some: a module's
        classes that ``distlint migrate`` leaves out of its libcst tree)."""
        names: set[str] = set()
        nested: set[ImportKey] = set()
        for statement in statements:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name):
                    if not isinstance(node.ctx, ast.Store):
                        names.add(node.id)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    if node is not statement:
                        nested.update(_imported(node))
                elif isinstance(node, (ast.arg, ast.AnnAssign)) and node.annotation is not None:
                    names.update(_string_names(node.annotation))
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
                    names.update(_string_names(node.returns))
                elif isinstance(node, ast.Call) and _called_name(node) in _STRING_ANNOTATION_CALLS:
                    for argument in [*node.args, *(k.value for k in node.keywords)]:
                        names.update(_string_names(argument))
                elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                        names.update(_strings(node.value))
        return cls(frozenset(names), frozenset(nested))

    @classmethod
    def used_among(
        cls,
        pieces: Iterable[tuple[str, ast.stmt]],
        scheduled: Sequence[Scheduled],
        words_of: Callable[[Sequence[Scheduled]], re.Pattern[str]],
    ) -> set[Scheduled]:
        """Which of ``scheduled`` the ``pieces`` (statements, each with its text, which ends on
        its last line) use (:meth:`in_use`). ``words_of`` finds what code must write to read one
        of some scheduled imports (``imports.scheduled_words``; a line outside ASCII or with a
        backslash may too): only a part with such a line is walked, a class or def one member
        at a time (the classes ``distlint migrate`` leaves out of libcst's tree are large, and
        an import is read in a few of their members), and an import found in use is looked
        for no more."""
        pending = list(dict.fromkeys(scheduled))
        hot = may_read(words_of(pending))
        used: set[Scheduled] = set()
        for code, statement in pieces:
            lines, breaks = _hot_lines(code, hot)
            first = (statement.end_lineno or statement.lineno) - breaks  # the code's first line
            for part, header in _parts(statement) if lines else ():
                start = first_line(part) - first
                if not header and start >= 0:
                    at = bisect.bisect_left(lines, start)
                    if at == len(lines) or lines[at] > (part.end_lineno or part.lineno) - first:
                        continue  # no line of the part may read one
                usage = cls.of_statements([part])
                found = [item for item in pending if usage.in_use(item)]
                if found:
                    used.update(found)
                    pending = [item for item in pending if item not in used]
                    if not pending:
                        return used
                    hot = may_read(words_of(pending))
                    lines, _ = _hot_lines(code, hot)
        return used

    def in_use(self, item: Scheduled) -> bool:
        module, obj, asname = item
        if asname is not None:
            return asname in self.names
        if obj is not None:
            return obj in self.names
        parts = module.split(".")
        return any(".".join(parts[:i]) in self.names for i in range(1, len(parts) + 1))

    def imported_below_top_level(self, item: Scheduled) -> bool:
        module, obj, _ = item
        return (module, obj) in self.nested


@dataclass(frozen=True)
class ImportedName:
    """One name an import statement binds: what a removal schedules, and the prefix it binds."""

    scheduled: Scheduled
    #: ``dist`` for ``import torch.distributed as dist``, ``torch.distributed`` unaliased.
    prefix: str
    top_level: bool

    def read_by(self, names: Iterable[str]) -> bool:
        """Whether one of the dotted ``names`` read refers to what this import binds."""
        return any(n == self.prefix or n.startswith(self.prefix + ".") for n in names)


def imported_names(code: str | bytes | ast.Module) -> list[ImportedName]:
    """Every name the imports of module ``code`` (or its ``ast`` tree) bind (relative imports and
    ``*`` left out)."""
    tree = code if isinstance(code, ast.Module) else ast.parse(code)
    top_level = {id(statement) for statement in tree.body}
    found: list[ImportedName] = []
    for node in statements_below(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(
                    ImportedName(
                        (alias.name, None, alias.asname),
                        alias.asname or alias.name,
                        id(node) in top_level,
                    )
                )
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if alias.name != "*":
                    found.append(
                        ImportedName(
                            (node.module, alias.name, alias.asname),
                            alias.asname or alias.name,
                            id(node) in top_level,
                        )
                    )
    return found


def read_names(node: cst.CSTNode) -> set[str]:
    """The dotted name of every ``Name`` and ``Attribute`` in ``node`` (``a.b.c``, ``a.b``, ``a``),
    as libcst's ``RemovedNodeVisitor`` looks each of them up."""
    import libcst as cst
    from libcst.helpers import get_full_name_for_node

    found: set[str] = set()
    pending: list[cst.CSTNode] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, (cst.Name, cst.Attribute)):
            name = get_full_name_for_node(current)
            if name is not None:
                found.add(name)
        pending.extend(current.children)
    return found


def _parts(statement: ast.stmt) -> Iterator[tuple[ast.stmt, bool]]:
    """``statement``, a class or def cut into its header (a copy without a body: decorators,
    bases, parameters, annotations; ``True``) and the parts of each statement of its body; any
    other statement whole. Together they read the names ``statement`` reads."""
    if not isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        yield statement, False
        return
    header = copy.copy(statement)
    header.body = []
    yield header, True
    for child in statement.body:
        yield from _parts(child)


def may_read(words: re.Pattern[str]) -> re.Pattern[str]:
    """What finds code that may read a name of ``words``: the word written out, or what makes
    code read more than it writes, a character outside ASCII (a name ``ast`` normalises) or a
    backslash (a string with escapes)."""
    return re.compile(rf"[^\x00-\x7f]|\\|{words.pattern}")


def _hot_lines(code: str, hot: re.Pattern[str]) -> tuple[list[int], int]:
    """The indexes of ``code``'s lines where ``hot`` matches, in order, and how many line
    breaks ``code`` holds (``\\r\\n``, ``\\r``, ``\\n``)."""
    found: list[int] = []
    line = done = 0
    returns = "\r" in code
    for match in hot.finditer(code):  # a match never starts inside a line break
        line += _breaks(code, done, match.start(), returns)
        done = match.start()
        if not found or found[-1] != line:
            found.append(line)
    return found, line + _breaks(code, done, len(code), returns)


def _breaks(code: str, start: int, end: int, returns: bool) -> int:
    count = code.count("\n", start, end)
    if returns:
        count += code.count("\r", start, end) - code.count("\r\n", start, end)
    return count


def _imported(node: ast.Import | ast.ImportFrom) -> set[ImportKey]:
    if isinstance(node, ast.Import):
        return {(alias.name, None) for alias in node.names}
    module = node.module if node.level == 0 else None
    return {(module, alias.name) for alias in node.names}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _strings(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def _string_names(annotation: ast.AST | None) -> set[str]:
    """Every dotted name, and each of its prefixes, in the strings of ``annotation``."""
    found: set[str] = set()
    for text in _strings(annotation):
        for dotted in _DOTTED.findall(text):
            parts = dotted.split(".")
            found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return found

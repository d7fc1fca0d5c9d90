"""A module's code from its top-level statements' code, each generated once.

``distlint migrate`` prints the edited module twice: once for the ``ast`` pass that says
which scheduled imports nothing uses any more (:mod:`distlint.imports`), once for the file it
writes. Between the two only import lines change, and libcst's edits keep every other
top-level statement the same object, so each statement's text is generated once and reused
(the second print of PyTorch's 295 KB ``test_c10d_nccl.py`` was ~10% of its migration).

A statement the edits kept is not even generated once: its code is its lines of the text the
module was parsed from (:meth:`ModuleCode.remember_parsed`), a third of the printing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from distlint.syntax.ast_lines import Unit, first_line, is_empty_line

if TYPE_CHECKING:
    import libcst as cst

#: What ends a line for Python's tokenizer, as libcst splits lines too.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class ModuleCode:
    """``module.code``, with each top-level node's text remembered by identity."""

    def __init__(self) -> None:
        #: id(node) -> (node, indent, newline, its code): the node is kept, so its id stays its own.
        self._texts: dict[int, tuple[cst.CSTNode, str, str, str]] = {}
        #: The statements whose code is their lines of the parsed text (:meth:`remember_parsed`).
        self._parsed: set[int] = set()

    def remember_parsed(
        self,
        module: cst.Module,
        text: str,
        twin_of: Callable[[cst.CSTNode], Unit | ast.expr],
    ) -> None:
        """Remember the code of each top-level statement of ``module``, parsed from ``text``,
        as its lines of ``text``: those of its leading empty and comment lines (libcst's
        ``leading_lines``, one line each), then its own up to where the next statement's
        begin (a block's trailing lines are the block's), the last up to the module's
        ``footer``. ``twin_of``: a statement's ``ast`` twin (``Twins.ast_of``: the line its first
        token is on; ``KeyError`` where it has none). Nothing is remembered where the lines do not
        have the shape that says so (a line that should be empty or a comment is not, a
        statement would begin before the one above it ends)."""
        lines = _LINE.findall(text)
        if not module.has_trailing_newline or not module.body or "".join(lines) != text:
            return
        starts: list[int] = []
        for statement in module.body:
            try:
                unit = twin_of(statement)
            except KeyError:
                return
            if isinstance(unit, ast.expr):  # a decorator's twin: no statement
                return
            first = first_line(unit)
            start = first - 1 - len(statement.leading_lines)
            leading = lines[start : first - 1]
            if start < (starts[-1] + 1 if starts else 0) or not all(
                is_empty_line(line) for line in leading
            ):
                return
            if getattr(statement, "decorators", None) and not lines[first - 1].lstrip().startswith(
                "@"
            ):
                return  # ``@(\n  decorator)``: its expression starts below the ``@``
            starts.append(start)
        end = len(lines) - len(module.footer)
        if end < starts[-1] + 1 or not all(is_empty_line(line) for line in lines[end:]):
            return
        indent, newline = module.default_indent, module.default_newline
        for statement, start, stop in zip(module.body, starts, [*starts[1:], end]):
            self._texts[id(statement)] = (statement, indent, newline, "".join(lines[start:stop]))
            self._parsed.add(id(statement))

    def edited_code(self, module: cst.Module) -> str | None:
        """The code of the top-level statements of ``module`` (an edit of the module given to
        :meth:`remember_parsed`) that are not the parsed ones, after the module's ``from
        __future__`` imports: what the edits can have made invalid Python (the others are
        the file's own lines; no error of the compiler spans two top-level statements but a
        misplaced ``__future__`` import). None where nothing was remembered, or a ``__future__``
        import does not come first (the whole module's code is to be compiled)."""
        from distlint.cst_utils import is_string_statement

        if not self._parsed:
            return None
        futures: list[str] = []
        edited: list[str] = []
        for index, node in enumerate(module.body):
            if _is_future_import(node):
                if edited or index > len(futures) + is_string_statement(module.body[0]):
                    return None
                futures.append(self.of_statement(module, node))
            elif id(node) not in self._parsed or self._texts[id(node)][0] is not node:
                edited.append(self.of_statement(module, node))
        return "".join(futures + edited)

    def of(self, module: cst.Module) -> str:
        """Exactly ``module.code``. A top-level statement starts at column 0 with no indentation
        inherited, so its code alone is its piece of the module's (libcst's ``code_for_node``);
        a module that drops its last newline, or is empty, is printed whole."""
        if not module.has_trailing_newline or not module.body:
            return module.code
        nodes = (*module.header, *module.body, *module.footer)
        return "".join(self.of_statement(module, node) for node in nodes)

    def of_statement(self, module: cst.Module, node: cst.CSTNode) -> str:
        """The code of ``node``, a top-level statement (or header or footer line) of ``module``:
        its piece of ``module.code``."""
        indent, newline = module.default_indent, module.default_newline
        known = self._texts.get(id(node))
        if known is None or known[0] is not node or known[1:3] != (indent, newline):
            known = (node, indent, newline, module.code_for_node(node))
            self._texts[id(node)] = known
        return known[3]


def _is_future_import(node: cst.CSTNode) -> bool:
    import libcst as cst

    return isinstance(node, cst.SimpleStatementLine) and any(
        isinstance(s, cst.ImportFrom)
        and isinstance(s.module, cst.Name)
        and s.module.value == "__future__"
        and not s.relative
        for s in node.body
    )

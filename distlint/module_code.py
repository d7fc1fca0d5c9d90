"""A module's code from its top-level statements' code, each generated once.

``distlint migrate`` prints the edited module twice: once for the ``ast`` pass that says
which scheduled imports nothing uses any more (:mod:`distlint.imports`), once for the file it
writes. Between the two only import lines change, and libcst's edits keep every other
top-level statement the same object, so each statement's text is generated once and reused
(the second print of PyTorch's 295 KB ``test_c10d_nccl.py`` was ~10% of its migration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst


class ModuleCode:
    """``module.code``, with each top-level node's text remembered by identity."""

    def __init__(self) -> None:
        #: id(node) -> (node, indent, newline, its code): the node is kept, so its id stays its own.
        self._texts: dict[int, tuple[cst.CSTNode, str, str, str]] = {}

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

"""A cheaper equivalent of libcst's ``PositionProvider``, for the linter's hot path.

:func:`node_spans` gives the positions of a few reported nodes for a tenth of
``PositionProvider``'s cost, with exactly the provider's values (``tests/test_engine.py``
compares them node by node on the fixtures). Qualified names have their own cheap
equivalent in ``distlint.analysis.names.resolver``. See BENCHMARKS.md for what they save.
"""

from __future__ import annotations

import bisect
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

import libcst as cst

# libcst's code generation state and ``Module._codegen`` are not public: there is no public
# way to get a few nodes' positions without PositionProvider's whole-module cost.
# pyproject.toml pins libcst to the versions that tests/test_engine.py has compared with
# PositionProvider, node by node, on every fixture.
from libcst._nodes.internal import CodegenState

# -- positions ---------------------------------------------------------------------------------
# libcst's ``PositionProvider`` builds a ``CodeRange`` for every node of the module, with
# a regex split per token: on a 19 KB test file it costs ~125 ms, twice the parse. The
# linter only needs the positions of the nodes it reports. This runs the same code
# generation while counting characters (no regex, no objects per node), then turns
# the offsets of the requested nodes into line/column once. The semantics are
# ``PositionProvider``'s: syntactic ranges where libcst records them (with its
# start/end hoisting), whitespace-inclusive ranges for the other nodes; columns are
# 0-based characters, lines 1-based, CRLF, CR and LF are newlines.
# ``tests/test_engine.py`` checks it against ``PositionProvider`` on every fixture.

_NEWLINE = re.compile(r"\r\n?|\n")
#: ``(start_line, start_column, end_line, end_column)``: lines 1-based, columns 0-based.
Span = Tuple[int, int, int, int]


@dataclass
class _OffsetCodegenState(CodegenState):
    offset: int = 0
    ranges: Dict[cst.CSTNode, Tuple[int, int]] = field(default_factory=dict)
    stack: List[int] = field(default_factory=list)
    popped: str = ""

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        # libcst drops the module's last newline from the code but not from the
        # positions; keep it for the line arithmetic.
        if self.tokens:
            self.popped = self.tokens.pop()

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.ranges:  # a syntactic range, recorded first, wins
            self.ranges[node] = (start, self.offset)

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> Iterator[None]:
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None:
                start = self.ranges[start_node][0]
            if end_node is not None:
                end = self.ranges[end_node][1]
            self.ranges[node] = (start, end)


def node_spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> Dict[cst.CSTNode, Span]:
    """Spans of ``nodes`` (nodes of ``module``), as ``PositionProvider`` would give them."""
    wanted = list(nodes)
    state = _OffsetCodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    code = "".join(state.tokens) + state.popped
    # Offset of the first character of every line after the first.
    line_starts = [match.end() for match in _NEWLINE.finditer(code)]

    def line_column(offset: int) -> Tuple[int, int]:
        index = bisect.bisect_right(line_starts, offset)
        return index + 1, offset - (line_starts[index - 1] if index else 0)

    spans: Dict[cst.CSTNode, Span] = {}
    for node in wanted:
        start, end = state.ranges[node]
        spans[node] = (*line_column(start), *line_column(end))
    return spans

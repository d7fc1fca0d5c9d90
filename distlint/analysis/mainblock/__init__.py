"""The ``if __name__ == "__main__":`` block of a test module: facts (DL101-DL105), pre-screen, fixes.

Pieces: :mod:`.runners` (which calls run the tests), :mod:`.guards` (the guard, in libcst and
stdlib ``ast``), :mod:`.facts` (the libcst analysis every DL1xx finding comes from),
:mod:`.prescreen` (its cheap, conservative ``ast`` twin), :mod:`.code_scan` (what a block of
code does when it runs), :mod:`.generated_tests`, :mod:`.continuous_launch` and :mod:`.fix`
(rewrites shared by the DL1xx fixes and ``distlint migrate``).

The names below are the package's interface for the rules.
"""

from distlint.analysis.mainblock.facts import (
    MainBlockFacts,
    analyze_main_block,
    file_label,
    main_block_facts,
    main_block_required,
)
from distlint.analysis.mainblock.guards import (
    is_ast_any_main_guard,
    is_ast_main_guard,
    is_main_guard,
)
from distlint.screens.main_block import may_require_main, screen_shape, screened_shape

__all__ = [
    "MainBlockFacts",
    "analyze_main_block",
    "file_label",
    "is_ast_any_main_guard",
    "is_ast_main_guard",
    "is_main_guard",
    "main_block_facts",
    "main_block_required",
    "may_require_main",
    "screen_shape",
    "screened_shape",
]

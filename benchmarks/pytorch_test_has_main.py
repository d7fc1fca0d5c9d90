"""PyTorch's TEST_HAS_MAIN linter, re-implemented for ``lint_throughput.py``'s baseline.

The logic of ``tools/linter/adapters/test_has_main_linter.py`` in pytorch/pytorch as it
ships (read at commit ff461104f9da7b6b4b3acf870f52246c14616c58), written again here so
that the benchmark compares against what PyTorch really runs, at the same cost:

* each file is read as text and parsed with ``libcst.parse_module``;
* a ``CSTVisitor`` whose ``visit_Module`` looks at the module's top-level statements
  only and returns ``False`` (the tree is never walked);
* a top-level ``if __name__ == "__main__":`` (either order, either quote) passes when a
  ``raise`` or a call of ``run_tests`` / ``<anything>.run_tests`` appears *inside that
  block* (``matchers.findall`` on the ``If`` node);
* files are mapped over ``multiprocessing.Pool(8)`` (whatever the CPU count), and every
  file without such a block gives one JSON lint message on stdout.

Run it as lintrunner does: ``python benchmarks/pytorch_test_has_main.py @paths.txt``
(one path per line) or with the paths as arguments.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing

import libcst as cst
import libcst.matchers as m

LINTER_CODE = "TEST_HAS_MAIN"
#: The pool size PyTorch's linter hard-codes.
POOL_SIZE = 8
MESSAGE = (
    "Test files need to have a main block which either calls run_tests (to ensure that the tests are "
    "run during OSS CI) or raises an exception and added to the blocklist in test/run_test.py"
)

_DUNDER_NAME = m.Name("__name__")
_MAIN_STRING = m.SimpleString('"__main__"') | m.SimpleString("'__main__'")
_MAIN_GUARD = m.If(
    test=m.Comparison(_DUNDER_NAME, [m.ComparisonTarget(m.Equal(), _MAIN_STRING)])
    | m.Comparison(_MAIN_STRING, [m.ComparisonTarget(m.Equal(), _DUNDER_NAME)])
)
_RUNS_OR_RAISES = m.Raise() | m.Call(
    func=m.Name("run_tests") | m.Attribute(attr=m.Name("run_tests"))
)


class MainBlockFinder(cst.CSTVisitor):
    """Sets ``found`` when a top-level main guard raises or calls ``run_tests``."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Module(self, node: cst.Module) -> bool:
        for statement in node.children:
            if m.matches(statement, _MAIN_GUARD) and m.findall(statement, _RUNS_OR_RAISES):
                self.found = True
                break
        return False  # like PyTorch's: the module's children are never visited


def check_file(filename: str) -> list[dict[str, object]]:
    """The lint messages for one file: one when it has no main block that runs or raises."""
    with open(filename) as handle:
        source = handle.read()
    finder = MainBlockFinder()
    cst.parse_module(source).visit(finder)
    if finder.found:
        return []
    return [
        {
            "path": filename,
            "line": None,
            "char": None,
            "code": LINTER_CODE,
            "severity": "error",
            "name": "[no-main]",
            "original": None,
            "replacement": None,
            "description": MESSAGE,
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], fromfile_prefix_chars="@")
    parser.add_argument("filenames", nargs="+", help="paths to lint")
    args = parser.parse_args()
    pool = multiprocessing.Pool(POOL_SIZE)
    per_file = pool.map(check_file, args.filenames)
    pool.close()
    pool.join()
    for messages in per_file:
        for message in messages:
            print(json.dumps(message), flush=True)


if __name__ == "__main__":
    main()

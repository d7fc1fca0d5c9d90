"""The linter and the codemod run on Python 3.9 (``requires-python``), which CI does not run:
the 3.10+ constructs that Python 3.11 accepts silently, found in the source instead."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: distlint.runtime needs torch, whose current releases need Python 3.10 or later.
SOURCES = sorted(p for p in (ROOT / "distlint").rglob("*.py") if "runtime" not in p.parts)
#: ``ast`` node classes Python 3.9 lacks (``match`` statements arrived in 3.10).
NEW_AST_NODES = frozenset(
    {"Match", "MatchValue", "MatchSingleton", "MatchSequence", "MatchMapping", "MatchClass"}
    | {"MatchStar", "MatchAs", "MatchOr", "match_case", "TryStar", "TypeAlias", "TypeVar"}
)


def _problems(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Match):
            found.append(f"{where}: a match statement")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "ast"
            and node.attr in NEW_AST_NODES
        ):
            found.append(f"{where}: ast.{node.attr}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "zip"
            and any(k.arg == "strict" for k in node.keywords)
        ):
            found.append(f"{where}: zip(strict=...)")
    return found


def test_the_linter_and_codemod_use_nothing_python_3_9_lacks() -> None:
    assert len(SOURCES) > 50
    problems = [problem for path in SOURCES for problem in _problems(path)]
    assert problems == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import ast\n"
        "x = ast.MatchAs\n"
        "y = list(zip([1], [2], strict=True))\n"
        "match x:\n"
        "    case _:\n"
        "        pass\n"
    )
    kinds = [problem.split(": ", 1)[1] for problem in _problems(sample)]
    assert sorted(kinds) == ["a match statement", "ast.MatchAs", "zip(strict=...)"]

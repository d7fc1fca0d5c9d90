"""distlint's modules import each other without a cycle (read with ast, nothing imported).

Every import counts, including the ones inside functions: a lazy import hides a cycle
from the interpreter, not from the next reader. Imports under ``if TYPE_CHECKING:`` never
run; they are checked separately (the linter <-> rules.base cycle was one: a shared type
belongs in a leaf module such as ``distlint.source``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import distlint

PACKAGE = "distlint"
ROOT = Path(distlint.__file__).resolve().parent


def module_name(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST, type_only: bool) -> Iterator[ast.AST]:
    """Every node of ``tree``; the bodies of ``if TYPE_CHECKING:`` blocks only if ``type_only``."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_only:
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))


def imported_modules(
    path: Path, current: str, modules: set[str], type_only: bool = False
) -> set[str]:
    """The package's modules that ``path`` imports at run time (and for type checkers, if
    ``type_only``), wherever in the file the import is."""
    package = current if path.stem == "__init__" else current.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in _nodes(ast.parse(path.read_text(), str(path)), type_only):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # "from . import worker" imports the module worker (the package is already there);
            # "from .outcome import Verdict" imports the module outcome.
            candidates = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        found.update(name for name in candidates if name in modules and name != current)
    return found


def import_graph(
    root: Path, package: str = PACKAGE, type_only: bool = False
) -> dict[str, set[str]]:
    paths = {module_name(path, root, package): path for path in sorted(root.rglob("*.py"))}
    return {
        name: imported_modules(path, name, set(paths), type_only) for name, path in paths.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_sees_lazy_relative_and_nested_imports(tmp_path):
    # The shapes this file guards against: a module-level import one way, a lazy one back,
    # also across subpackages; an import that only type checkers see is no edge.
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "continuous.py").write_text("from .resolve import plan\n")
    (tmp_path / "resolve.py").write_text("def plan():\n    from .continuous import Base\n")
    (tmp_path / "leaf.py").write_text("from . import resolve\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("")
    (tmp_path / "sub" / "low.py").write_text("def f():\n    import pkg.top\n")
    (tmp_path / "top.py").write_text("from .sub.low import f\n")
    (tmp_path / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .leaf import x\n"
    )
    (tmp_path / "typed_back.py").write_text("from . import typed\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.leaf"] == {"pkg.resolve"}
    assert graph["pkg.typed"] == set()
    assert cycles(graph) == [["pkg.continuous", "pkg.resolve"], ["pkg.sub.low", "pkg.top"]]
    (tmp_path / "leaf.py").write_text("from . import typed_back\n")
    assert cycles(import_graph(tmp_path, "pkg")) == cycles(graph)
    assert ["pkg.leaf", "pkg.typed", "pkg.typed_back"] in cycles(
        import_graph(tmp_path, "pkg", type_only=True)
    )


def test_distlint_has_no_import_cycle():
    graph = import_graph(ROOT)
    # The graph is real: it sees the subpackages, lazy imports included.
    assert {"distlint.runtime.resolve", "distlint.runtime.decorators"} <= graph[
        "distlint.runtime.continuous"
    ]
    assert "distlint.linter" in graph["distlint.engine"]  # imported inside a function
    assert "distlint.source" in graph["distlint.linter"]
    assert cycles(graph) == []


def test_imports_for_type_checkers_make_no_cycle_either():
    assert cycles(import_graph(ROOT, type_only=True)) == []


def test_the_shared_leaf_modules_import_nothing_of_distlint():
    graph = import_graph(ROOT)
    for leaf in ("distlint.source", "distlint.cst_utils", "distlint.torch_names"):
        assert graph[leaf] == set(), leaf

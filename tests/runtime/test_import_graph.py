"""distlint.runtime's modules import each other without a cycle (read with ast, nothing imported).

Every import counts, including the ones inside functions: a lazy import hides a
cycle from the interpreter, not from the next reader.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import distlint.runtime
import distlint.runtime.continuous
from distlint.runtime import markers

PACKAGE = "distlint.runtime"
ROOT = Path(distlint.runtime.__file__).resolve().parent


def module_name(path: Path) -> str:
    return PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"


def imported_modules(path: Path, modules: Set[str]) -> Set[str]:
    """The package's modules that ``path`` imports, wherever in the file the import is."""
    current = module_name(path)
    package = current if path.stem == "__init__" else current.rsplit(".", 1)[0]
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
            ]
        else:
            continue
        found.update(name for name in candidates if name in modules and name != current)
    return found


def import_graph(root: Path) -> Dict[str, Set[str]]:
    paths = sorted(root.glob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported_modules(path, modules) for path in paths}


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

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


def test_the_cycle_finder_sees_lazy_relative_imports(tmp_path):
    # The shape this file guards against: a module-level import one way, a lazy one back.
    (tmp_path / "continuous.py").write_text("from .resolve import plan\n")
    (tmp_path / "resolve.py").write_text("def plan():\n    from .continuous import Base\n")
    (tmp_path / "leaf.py").write_text("from . import resolve\n")
    graph = import_graph(tmp_path)
    assert graph[f"{PACKAGE}.leaf"] == {f"{PACKAGE}.resolve"}
    assert cycles(graph) == [[f"{PACKAGE}.continuous", f"{PACKAGE}.resolve"]]


def test_distlint_runtime_has_no_import_cycle():
    graph = import_graph(ROOT)
    # The graph is real: the class module imports the modules that once imported it back.
    assert {f"{PACKAGE}.resolve", f"{PACKAGE}.decorators"} <= graph[f"{PACKAGE}.continuous"]
    assert cycles(graph) == []


def test_the_continuous_marker_names_exactly_the_runtime_base_class():
    base = distlint.runtime.continuous.MultiProcContinuousTest
    sub = type("Sub", (base,), {})
    assert markers.is_continuous(base) and markers.is_continuous(sub)
    assert markers.is_continuous_base(base) and not markers.is_continuous_base(sub)
    assert markers.CONTINUOUS_ATTR in vars(base)
    assert not markers.is_continuous(type("Plain", (), {}))

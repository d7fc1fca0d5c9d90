"""Which ``test_*`` methods a base class from *another module* gives a class.

A continuous class keeps the bases of its per-test class that are not same-file classes
(mixins, ``test_c10d_common.CommonDistributedDataParallelTest``...). When such a base
defines tests, the per-test class still inherits them and the continuous class would too:
every one of them collected twice, and none of them ever analysed. So before a base from
elsewhere is handed to a continuous class, its module is found next to the file (or as an
installed package, located without importing it) and read with the stdlib ``ast``: nothing
is imported or run. A base whose tests cannot be seen counts as one that has them.

The PG analysis asks this (a class-level ``external-base`` reason), so ``distlint check``
and ``distlint migrate`` agree. A lint result then depends on files other than the one
linted: every path looked at is recorded with its stat (:attr:`ExternalBases.looked_at`),
and the result cache trusts the result only while those stats stay the same.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib.util
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from distlint.findings import stat_key
from distlint.screens.names import ast_dotted, top_level_imports

#: Bases known to define no tests (the harness classes): no need to read their modules.
TEST_FREE_BASES = frozenset(
    {
        "object",
        "abc.ABC",
        "typing.Generic",
        "unittest.TestCase",
        "unittest.case.TestCase",
        "torch.testing._internal.common_utils.TestCase",
        "torch.testing._internal.common_distributed.MultiProcessTestCase",
        "torch.testing._internal.common_distributed.MultiProcContinuousTest",
        "distlint.runtime.MultiProcContinuousTest",
    }
)
#: How many parent directories of the file are tried as import roots (``a.b`` -> ``<root>/a/b.py``).
_ROOT_DEPTH = 4
#: How deep base chains are followed across modules (a guard against cycles).
_MAX_DEPTH = 12


@dataclass(frozen=True)
class ExternalTests:
    """What a base from elsewhere contributes: its tests, or why they cannot be seen."""

    tests: tuple[str, ...] = ()
    #: Set when distlint could not read the base (module not found, base not a plain class...).
    unseen: str | None = None
    #: Every method the base defines or inherits from modules distlint read (helpers included):
    #: a test calling one of them may create its PG there, where the analysis does not look.
    members: tuple[str, ...] = ()
    #: What in the bases read needs a per-test process of the deriving class's own (a test that
    #: exits, a return-code check, a hook of the per-test harness): empty when nothing does.
    needs_process: str = ""


class ExternalBases:
    """Reads the modules bases come from, once each (``path``: the file being migrated)."""

    def __init__(
        self, path: str | None, looked_at: dict[str, list[int] | None] | None = None
    ) -> None:
        self.roots: list[Path] = []
        if path:
            directory = Path(path).resolve().parent
            self.roots = [directory, *list(directory.parents)[:_ROOT_DEPTH]]
        self._modules: dict[Path, ast.Module | None] = {}
        #: Every candidate module file looked at -> its stat key (mtime, ctime, size, inode),
        #: or None where no file was: what a cached result depends on besides its own file.
        self.looked_at: dict[str, list[int] | None] = {} if looked_at is None else looked_at

    def tests_of(self, qualified: str) -> ExternalTests:
        """The tests class ``qualified`` (``module.Class`` or ``module.Outer.Inner``) defines or inherits."""
        found: list[str] = []
        members: list[str] = []
        needs: list[str] = []
        problem = self._collect(qualified, found, set(), 0, members, needs)
        return ExternalTests(
            tuple(dict.fromkeys(found)),
            problem,
            tuple(dict.fromkeys(members)),
            needs[0] if needs else "",
        )

    # -- internals ------------------------------------------------------------------------------
    def _collect(
        self,
        qualified: str,
        found: list[str],
        seen: set[str],
        depth: int,
        members: list[str],
        needs: list[str],
    ) -> str | None:
        if qualified in TEST_FREE_BASES or qualified in seen:
            return None
        if depth > _MAX_DEPTH:
            return f"its bases are nested more than {_MAX_DEPTH} deep"
        seen.add(qualified)
        located = self._locate(qualified)
        if located is None:
            return f"distlint cannot find the module of `{qualified}` next to the file"
        file, tree, class_path = located
        node = _class_in(tree, class_path)
        if node is None:
            return f"`{qualified}` is not a class statement of {file.name}"
        methods = [
            s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        members.extend(methods)
        found.extend(name for name in methods if name.startswith("test"))
        need = process_need(node)
        if need:
            needs.append(f"{qualified} {need}")
        module = _module_name(qualified, class_path)
        imports = top_level_imports(tree, module.rsplit(".", 1)[0] if "." in module else "")
        for base in node.bases:
            name = ast_dotted(base)
            if name is None:
                return f"a base of `{qualified}` is not a plain name"
            target = _resolve(name, tree, imports, module)
            problem = self._collect(target, found, seen, depth + 1, members, needs)
            if problem is not None:
                return problem
        if node.keywords:
            return f"`{qualified}` passes keywords to its bases"
        return None

    def _locate(self, qualified: str) -> tuple[Path, ast.Module, list[str]] | None:
        """The module file, its tree and the class path inside it, trying the longest module first."""
        parts = qualified.lstrip(".").split(".")
        for split in range(len(parts) - 1, 0, -1):
            module, class_path = parts[:split], parts[split:]
            for file in self._candidates(module):
                tree = self._parse(file)
                if tree is not None and _class_in(tree, class_path) is not None:
                    return file, tree, class_path
        return None

    def _candidates(self, module: list[str]) -> list[Path]:
        roots = list(self.roots)
        try:  # the top-level package's location only: find_spec of a top-level name imports nothing
            spec = importlib.util.find_spec(module[0])
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            roots += [Path(p).parent for p in spec.submodule_search_locations]
        elif spec is not None and spec.origin and spec.origin.endswith(".py"):
            roots.append(Path(spec.origin).parent)
        out: list[Path] = []
        for root in roots:
            base = root.joinpath(*module)
            out += [base.with_name(base.name + ".py"), base / "__init__.py"]
        return [p for p in dict.fromkeys(out) if self._is_file(p)]

    def _is_file(self, path: Path) -> bool:
        """``path.is_file()``, recording what was seen (stat taken before any read)."""
        name = str(path)
        if name not in self.looked_at:
            try:
                found = os.stat(name)
            except OSError:
                self.looked_at[name] = None
            else:
                self.looked_at[name] = stat_key(found) if stat.S_ISREG(found.st_mode) else None
        return self.looked_at[name] is not None

    def _parse(self, file: Path) -> ast.Module | None:
        if file not in self._modules:
            self._modules[file] = _parsed(str(file), self.looked_at.get(str(file)))
        return self._modules[file]


def _parsed(name: str, key: list[int] | None) -> ast.Module | None:
    if key is None:
        return _read_tree(name)
    return _parsed_at(name, tuple(key))


@functools.lru_cache(maxsize=64)
def _parsed_at(name: str, key: tuple[int, ...]) -> ast.Module | None:
    """Modules parsed by this process, by path and stat key: the files of a suite share a few
    modules (``test_c10d_common.py``), which would otherwise be parsed once per file deriving
    from them. Trees are only read, never changed."""
    return _read_tree(name)


def _read_tree(name: str) -> ast.Module | None:
    try:
        with open(name, "rb") as handle:
            return ast.parse(handle.read(), name)
    except (OSError, SyntaxError, ValueError):
        return None


#: Calls that end or kill a process: a test making one needs a process of its own.
_EXITS = frozenset({"sys.exit", "os._exit", "os.kill", "exit", "_exit", "os.abort"})
#: Names of the per-test harness's exit-code checks.
_RETURN_CODE_NAMES = frozenset(
    {"skip_return_code_checks", "special_return_code_checks", "TEST_ERROR_EXIT_CODE"}
)
#: Hooks of the per-test harness: a base defining one changes how each test's processes run.
_HARNESS_HOOKS = frozenset(
    {
        "setUp",
        "setUpClass",
        "tearDownClass",
        "__init__",
        "run",
        "_run",
        "_spawn_processes",
        "_fork_processes",
        "_join_processes",
        "_check_return_codes",
        "_start_processes",
    }
)


def process_need(node: ast.ClassDef) -> str:
    """What in class ``node`` needs each test to run in a process of its own (empty: nothing):
    an exit or kill, an exit-code check, a hook of the per-test harness, or a ``tearDown`` that
    does more than remove ``self.file_name``."""
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if statement.name in _HARNESS_HOOKS:
                return f"defines {statement.name}"
            if statement.name == "tearDown" and not _only_cleans_up(statement):
                return "has a tearDown that does more than remove self.file_name"
    for child in ast.walk(node):
        if isinstance(child, ast.Call) and ast_dotted(child.func) in _EXITS:
            return f"calls {ast_dotted(child.func)}()"
        if isinstance(child, ast.Name) and child.id in _RETURN_CODE_NAMES:
            return f"uses {child.id}"
        if isinstance(child, ast.Attribute) and child.attr in _RETURN_CODE_NAMES:
            return f"uses {child.attr}"
    return ""


def _only_cleans_up(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``super().tearDown()`` and ``try: os.remove(self.file_name) except ...: pass`` only."""
    for statement in function.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            if (
                isinstance(statement.value.func, ast.Attribute)
                and statement.value.func.attr == "tearDown"
                and isinstance(statement.value.func.value, ast.Call)
                and ast_dotted(statement.value.func.value.func) == "super"
            ):
                continue
            return False
        if isinstance(statement, ast.Try) and len(statement.body) == 1:
            inner = statement.body[0]
            removes = (
                isinstance(inner, ast.Expr)
                and isinstance(inner.value, ast.Call)
                and ast_dotted(inner.value.func) in ("os.remove", "os.unlink")
                and len(inner.value.args) == 1
                and ast_dotted(inner.value.args[0]) == "self.file_name"
            )
            handled = all(
                all(isinstance(s, ast.Pass) for s in handler.body) for handler in statement.handlers
            )
            if removes and handled and not statement.finalbody and not statement.orelse:
                continue
        return False
    return True


def _class_in(tree: ast.Module, class_path: list[str]) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for name in class_path:
        node = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == name), None)
        if node is None:
            return None
        body = node.body
    return node


def _module_name(qualified: str, class_path: list[str]) -> str:
    return qualified.rsplit(".", len(class_path))[0]


def _resolve(name: str, tree: ast.Module, imports: dict[str, str], module: str) -> str:
    head, _, rest = name.partition(".")
    if head in imports:
        return imports[head] + (f".{rest}" if rest else "")
    if _class_in(tree, name.split(".")) is not None:
        return f"{module}.{name}"
    if not rest and hasattr(builtins, head):
        return head
    return f"{module}.{name}"

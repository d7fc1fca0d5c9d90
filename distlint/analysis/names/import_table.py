"""What names mean in one module, from its own import statements (the DL1xx analysis).

Why a second resolver beside :class:`~distlint.analysis.names.resolver.NameResolver` (which
the PG rules and the codemod use): they answer different questions at different costs.

* ``NameResolver`` gives libcst's ``QualifiedNameProvider`` answers for *any* node, which
  needs one walk of the whole module (every method body included) before the first
  answer: 0.30x a libcst parse on the 54-file corpus of ``benchmarks/mainblock_names.py``
  (BENCHMARKS.md, "Main-block rules cost").
* The main-block rules only ask which callable a call names, at module level, in the main
  block and in the few functions it reaches; they never look into method bodies. This
  table is built from those import statements only, and the whole DL1xx analysis that
  uses it costs 0.09x a parse (same run). DL1xx runs on every test file, so a table read
  off the resolver would make each file that reaches those rules cost ~1.4x a parse
  instead of ~1.1x.
* It also answers more loosely on purpose: a star import may bind any name
  (``from m import *`` makes ``run_tests`` possibly ``m.run_tests``), and
  :meth:`ImportTable.candidates` adds what a call is *written* as, so an unusual import
  errs towards "this block runs the tests" (fewer false DL102 reports). The provider's
  exact answers would change those rules' findings.

Followed: ``import a.b as c``, ``from a import b as c``, star imports, simple aliases
(``rt = common_utils.run_tests``) and function-local imports.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from distlint.analysis.names import dotted_name


class ImportTable:
    """What names mean in one scope, from import statements (and simple aliases).

    A name bound several times (``try: from a import x`` / ``except ImportError: from b
    import x``) means all of its bindings. ``parent`` is the enclosing (module) scope.
    """

    def __init__(self, parent: ImportTable | None = None) -> None:
        self.parent = parent
        self.bindings: dict[str, set[str]] = {}
        #: Modules imported with ``import a.b.c`` (no alias): ``a.b.c.f`` is usable.
        self.imported_modules: set[str] = set()
        self.star_modules: list[str] = []

    def _bind(self, name: str, targets: Iterable[str]) -> None:
        self.bindings.setdefault(name, set()).update(targets)

    def add_import(self, module: str, asname: str | None) -> None:
        if asname:
            self._bind(asname, [module])
        else:
            head = module.split(".", 1)[0]
            self._bind(head, [head])
            self.imported_modules.add(module)

    def add_from(self, module: str, name: str, asname: str | None) -> None:
        if name == "*":
            self.star_modules.append(module)
        else:
            self._bind(asname or name, [f"{module}.{name}" if module else name])

    def add_local(self, name: str) -> None:
        """A module-level ``def``/``class``: the name means itself."""
        self._bind(name, [name])

    def add_alias(self, name: str, dotted: str) -> None:
        """``name = a.b`` (resolved now: aliases are rare and written after their import)."""
        self._bind(name, self.resolve(dotted))

    def lookup(self, name: str) -> set[str] | None:
        table: ImportTable | None = self
        while table is not None:
            if name in table.bindings:
                return table.bindings[name]
            table = table.parent
        return None

    def _stars(self) -> list[str]:
        table: ImportTable | None = self
        stars: list[str] = []
        while table is not None:
            stars.extend(table.star_modules)
            table = table.parent
        return stars

    def resolve(self, dotted: str) -> frozenset[str]:
        """Qualified names ``dotted`` may refer to (itself when unbound)."""
        head, _, rest = dotted.partition(".")
        suffix = f".{rest}" if rest else ""
        bound = self.lookup(head)
        if bound is None:
            bound = {head, *(f"{module}.{head}" for module in self._stars())}
        return frozenset(f"{target}{suffix}" for target in bound)

    def candidates(self, func: cst.BaseExpression) -> frozenset[str]:
        """Names a call's ``func`` may mean: its resolutions plus what it is written as."""
        written = dotted_name(func)
        if written is None:
            return frozenset()
        return self.resolve(written) | {written}

    def module_names(self) -> set[str]:
        """All qualified names this table (and its parents) binds, for "uses module X" checks."""
        found: set[str] = set()
        table: ImportTable | None = self
        while table is not None:
            for targets in table.bindings.values():
                found |= targets
            found |= table.imported_modules
            found |= set(table.star_modules)
            table = table.parent
        return found


def _module_of(node: cst.ImportFrom) -> str:
    dots = "." * len(node.relative)
    return dots + (dotted_name(node.module) or "") if node.module is not None else dots


def record_import(table: ImportTable, node: cst.Import | cst.ImportFrom) -> None:
    if isinstance(node, cst.Import):
        for alias in node.names:
            table.add_import(dotted_name(alias.name) or "", _asname(alias))
        return
    module = _module_of(node)
    if isinstance(node.names, cst.ImportStar):
        table.add_from(module, "*", None)
        return
    for alias in node.names:
        table.add_from(module, dotted_name(alias.name) or "", _asname(alias))


def _asname(alias: cst.ImportAlias) -> str | None:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return None

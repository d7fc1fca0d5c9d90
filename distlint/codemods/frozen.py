"""Per-test classes ``distlint migrate`` leaves exactly as they are, told from the ``ast`` analysis.

libcst's parse of the classes a migration rewrites is most of what it costs; a large test file
also has classes where nothing can move (PyTorch's ``test_c10d_nccl.py``: half its text), and
some files have nothing to move at all. A *frozen family* (a per-test class with its same-file
per-test bases and subclasses) is one of which, from the analysis alone:

* no test could move: each creates no PG or has a reason of the analysis that holds for this
  run (:func:`applicable_reasons`), so the plan moves none and none is inherited;
* no base changes: no class can run on reused workers (``ClassAnalysis.reused_workers``), or
  the family has no test to run there;

and whose report this module can word as the plan does (:mod:`distlint.codemods.plan_report`),
which it asks of the classes' shape, refusing anything else (the family then goes to libcst as
before): every class at the module's top level, its name bound once, an indented body, positional
bases that are dotted names written plainly on the class line, no class keywords; a test without a PG calling at
most one helper of another module's base.

The plan leaves such classes out (they are stand-ins in libcst's tree); their report entries
come from here; a file whose per-test classes are all frozen is reported without libcst.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from distlint.analysis.model import (
    ClassAnalysis,
    ExecutionModel,
    Ineligibility,
    ModuleAnalysis,
    Reason,
    TestAnalysis,
)
from distlint.analysis.pg.existing_continuous import DEFAULT_SUFFIX
from distlint.analysis.pg.reuse import REUSABLE_BASE
from distlint.codemods.bases import BASES
from distlint.codemods.report import (
    ClassReport,
    LeftBehind,
    Why,
    inherited_from_elsewhere,
    inherited_from_helper,
    no_pg_text,
    no_tests_note,
    not_on_reused_workers,
)
from distlint.syntax.ast_lines import SimpleLine, is_one_line, units
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import Source, dotted_name, walk

#: unittest collects every method whose name starts with this (``members.TEST_PREFIX``).
_TEST_PREFIX = "test"


def applicable_reasons(reasons: list[Ineligibility], suffix: str) -> list[Ineligibility]:
    """The analysis' reasons that hold for this run: its existing-class reason is about the
    default class names; another ``--class-suffix`` asks the question for its own names.
    A use of the class by name (and what it passes on) is the class's refusal, with the
    line it is on (the plan's ``_check_module_references``), not a test's."""
    reasons = [i for i in reasons if i.root is not Reason.MODULE_REFERENCE]
    if suffix == DEFAULT_SUFFIX:
        return reasons
    return [i for i in reasons if i.reason is not Reason.EXISTING_CONTINUOUS]


@dataclass
class _Class:
    """A frozen class as the plan's ``FamilyClass`` would see it, read from ``ast``."""

    analysis: ClassAnalysis
    index: int  # its position among the module's statements
    parent: _Class | None = None
    kept_bases: list[ast.expr] = field(default_factory=list)
    #: Every name its body defines (methods, nested classes, attribute lines).
    own: set[str] = field(default_factory=set)
    #: Its ``test*`` methods, in order.
    tests: list[str] = field(default_factory=list)

    @property
    def node(self) -> ast.ClassDef:
        return self.analysis.node

    @property
    def name(self) -> str:
        return self.analysis.name

    def mro(self) -> list[_Class]:
        out: list[_Class] = []
        cursor: _Class | None = self
        while cursor is not None:
            out.append(cursor)
            cursor = cursor.parent
        return out


@dataclass
class Frozen:
    """The classes of a module migrate leaves as they are, and their report entries."""

    #: Their nodes in the analysed tree, in module order.
    classes: list[ast.ClassDef] = field(default_factory=list)
    #: Each one's report entry, with its position among the module's statements.
    entries: list[tuple[int, ClassReport]] = field(default_factory=list)
    #: Every per-test class of the module is frozen: nothing to rewrite, no libcst needed.
    everything: bool = False

    @property
    def names(self) -> frozenset[str]:
        return frozenset(c.name for c in self.classes)


class Freezer:
    """Finds the frozen families of the analysed module ``tree`` (module docstring) and words
    their report entries; ``runtime``: the plan's (None: ``--no-reused-workers``)."""

    def __init__(
        self,
        analysis: ModuleAnalysis,
        tree: ast.Module,
        source: Source,
        names: AstNames,
        suffix: str,
        runtime: str | None,
    ) -> None:
        self.source, self.names, self.suffix, self.runtime = source, names, suffix, runtime
        self.per_test = [c for c in analysis.classes if c.model is ExecutionModel.PER_TEST_SPAWN]
        self.per_test_names = {c.name for c in self.per_test}
        module_units = units(tree)
        self.position = {id(u): i for i, u in enumerate(module_units)}
        #: The module's top-level classes by name (the last one wins, as in the plan's lookup).
        self.module_classes = {u.name: u for u in module_units if isinstance(u, ast.ClassDef)}
        self.bound = Counter(u.name for u in module_units if isinstance(u, ast.ClassDef))
        self.analysed = Counter(c.name for c in analysis.classes)
        self.classes: dict[str, _Class] = {}

    def frozen(self) -> Frozen:
        families = self._families()
        frozen = [family for family in families if self._can_freeze(family)]
        found = Frozen(everything=len(frozen) == len(families))
        if not frozen:
            return found
        members = sorted((c for family in frozen for c in family), key=lambda c: c.index)
        found.classes = [c.node for c in members]
        # The roots whose classes keep a test (the plan's reused-workers step notes on them).
        roots_with_kept = {id(c.mro()[-1]) for family in frozen for c in family if c.analysis.tests}
        for cls in members:
            found.entries.append((cls.index, self._entry(cls, id(cls) in roots_with_kept)))
        return found

    # -- families ----------------------------------------------------------------------------
    def _families(self) -> list[list[_Class]]:
        """The per-test classes grouped by every same-file per-test class any of them names as
        a base (wider than the plan's families, which take the first as the parent)."""
        group = {c.name: c.name for c in self.per_test}

        def find(name: str) -> str:
            while group[name] != name:
                name = group[name]
            return name

        for c in self.per_test:
            for name in map(_base_name, c.node.bases):
                if name in group:
                    group[find(name)] = find(c.name)
        grouped: dict[str, list[_Class]] = {}
        for c in self.per_test:
            index = self.position.get(id(c.node), -1)
            self.classes[c.name] = cls = _Class(c, index)
            grouped.setdefault(find(c.name), []).append(cls)
        for cls in self.classes.values():
            self._read_bases(cls)
            cls.own, cls.tests = _members(cls.node)
        return list(grouped.values())

    def _read_bases(self, cls: _Class) -> None:
        """The parent and kept bases, as the plan's ``_check_bases`` finds them."""
        for base in cls.node.bases:
            name = base.id if isinstance(base, ast.Name) else None
            if name is not None and name in self.module_classes:
                family = self.classes.get(name) if name in self.per_test_names else None
                if name not in self.per_test_names:
                    cls.kept_bases.append(base)  # a same-file helper class
                elif cls.parent is None and family is not None:
                    cls.parent = family
                continue
            resolved = self.names.names_of(base) or {dotted_name(base) or ""}
            if not BASES.keys() & {q.rsplit(".", 1)[-1] for q in resolved}:
                cls.kept_bases.append(base)

    def _can_freeze(self, family: list[_Class]) -> bool:
        # Reused workers take a family's kept tests: one without tests keeps its base.
        has_tests = any(c.analysis.tests for c in family)
        for cls in family:
            node = cls.node
            if cls.index < 0 or is_one_line(node, "body"):
                return False
            if self.bound[node.name] != 1 or self.analysed[node.name] != 1:
                return False
            if not self._plain_header(node):
                return False
            if cls.analysis.reused_workers and has_tests:
                return False
            for test in cls.analysis.tests:
                if test.creates_pg and not applicable_reasons(test.ineligible, self.suffix):
                    return False  # it could move
                if not test.creates_pg and len(self._external_call(cls, test)[1]) > 1:
                    return False
        return True

    def _plain_header(self, node: ast.ClassDef) -> bool:
        """Whether the class line is written ``class Name(a.B, C):`` (a comment may follow):
        positional bases that are dotted names, quoted as written, on one line."""
        bases = [dotted_name(b) for b in node.bases if isinstance(b, (ast.Name, ast.Attribute))]
        if node.keywords or len(bases) != len(node.bases) or None in bases:
            return False
        header = self.source.line(node.lineno).split("#", 1)[0].rstrip()
        listed = f"({', '.join(b or '' for b in bases)})" if bases else ""
        return header == f"class {node.name}{listed}:"

    # -- the report -------------------------------------------------------------------------
    def _entry(self, cls: _Class, notes_blocker: bool) -> ClassReport:
        """What ``build_report`` says of a class where nothing moved (see plan_report)."""
        entry = ClassReport(cls.name)
        analysis = cls.analysis
        if notes_blocker and self.runtime is not None and cls.parent is None:
            blocker = analysis.reused_workers_blocker
            if blocker and analysis.per_test_base == REUSABLE_BASE:
                entry.notes.append(not_on_reused_workers(blocker))
        decisions: dict[str, tuple[str, str]] = {}
        for test in analysis.tests:
            decisions[test.name] = self._left(cls, test)
        for name, (code, text) in decisions.items():
            entry.left.append(LeftBehind(name, code, text))
        analysed = {t.name for t in analysis.tests}
        for name in cls.tests:
            if name not in analysed:
                entry.left.append(LeftBehind(name, Why.NOT_ANALYSED.code, Why.NOT_ANALYSED.text))
        for written, found in analysis.external_bases:
            entry.left += [
                inherited_from_elsewhere(n, written) for n in found.tests if n not in cls.own
            ]
        for helper, name in self._helper_class_tests(cls):
            entry.left.append(inherited_from_helper(name, helper))
        if not entry.left:
            entry.notes.append(self._no_tests_note(cls))
        return entry

    def _left(self, cls: _Class, test: TestAnalysis) -> tuple[str, str]:
        if not test.creates_pg:
            return Why.NO_PG.code, self._no_pg_text(cls, test)
        reasons = applicable_reasons(test.ineligible, self.suffix)
        return reasons[0].reason.code, "; ".join(i.describe() for i in reasons)

    def _external_call(self, cls: _Class, test: TestAnalysis) -> tuple[str, list[str]]:
        """The first base from another module (as written; of ``cls`` or a same-file base) whose
        members ``test`` calls as ``self.<name>()``, and those names (the plan's ``_no_pg_text``)."""
        called = self_calls(test.node)
        for member in cls.mro():
            for written, found in member.analysis.external_bases:
                helpers = [n for n in called if n in found.members and n not in member.own]
                if helpers:
                    return written, helpers
        return "", []

    def _no_pg_text(self, cls: _Class, test: TestAnalysis) -> str:
        written, helpers = self._external_call(cls, test)
        return no_pg_text(helpers, written) if helpers else Why.NO_PG.text

    def _helper_class_tests(self, cls: _Class) -> list[tuple[str, str]]:
        """``(class, test)`` for the ``test_*`` methods ``cls`` inherits from same-file classes that
        are not per-test classes (plan_report's ``_helper_class_tests``)."""
        own = {name for member in cls.mro() for name in member.own}
        found: list[tuple[str, str]] = []
        pending = [b.id for b in cls.kept_bases if isinstance(b, ast.Name)]
        seen: set[str] = set()
        while pending:
            name = pending.pop(0)
            helper = self.module_classes.get(name)
            if helper is None or name in seen or name in self.per_test_names:
                continue
            seen.add(name)
            body = () if is_one_line(helper, "body") else units(helper)
            for statement in body:
                test = (
                    statement.name
                    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                    else ""
                )
                if test.startswith("test") and test not in own and all(test != t for _, t in found):
                    found.append((name, test))
            pending += [name for name in map(_base_name, helper.bases) if name is not None]
        return found

    def _no_tests_note(self, cls: _Class) -> str:
        ancestors = [
            a for a in cls.mro()[1:] if a.analysis.tests or a.tests or self._helper_class_tests(a)
        ]
        elsewhere = [
            dotted_name(b) or ""
            for b in cls.kept_bases
            if not (isinstance(b, ast.Name) and b.id in self.module_classes)
        ]
        return no_tests_note(ancestors[0].name if ancestors else None, elsewhere)


def _base_name(base: ast.expr) -> str | None:
    """The name a base is written as (``Name`` or ``*Name``: libcst's ``Arg.value``), else None."""
    value = base.value if isinstance(base, ast.Starred) else base
    return value.id if isinstance(value, ast.Name) else None


def _members(node: ast.ClassDef) -> tuple[set[str], list[str]]:
    """The names a class body defines (``members.classify_body``'s units: methods, nested
    classes, lines of plain assignments) and its ``test*`` methods in order."""
    own: set[str] = set()
    tests: list[str] = []
    for unit in units(node):
        if isinstance(unit, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own.add(unit.name)
            if unit.name.startswith(_TEST_PREFIX):
                tests.append(unit.name)
        elif isinstance(unit, ast.ClassDef):
            own.add(unit.name)
        elif isinstance(unit, SimpleLine):
            own.update(_assigned_names(unit.body))
    return own, tests


def _assigned_names(statements: Iterable[ast.stmt]) -> list[str]:
    """Names a class-level attribute line binds (``members._assigned_names``); none for a line
    that is anything else."""
    found: list[str] = []
    for small in statements:
        if isinstance(small, ast.Assign):
            if not all(isinstance(t, ast.Name) for t in small.targets):
                return []
            found += [t.id for t in small.targets]  # type: ignore[attr-defined]
        elif isinstance(small, ast.AnnAssign) and isinstance(small.target, ast.Name):
            found.append(small.target.id)
        else:
            return []
    return found


def self_calls(node: ast.AST) -> list[str]:
    """Names ``node`` calls as ``self.<name>(...)``, in the order they first appear (depth
    first, in source order: libcst's)."""
    calls = [
        n.func.attr
        for n in walk(node)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "self"
    ]
    return list(dict.fromkeys(calls))

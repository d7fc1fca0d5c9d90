"""The rule contract: one class per rule, its docstring is its user documentation.

A rule is a libcst ``BatchableCSTVisitor``: the linter runs every enabled rule of a
file in one traversal (``MetadataWrapper.visit_batched``). A rule reports a node with
a message and, when it can, a :class:`Fix`. Positions are resolved by the linter only
for files that have a report, so rules never declare ``PositionProvider``.

Rules carry their own examples (``VALID`` / ``INVALID``); ``tests/test_rule_examples.py``
runs every rule's examples, so a rule's documentation and behaviour cannot drift apart.
As in Fixit, whether a rule fixes is read from its examples: ``fixable`` is true when an
``INVALID`` example gives an ``expected_fix``, and the harness checks that a rule
without such an example never offers a fix.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Union,
)

import libcst as cst

from distlint.imports import ImportSpec
from distlint.screens import SCREENS_BY_CODE

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.source import FileContext, PreScreen

#: A replacement for a reported node: a node, ``cst.RemoveFromParent()`` or a
#: ``cst.FlattenSentinel`` of statements.
Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


@dataclass(frozen=True)
class Fix:
    """An autofix: node replacements (by node identity) plus import changes.

    ``edits`` maps nodes of the traversed module to their replacements. A fix that
    rewrites the whole module replaces the ``cst.Module`` node itself. Imports are
    added with ``AddImportsVisitor`` and removed with ``RemoveImportsVisitor`` (only
    when unused), never by editing import lines by hand.
    """

    edits: tuple[tuple[cst.CSTNode, Replacement], ...] = ()
    add_imports: tuple[ImportSpec, ...] = ()
    remove_imports: tuple[ImportSpec, ...] = ()


@dataclass(frozen=True)
class Valid:
    """Code on which the rule must report nothing."""

    code: str
    #: ``[tool.distlint]``-style overrides (keys as in pyproject, e.g. ``{"require-main": "always"}``).
    config: Mapping[str, Any] = field(default_factory=dict)
    path: str = "test_example.py"


@dataclass(frozen=True)
class Invalid:
    """Code on which the rule must report; optionally checks the message and the fix."""

    code: str
    #: Substring every report of this example must contain (``None``: not checked).
    expected_message: str | None = None
    #: The source after ``--fix`` (``None``: the rule has no fix for this example).
    expected_fix: str | None = None
    #: How many reports the rule must make on this example.
    count: int = 1
    #: Where the (first) report must be, 1-based as ``distlint check`` prints it
    #: (``None``: not checked). Set them where the reported place matters.
    line: int | None = None
    column: int | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    path: str = "test_example.py"


@dataclass
class Report:
    """What a rule said about a node, before positions are resolved."""

    rule: type[LintRule]
    node: cst.CSTNode
    message: str
    fix: Fix | None = None


class LintRule(cst.BatchableCSTVisitor):
    """Base class of every distlint rule (see the module docstring)."""

    #: ``DLnnn``: stable, used in select/ignore/noqa.
    code: ClassVar[str] = ""
    #: kebab-case name shown next to the code.
    name: ClassVar[str] = ""
    #: Whether the rule runs without being selected explicitly.
    default_enabled: ClassVar[bool] = True
    #: Whether the rule can produce fixes (shown by ``distlint rules``): set from the
    #: examples when the class is defined, never by hand.
    fixable: ClassVar[bool] = False
    #: Whether the rule reports only classes that spawn ranks or run continuously (and reads
    #: nothing else): then the linter may parse the file without its provably plain classes
    #: (:mod:`distlint.screens.plain_classes`), which is most of a large file's libcst cost.
    reads_multiprocess_classes_only: ClassVar[bool] = False
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "fixable" in vars(cls):
            raise TypeError(
                f"{cls.__name__}: fixable comes from the INVALID examples (expected_fix), not by hand"
            )
        cls.fixable = any(example.expected_fix is not None for example in cls.INVALID)
        # Name, default and pre-screen have one definition, in the rule table that the linter
        # consults before importing any rule (distlint.screens).
        if "may_report" in vars(cls):
            raise TypeError(
                f"{cls.__name__}: may_report comes from distlint.screens, not the rule class"
            )
        entry = SCREENS_BY_CODE.get(cls.code)
        if entry is not None and "code" in vars(cls):
            if "name" in vars(cls) or "default_enabled" in vars(cls):
                raise TypeError(
                    f"{cls.__name__}: name and default_enabled come from distlint.screens"
                )
            cls.name, cls.default_enabled = entry.name, entry.default_enabled
            setattr(cls, "may_report", staticmethod(entry.may_report))

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context
        self.reports: list[Report] = []

    # -- pre-screen -----------------------------------------------------------------
    @staticmethod
    def may_report(screen: PreScreen, config: Config) -> bool:
        """Cheap, conservative test: ``False`` only when the rule provably cannot report.

        A rule of the table gets its entry's function (:mod:`distlint.screens`); a rule
        outside it (tests' ad-hoc rules) has no pre-screen.
        """
        return True

    # -- reporting ------------------------------------------------------------------
    @property
    def config(self) -> Config:
        return self.context.config

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        *,
        fix: Fix | None = None,
        replacement: Replacement | None = None,
    ) -> None:
        """Report ``node``. ``replacement`` is shorthand for a fix replacing ``node``."""
        if replacement is not None:
            if fix is not None:
                raise ValueError("pass either fix= or replacement=, not both")
            fix = Fix(edits=((node, replacement),))
        self.reports.append(Report(type(self), node, message, fix))

    # -- documentation --------------------------------------------------------------
    @classmethod
    def documentation(cls) -> str:
        return inspect.getdoc(cls) or ""

    @classmethod
    def summary(cls) -> str:
        """First line of the documentation."""
        return cls.documentation().splitlines()[0] if cls.documentation() else ""

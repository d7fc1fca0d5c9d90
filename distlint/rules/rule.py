"""What every rule is, whatever tree it reads: code, name, documentation, examples, pre-screen.

A rule is one class; its docstring is its user documentation and it carries its own examples
(``VALID`` / ``INVALID``), which ``tests/test_rule_examples.py`` runs for every rule. Two kinds
build on :class:`Rule`:

- :class:`distlint.rules.base.LintRule`, a libcst visitor, for rules that read the concrete
  syntax tree or fix code;
- :class:`distlint.rules.fact_rule.FactRule`, for rules that only report what an analysis of the
  stdlib ``ast`` tree found (the DL2xx rules): a file only they run in never reaches libcst.

This module imports no libcst (``tests/test_lazy_imports.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from distlint.screens import SCREENS_BY_CODE

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.source import FileContext, PreScreen


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


class Rule:
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

    # -- pre-screen -----------------------------------------------------------------
    @staticmethod
    def may_report(screen: PreScreen, config: Config) -> bool:
        """Cheap, conservative test: ``False`` only when the rule provably cannot report.

        A rule of the table gets its entry's function (:mod:`distlint.screens`); a rule
        outside it (tests' ad-hoc rules) has no pre-screen.
        """
        return True

    @property
    def config(self) -> Config:
        return self.context.config

    # -- documentation --------------------------------------------------------------
    @classmethod
    def documentation(cls) -> str:
        return inspect.getdoc(cls) or ""

    @classmethod
    def summary(cls) -> str:
        """First line of the documentation."""
        return cls.documentation().splitlines()[0] if cls.documentation() else ""

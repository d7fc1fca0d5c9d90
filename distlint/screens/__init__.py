"""The rule table the linter consults before libcst: each rule's code, name, default, and pre-screen.

A file whose every selected rule's pre-screen says "cannot report" is done without importing
libcst or any rule module (a one-file ``distlint check`` of a clean file then costs the stdlib
``ast`` parse and nothing more; BENCHMARKS.md). So this package imports no libcst: it holds
the one definition of every rule's ``may_report`` (a rule class's ``may_report`` *is* its
entry's function, installed by :class:`distlint.rules.base.LintRule`), and the code, name
and default that rule selection (``--select``, per-file ignores, ``[tool.distlint]``) needs.

A pre-screen is conservative: ``False`` only when the rule provably cannot report in the
file (the rule example harness and the with/without pre-screen tests check it).

Pieces: :mod:`.main_block` (DL1xx facts from the ``ast`` tree), :mod:`.runners`,
:mod:`.names` and :mod:`.pg_names` (names shared with the libcst analyses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from distlint.screens.class_tests import defines_test_methods
from distlint.screens.main_block import may_require_main, may_run_tests_at_import, screened_shape
from distlint.screens.pg_names import (
    continuous_words,
    creation_words,
    lifecycle_words,
    per_test_words,
)
from distlint.skipcodes import PYTORCH_SKIPS

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.source import PreScreen

ScreenFunction = Callable[["PreScreen", "Config"], bool]

#: The method a continuously running class's ranks enter (DL105 needs it in the file).
RANK_ENTRY = "run_rank"
#: The misspelled continuous base DL302 reports.
MISSPELLED_CONTINUOUS_BASE = "MultiProcContinousTest"
SKIP_CODES = frozenset(skip.exit_code for skip in PYTORCH_SKIPS.values())
#: ``exit(<integer literal>`` in the source (the cheap pre-screen; the value is checked in Python).
_GAP = rb"(?:\s|\\\n|#[^\n]*)*"  # whitespace, line continuations and comments
_EXIT_LITERAL = re.compile(
    rb"exit" + _GAP + rb"\(" + _GAP + rb"(?:\(" + _GAP + rb")*"
    rb"(0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*)" + _GAP + rb"[,)]"
)


@dataclass(frozen=True)
class RuleScreen:
    """One rule as selection and the pre-screen see it (the rule class takes its name from here)."""

    code: str
    name: str
    default_enabled: bool
    may_report: ScreenFunction


# -- the pre-screens --------------------------------------------------------------------------


def no_main_block_may_report(screen: PreScreen, config: Config) -> bool:
    """DL101: a module that needs a main block (tests, the convention) and may have none."""
    if not may_require_main(screen, config):
        return False
    shape = screened_shape(screen, config)
    return shape is None or not shape.has_guard


def main_block_without_runner_may_report(screen: PreScreen, config: Config) -> bool:
    """DL102: a main block that is required and does not surely run the tests."""
    if not may_require_main(screen, config):
        return False
    shape = screened_shape(screen, config)
    return shape is None or (shape.has_guard and not shape.guard_surely_runs)


def tests_after_main_block_may_report(screen: PreScreen, config: Config) -> bool:
    """DL103: code after the main block (whose guard names ``__name__``: the word comes first,
    so a file without it needs no tree)."""
    if not screen.has_any_word({"__name__"}):
        return False
    shape = screened_shape(screen, config)
    return shape is None or shape.code_after_guard


def continuous_launch_may_report(screen: PreScreen, config: Config) -> bool:
    """DL105: a hand launch of a continuous class enters ``run_rank``."""
    return screen.has_any_word({RANK_ENTRY})


def may_have_per_test_pg(screen: PreScreen, config: Config) -> bool:
    """DL201/DL202: a per-test spawn class AND a PG creation in the same file, and a test
    method in some class."""
    return (
        screen.has_any_word(per_test_words(config))
        and screen.has_any_word(creation_words(config))
        and _may_define_test_methods(screen)
    )


def pg_lifecycle_may_report(screen: PreScreen, config: Config) -> bool:
    """DL203: a continuous class AND a lifecycle call in the same file, and a test method in
    some class."""
    return (
        screen.has_any_word(continuous_words(config))
        and screen.has_any_word(lifecycle_words())
        and _may_define_test_methods(screen)
    )


def _may_define_test_methods(screen: PreScreen) -> bool:
    """The DL2xx analysis reads only the tests classes define (``None`` tree: let libcst say)."""
    tree = screen.ast_module
    return tree is None or defines_test_methods(tree)


def has_exit_with_skip_code(source: bytes) -> bool:
    for match in _EXIT_LITERAL.finditer(source):
        try:
            if int(match.group(1).decode(), 0) in SKIP_CODES:
                return True
        except ValueError:
            continue
    return False


def raw_skip_exit_code_may_report(screen: PreScreen, config: Config) -> bool:
    """DL301: ``exit(N)`` / ``_exit(N)`` with N a registered code, as an integer literal."""
    return screen.has_any_word({"exit", "_exit"}) and has_exit_with_skip_code(screen.source)


def misspelled_base_may_report(screen: PreScreen, config: Config) -> bool:
    """DL302: the misspelled name itself."""
    return screen.has_any_word({MISSPELLED_CONTINUOUS_BASE})


#: Every rule, sorted by code (``tests/test_rules_registry``-style tests assert the rule
#: modules define exactly these codes).
RULE_SCREENS: tuple[RuleScreen, ...] = (
    RuleScreen("DL101", "no-main-block", True, no_main_block_may_report),
    RuleScreen("DL102", "main-block-without-runner", True, main_block_without_runner_may_report),
    RuleScreen("DL103", "tests-after-main-block", True, tests_after_main_block_may_report),
    RuleScreen("DL104", "runner-at-import", True, may_run_tests_at_import),
    RuleScreen("DL105", "continuous-class-launched-by-hand", True, continuous_launch_may_report),
    RuleScreen("DL201", "per-test-process-group", False, may_have_per_test_pg),
    RuleScreen("DL202", "per-test-spawn-class", True, may_have_per_test_pg),
    RuleScreen("DL203", "pg-lifecycle-in-continuous-class", True, pg_lifecycle_may_report),
    RuleScreen("DL301", "raw-skip-exit-code", True, raw_skip_exit_code_may_report),
    RuleScreen("DL302", "misspelled-continuous-base", True, misspelled_base_may_report),
)
SCREENS_BY_CODE: dict[str, RuleScreen] = {entry.code: entry for entry in RULE_SCREENS}

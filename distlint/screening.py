"""The first step of linting a file, without libcst: which rules the file needs, if any.

Decoding, ``# distlint: skip-file``, rule selection and the rules' pre-screens
(:mod:`distlint.screens`) decide most files on their own; only a file some selected rule
may report in goes on to :func:`distlint.linter.lint_source` (libcst and the rule
classes). The engine calls :func:`screen_file` before it imports the linter, so a run whose
files are all settled here never imports libcst (a one-file check costs ~one ``ast.parse``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distlint.findings import FileResult
from distlint.screens import RULE_SCREENS
from distlint.source import PreScreen, decode_source

if TYPE_CHECKING:
    from distlint.config import Config
    from distlint.rules.rule import Rule

_SKIP_FILE = re.compile(r"^[ \t]*#[ \t]*distlint:[ \t]*skip-file\b", re.MULTILINE)


@dataclass
class Screened:
    """A file after the pre-screen: either settled (``result``) or the codes of the rules to run."""

    path: str
    #: The file's result when no rule needs to run (no finding, or the file's error).
    result: FileResult | None = None
    text: str = ""
    codes: tuple[str, ...] = ()
    screen: PreScreen | None = field(default=None, repr=False)

    @property
    def tree(self) -> ast.Module | None:
        """The file's stdlib ``ast`` tree, parsed by the pre-screen (``None``: not parsed)."""
        return self.screen.ast_module if self.screen is not None else None


def screen_file(
    source: bytes,
    path: str,
    config: Config,
    rules: Sequence[type[Rule]] | None = None,
    prescreen: bool = True,
) -> Screened:
    """Screen one file's bytes for the enabled ``rules`` (default: every rule of the table)."""
    candidates = RULE_SCREENS if rules is None else rules
    enabled = config.enabled_codes(((r.code, r.default_enabled) for r in candidates), path)
    try:
        text = decode_source(source, path)
    except ValueError as exc:
        return Screened(path, FileResult(path, error=f"{path}: error: {exc}"))
    if _SKIP_FILE.search(text):
        return Screened(path, FileResult(path))
    screen = PreScreen(source, path)
    try:
        codes = tuple(
            r.code
            for r in candidates
            if r.code in enabled and (not prescreen or r.may_report(screen, config))
        )
        # A file no rule needs to parse still gets its syntax checked, with the stdlib
        # parser (10x libcst's speed; rules' pre-screens may have parsed it already).
        if not codes and not screen.parses():
            return Screened(path, FileResult(path, error=f"{path}: error: {screen.syntax_error}"))
    except RecursionError:
        return Screened(
            path, FileResult(path, error=f"{path}: error: file too deeply nested to analyse")
        )
    if not codes:
        return Screened(path, FileResult(path))
    return Screened(path, None, text, codes, screen)

"""One file's pipeline: pre-screen -> libcst parse -> one batched traversal -> findings.

``lint_source`` never raises for bad input: a file that cannot be decoded or parsed
gives a :class:`FileResult` with ``error`` set. ``fix_source`` applies the rules' fixes
until none is left (bounded), and only returns code that re-parses and compiles.

Cost control (see BENCHMARKS.md): a rule runs only when its pre-screen
(:mod:`distlint.screening`, :mod:`distlint.screens`) says it can report in this file, so
most files never reach libcst; metadata is resolved only for
the rules that run, and positions only for files with a report.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper

from distlint.config import Config
from distlint.cst_utils import NodeIndex, ReplaceNodes
from distlint.fact_linter import (
    facts_only,
    finding_at,
    lint_facts,
    locate_fact_reports,
    run_fact_rules,
)
from distlint.findings import FileResult, Finding
from distlint.imports import ImportChanges
from distlint.metadata import node_spans
from distlint.rules import all_rules, rules_for
from distlint.rules.base import Fix, LintRule, Report
from distlint.rules.rule import Rule
from distlint.screening import Screened, screen_file
from distlint.source import (
    FileContext,
    PreScreen,
    decode_source,
    parse,
    source_lines,
    verify_python,
)

_MODULE_HOOKS = frozenset({"visit_Module", "leave_Module"})
MAX_FIX_PASSES = 8


def enabled_rules(
    config: Config, path: str, rules: Sequence[type[Rule]] | None = None
) -> list[type[Rule]]:
    rules = all_rules() if rules is None else rules
    codes = config.enabled_codes(((r.code, r.default_enabled) for r in rules), path)
    return [rule for rule in rules if rule.code in codes]


def _run_rules(
    module: cst.Module,
    path: str,
    config: Config,
    rules: Sequence[type[Rule]],
    tree: ast.Module | None = None,
    text: str | None = None,
) -> tuple[FileContext, list[Report]]:
    """The libcst rules among ``rules``, on ``module`` (the fact rules are the caller's:
    :func:`~distlint.fact_linter.run_fact_rules` with the returned context). ``tree``: the
    pre-screen's ``ast`` tree of the file, when it has the module's statements; ``text``: its
    source."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    context = FileContext(path, config, wrapper, tree, text)
    instances = [rule(context) for rule in rules if issubclass(rule, LintRule)]
    hooks = [instance.get_visitors() for instance in instances]
    if all(set(methods) <= _MODULE_HOOKS for methods in hooks):
        # Rules that only look at the module as a whole (their analysis walks what it
        # needs): the same calls as a batched traversal, without visiting every node.
        with ExitStack() as stack:
            for instance in instances:
                stack.enter_context(instance.resolve(wrapper))
            for name in ("visit_Module", "leave_Module"):
                for methods in hooks:
                    if name in methods:
                        methods[name](wrapper.module)
    else:
        wrapper.visit_batched(instances)
    reports = [report for instance in instances for report in instance.reports]
    return context, reports


def _locate(
    wrapper: MetadataWrapper,
    reports: list[Report],
    path: str,
    text: str,
    tree: ast.Module | None = None,
) -> list[Finding | None]:
    """Findings for ``reports`` in the same order; ``None`` for a suppressed report (``text``:
    the decoded source the module was parsed from; ``tree``: the file's ``ast`` tree, whose
    top-level classes give their spans without code generation)."""
    if not reports:
        return []
    # Only the reported nodes' positions, from only the statements that hold them:
    # PositionProvider would cost twice the parse.
    spans = node_spans(wrapper.module, [report.node for report in reports], text, tree)
    lines = source_lines(text)
    located: list[Finding | None] = []
    for report in reports:
        span = spans[report.node]
        if isinstance(report.node, cst.Module):  # whole-module reports point at line 1
            span = (1, 0, span[2], span[3])
        fixable = report.fix is not None
        located.append(finding_at(path, lines, span, report.rule, report.message, fixable))
    return located


def screen_rules(
    source: bytes, path: str, rules: Sequence[type[Rule]], config: Config
) -> list[type[Rule]]:
    """The rules that may report in this file according to the cheap pre-screen."""
    screen = PreScreen(source, path)
    return [rule for rule in rules if rule.may_report(screen, config)]


def lint_source(
    source: bytes,
    path: str,
    config: Config,
    rules: Sequence[type[Rule]] | None = None,
    prescreen: bool = True,
    screened: Screened | None = None,
) -> FileResult:
    """Lint one file's bytes with the enabled ``rules`` (default: all rules).

    ``screened``: the file's :func:`distlint.screening.screen_file` result when the caller
    has it (the engine screens before importing this module). ``prescreen=False`` runs every
    enabled rule, whatever its pre-screen says (what tests compare against)."""
    if screened is None:
        screened = screen_file(source, path, config, rules, prescreen)
    if screened.result is not None:
        return screened.result
    if rules is None:
        active = rules_for(screened.codes)
    else:
        by_code = {rule.code: rule for rule in rules}
        active = [by_code[code] for code in screened.codes]
    if facts_only(screened, active):
        return lint_facts(screened, config, active)
    try:
        module = parse(source, path)
        context, reports = _run_rules(module, path, config, active, screened.tree, screened.text)
        located = _locate(context.wrapper, reports, path, screened.text, screened.tree)
        if screened.tree is not None:
            facts = run_fact_rules(context, active)
            located += locate_fact_reports(facts, path, screened.text)
        return FileResult(
            path,
            sorted((f for f in located if f is not None), key=Finding.sort_key),
            depends_on=context.depends_on,
        )
    except ValueError as exc:
        return FileResult(path, error=f"{path}: error: {exc}")
    except RecursionError:
        return FileResult(path, error=f"{path}: error: file too deeply nested to analyse")


# -- fixes ---------------------------------------------------------------------------------


def _non_overlapping(fixes: Sequence[Fix], module: cst.Module) -> list[Fix]:
    """Fixes whose edited nodes neither coincide nor nest; the rest wait for the next pass."""
    index = NodeIndex(module)
    taken: set = set()
    chosen = []
    for fix in fixes:
        ids = [id(node) for node, _ in fix.edits]
        ancestry = {key for node_id in ids for key in index.ancestry(node_id)}
        if ancestry & taken:
            continue
        # Mark the edited nodes and everything above them as taken.
        taken |= ancestry
        chosen.append(fix)
    return chosen


def apply_fixes(module: cst.Module, fixes: Sequence[Fix]) -> cst.Module:
    """Apply non-overlapping ``fixes`` to ``module`` (nodes from that same module)."""
    edits = {id(node): replacement for fix in fixes for node, replacement in fix.edits}
    imports = ImportChanges()
    for fix in fixes:
        for spec in fix.add_imports:
            imports.add(spec)
        for spec in fix.remove_imports:
            imports.remove_if_unused(spec)
    if edits:
        module = module.visit(ReplaceNodes(edits))
    return imports.apply(module)


@dataclass
class FixResult:
    path: str
    #: The fixed bytes (``None`` when nothing changed or the file could not be fixed).
    fixed: bytes | None
    #: Findings left after fixing (those without a fix, or suppressed by a failure).
    remaining: list[Finding] = field(default_factory=list)
    #: How many reports were fixed.
    fixed_count: int = 0
    error: str | None = None


def fix_source(
    source: bytes,
    path: str,
    config: Config,
    rules: Sequence[type[Rule]] | None = None,
    first: FileResult | None = None,
) -> FixResult:
    """Apply fixes until a fixed point (at most ``MAX_FIX_PASSES`` passes).

    The result is re-parsed by libcst and ``compile()``d; code that does not is never
    returned (the file is reported as not fixable instead). ``first`` is the lint result
    of ``source`` when the caller already has it (the engine does), to avoid linting twice.
    """
    if first is None:
        first = lint_source(source, path, config, rules)
    if first.error or not any(f.fixable for f in first.findings):
        return FixResult(path, None, first.findings, 0, first.error)
    # Fact rules have no fixes: only the libcst rules run between passes.
    active = [r for r in enabled_rules(config, path, rules) if issubclass(r, LintRule)]
    current = source
    fixed_count = 0
    for _ in range(MAX_FIX_PASSES):
        screened = screen_rules(current, path, active, config)
        module = parse(current, path)
        context, reports = _run_rules(module, path, config, screened)
        wrapper = context.wrapper
        text = decode_source(current, path)
        located = {id(r): f for r, f in zip(reports, _locate(wrapper, reports, path, text))}
        fixes = [r.fix for r in reports if r.fix is not None and located[id(r)] is not None]
        if not fixes:
            break
        chosen = _non_overlapping(fixes, wrapper.module)
        new_module = apply_fixes(wrapper.module, chosen)
        new_bytes = new_module.bytes
        if new_bytes == current:
            break
        fixed_count += len(chosen)
        current = new_bytes
    try:
        verify_python(current, path)
    except ValueError as exc:
        return FixResult(path, None, first.findings, 0, f"{path}: error: fix not applied: {exc}")
    final = lint_source(current, path, config, rules)
    return FixResult(
        path, current if current != source else None, final.findings, fixed_count, final.error
    )

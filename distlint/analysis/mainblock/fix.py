"""Rewrites of a module's main block, shared by the DL1xx fixes and the codemod.

Every function returns a new module (or ``None`` when there is no safe rewrite) and
never edits import lines by hand: the imports a rewrite needs come back as
:class:`~distlint.imports.ImportSpec` and are added through :mod:`distlint.imports`
(the linter does it for rule fixes, :func:`ensure_main_block` for the codemod).

New code is built as nodes, not text, so it takes the file's own newline (CRLF stays
CRLF) and indentation (tabs stay tabs) from ``Module.default_newline`` /
``Module.default_indent`` when the module is rendered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import libcst as cst

from distlint.analysis.mainblock.facts import (
    ImportTimeRun,
    MainBlockFacts,
    TopStatement,
    analyze_main_block,
)
from distlint.analysis.names import names_match_any
from distlint.imports import ImportSpec, add_imports
from distlint.screens.runners import RUNNER_MODULES, convention_runners
from distlint.torch_names import TORCH_RUNNER_MODULE

RunnerPlan = tuple[cst.BaseExpression, tuple[ImportSpec, ...]]


def _blank(count: int) -> list[cst.EmptyLine]:
    return [cst.EmptyLine() for _ in range(count)]


def _call_line(func: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Expr(cst.Call(func))])


def build_main_guard(
    body: Sequence[cst.BaseStatement], leading_lines: Sequence[cst.EmptyLine] = ()
) -> cst.If:
    """``if __name__ == "__main__":`` around ``body`` (indentation: the module's own)."""
    return cst.If(
        test=cst.Comparison(
            cst.Name("__name__"),
            [cst.ComparisonTarget(cst.Equal(), cst.SimpleString('"__main__"'))],
        ),
        body=cst.IndentedBlock(list(body)),
        leading_lines=list(leading_lines),
    )


def runner_call(
    facts: MainBlockFacts,
    runner_module: str = TORCH_RUNNER_MODULE,
    config_runners: Sequence[str] = ("run_tests",),
) -> RunnerPlan | None:
    """How this module should call its runner, and the imports that needs.

    Reuses what the module already has, in this order: a name bound to a runner
    (``rt`` from ``import run_tests as rt``), a runner module it imports
    (``common_utils.run_tests``); otherwise imports ``run_tests`` from ``runner_module``
    (or the first dotted runner of the config when the config does not list a bare
    ``run_tests``). ``None`` when the name to import is already taken by something else.
    """
    convention = convention_runners(config_runners)
    table = facts.imports
    for name, targets in table.bindings.items():
        if names_match_any({name, *targets}, convention):
            return cst.Name(name), ()
    preferred = (runner_module, *(m for m in RUNNER_MODULES if m != runner_module))
    for module in preferred:
        for name, targets in table.bindings.items():
            if module in targets:
                return cst.Attribute(cst.Name(name), cst.Name("run_tests")), ()
        if module in table.imported_modules:
            return cst.parse_expression(f"{module}.run_tests"), ()
    dotted = [r for r in config_runners if "." in r]
    if "run_tests" in config_runners or not dotted:
        module, name = runner_module, "run_tests"
    else:
        module, name = dotted[0].rsplit(".", 1)
    if table.lookup(name) is not None:
        return None
    return cst.Name(name), (ImportSpec(module, name),)


def _without_blank_footer(module: cst.Module) -> Sequence[cst.EmptyLine]:
    """Trailing blank lines would end up after the appended block: keep only comments."""
    return _trim_trailing_blanks(list(module.footer))


def append_main_block(
    facts: MainBlockFacts,
    runner_module: str = TORCH_RUNNER_MODULE,
    config_runners: Sequence[str] = ("run_tests",),
) -> tuple[cst.Module, tuple[ImportSpec, ...]] | None:
    """The module with ``if __name__ == "__main__": run_tests()`` appended, plus the imports
    to add. ``None`` when a guard (even a nested one) or an import-time runner exists:
    adding a block would then run the tests twice or hide the real problem."""
    if facts.guards or facts.nested_guards or facts.import_time_runs:
        return None
    plan = runner_call(facts, runner_module, config_runners)
    if plan is None:
        return None
    func, imports = plan
    module = facts.module
    guard = build_main_guard([_call_line(func)], _blank(2))
    return module.with_changes(
        body=[*module.body, guard], footer=_without_blank_footer(module)
    ), imports


def fill_empty_main_block(
    facts: MainBlockFacts,
    runner_module: str = TORCH_RUNNER_MODULE,
    config_runners: Sequence[str] = ("run_tests",),
) -> tuple[cst.If, cst.If, tuple[ImportSpec, ...]] | None:
    """``(guard, new_guard, imports)`` when the only main block does nothing at all (``pass``,
    ``...``): then calling the runner in it is clearly what was meant. ``None`` otherwise
    (a custom CLI, a print: the author meant something, a person decides)."""
    if len(facts.guards) != 1:
        return None
    guard = facts.guards[0].node
    for statement in guard.body.body:
        smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
        for small in smalls:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(
                small.value, (cst.Ellipsis, cst.SimpleString)
            ):
                continue
            return None
    plan = runner_call(facts, runner_module, config_runners)
    if plan is None:
        return None
    func, imports = plan
    return guard, guard.with_changes(body=cst.IndentedBlock([_call_line(func)])), imports


def _split_leading_comments(
    lines: Sequence[cst.EmptyLine],
) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """``(detached, attached)``: attached = the comment lines right above the statement."""
    index = len(lines)
    while index > 0 and lines[index - 1].comment is not None:
        index -= 1
    return list(lines[:index]), list(lines[index:])


def _trim_trailing_blanks(lines: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    while lines and lines[-1].comment is None:
        lines = lines[:-1]
    return lines


def _leading_blanks(lines: Sequence[cst.EmptyLine]) -> int:
    count = 0
    for line in lines:
        if line.comment is not None:
            break
        count += 1
    return count


def _remove_statement(
    body: list[TopStatement | None], index: int, keep_lines: Sequence[cst.EmptyLine] = ()
) -> None:
    """Remove ``body[index]`` (set it to ``None``); ``keep_lines`` (its comments that stay)
    go to the next statement, which keeps at least as many blank lines above it as the
    removed one had: removing a block never glues code together."""
    removed = body[index]
    body[index] = None
    following_index = next((i for i in range(index + 1, len(body)) if body[i] is not None), None)
    if removed is None or following_index is None:
        return
    following = body[following_index]
    assert following is not None  # found above as not None
    lines = [*keep_lines, *following.leading_lines]
    missing = _leading_blanks(removed.leading_lines) - _leading_blanks(lines)
    if missing > 0:
        lines = [*_blank(missing), *lines]
    body[following_index] = following.with_changes(leading_lines=lines)


def move_main_block_to_end(facts: MainBlockFacts) -> cst.Module | None:
    """The module with its only main block moved after everything else.

    The comment lines right above the block move with it (a blank line separates them
    from comments that stay); comments indented in the block move with it; comments
    at the left margin after the block belong to the next statement and stay.
    ``None`` when the module has several main blocks (merging them is a person's call).
    """
    if len(facts.guards) != 1:
        return None
    guard = facts.guards[0]
    module = facts.module
    body: list[TopStatement | None] = list(module.body)
    if guard.index == len(body) - 1:
        return None
    detached, attached = _split_leading_comments(guard.node.leading_lines)
    # Detached comments (a section header, say) stay where they were.
    _remove_statement(body, guard.index, _trim_trailing_blanks(detached))
    body.append(guard.node.with_changes(leading_lines=[*_blank(2), *attached]))
    return module.with_changes(
        body=[s for s in body if s is not None], footer=_without_blank_footer(module)
    )


def _statements_of(block: cst.BaseSuite) -> list[TopStatement]:
    if isinstance(block, cst.IndentedBlock):
        return cast("list[TopStatement]", list(block.body))  # libcst says BaseStatement
    assert isinstance(block, cst.SimpleStatementSuite)  # the other suite
    return [cst.SimpleStatementLine([small]) for small in block.body]


def _is_plain_runner_call(run: ImportTimeRun) -> bool:
    """``run_tests()`` alone on its line, calling the runner itself (not through a helper)."""
    statement = run.statement
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is run.runner.call
        and len(run.runner.chain) == 1
    )


def guard_import_time_runs(facts: MainBlockFacts) -> cst.Module | None:
    """The module with its movable import-time runner calls under the main guard.

    * With a guard: each statement moves into the (last) guard, before its code when it
      stood before the guard, after it otherwise (the order ``python file.py`` saw is
      kept). A bare ``run_tests()`` is dropped instead when the guard already runs the
      tests: moving it would run them twice.
    * Without one: a new guard holds them, where the last one stood, or at the end of
      the module when test definitions follow (they would never run otherwise).
    Comment lines above a moved statement move with it. ``None``: nothing movable.
    """
    runs = [run for run in facts.import_time_runs if run.movable]
    if not runs:
        return None
    module = facts.module
    body: list[TopStatement | None] = list(module.body)

    def moved(run: ImportTimeRun) -> TopStatement:
        return run.statement.with_changes(
            leading_lines=[line for line in run.statement.leading_lines if line.comment]
        )

    if facts.guards:
        guard = facts.guards[-1]
        if guard.conditional:  # moved code would run only under the guard's condition
            return None
        keep = [
            run for run in runs if not (guard.runner is not None and _is_plain_runner_call(run))
        ]
        before = [moved(run) for run in keep if run.index < guard.index]
        after = [moved(run) for run in keep if run.index > guard.index]
        statements = [*before, *_statements_of(guard.node.body), *after]
        block = guard.node.body
        new_block = (
            block.with_changes(body=statements)
            if isinstance(block, cst.IndentedBlock)
            else cst.IndentedBlock(statements)
        )
        body[guard.index] = guard.node.with_changes(body=new_block)
        for run in runs:
            _remove_statement(body, run.index)
        return module.with_changes(body=[s for s in body if s is not None])

    last = max(run.index for run in runs)
    tests_follow = any(test.index > last for test in facts.tests)
    if tests_follow:
        for run in runs:
            _remove_statement(body, run.index)
        guard_node = build_main_guard([moved(run) for run in runs], _blank(2))
        kept = [s for s in body if s is not None]
        return module.with_changes(body=[*kept, guard_node], footer=_without_blank_footer(module))
    # In place: the guard takes the blank lines and comments of the statement it replaces.
    for run in runs:
        if run.index != last:
            _remove_statement(body, run.index)
    last_statement = next(run.statement for run in runs if run.index == last)
    inner = [moved(run) for run in runs if run.index != last] + [
        last_statement.with_changes(leading_lines=[])
    ]
    body[last] = build_main_guard(inner, last_statement.leading_lines)
    return module.with_changes(body=[s for s in body if s is not None])


def ensure_main_block(
    module: cst.Module,
    runner_module: str = TORCH_RUNNER_MODULE,
    runners: Sequence[str] = ("run_tests",),
) -> cst.Module:
    """``module`` with a main block that calls the runner (for ``distlint migrate``).

    Unchanged when ``module`` already has a top-level ``if __name__ == "__main__":``
    block (whatever it does: DL102/DL103 report those, a custom main is never rewritten),
    a nested guard, or a runner called at import (DL104's fix handles that). Otherwise
    appends ``if __name__ == "__main__":\\n    run_tests()``, reusing an imported runner
    or runner module (``rt()``, ``common_utils.run_tests()``) and else importing
    ``run_tests`` from ``runner_module`` through ``AddImportsVisitor``. This is the same
    code as DL101's fix.
    """
    planned = append_main_block(analyze_main_block(module, runners), runner_module, runners)
    if planned is None:
        return module
    new_module, imports = planned
    return add_imports(new_module, imports)

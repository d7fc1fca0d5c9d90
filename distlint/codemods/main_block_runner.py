"""The main block's runner after migration.

torch's ``run_tests()`` refuses test classes that do not derive from torch's own
``TestCase`` ("This test class should extend from torch.testing._internal.common_utils.
TestCase"), which ``distlint.runtime.MultiProcContinuousTest`` does not. So a file migrated
to the distlint runtime must run its tests with ``distlint.runtime.run_tests`` (a
``unittest`` runner that also runs the per-test classes left in the file).

The switch goes through libcst's import visitors: the main block's call is first pointed
at a placeholder, ``RemoveImportsVisitor`` drops torch's ``run_tests`` import when
nothing else uses it, and the call then gets the name ``AddImportsVisitor`` imports.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from distlint.analysis.mainblock.facts import analyze_main_block
from distlint.cst_utils import ReplaceNodes
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_RUNNER_MODULE

PLACEHOLDER = "__distlint_runner_placeholder__"
DISTLINT_RUNNER = (DISTLINT_RUNTIME, "run_tests")


class _RenamePlaceholder(cst.CSTTransformer):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return (
            updated_node.with_changes(value=self.name)
            if updated_node.value == PLACEHOLDER
            else updated_node
        )


def point_runner_at_placeholder(
    module: cst.Module, runners: Sequence[str] = ("run_tests",)
) -> tuple[cst.Module, cst.CSTNode | None, str]:
    """Replace the main block's torch ``run_tests`` with the placeholder (``runners``: the config's).

    Returns the new module, the replaced expression (its imports may go) and a note
    (empty when the switch was made or not needed).
    """
    facts = analyze_main_block(module, runners)
    guard = facts.running_guard
    if guard is None or guard.runner is None:
        return module, None, ""
    call = guard.runner.call
    torch_runner = f"{TORCH_RUNNER_MODULE}.run_tests"
    if len(guard.runner.chain) > 1:
        if torch_runner in facts.imports.candidates(call.func):
            return (
                module,
                None,
                (
                    "the main block runs torch's run_tests through "
                    f"{guard.runner.chain[0]}(); call distlint.runtime.run_tests there instead"
                ),
            )
        return module, None, ""
    if torch_runner not in facts.imports.candidates(call.func):
        return module, None, ""
    # The call is in the guard, a top-level statement: only that statement is visited.
    body = list(module.body)
    body[guard.index] = cst.ensure_type(
        guard.node.visit(ReplaceNodes({id(call.func): cst.Name(PLACEHOLDER)})), cst.If
    )
    return module.with_changes(body=body), call.func, ""


def name_is_bound(module: cst.Module, name: str) -> bool:
    """Whether a module-level import or assignment binds ``name``."""
    facts = analyze_main_block(module)
    return facts.imports.lookup(name) is not None


def finish_runner(module: cst.Module) -> tuple[cst.Module, tuple[str, str, str | None]]:
    """The placeholder becomes ``run_tests`` (or an alias when that name is still taken)."""
    name = DISTLINT_RUNNER[1]
    alias: str | None = None
    if name_is_bound(module, name):
        alias = name = "distlint_run_tests"
    # The placeholder is in the main guard, a top-level ``if``: the other statements stay.
    rename = _RenamePlaceholder(name)
    body = [s.visit(rename) if isinstance(s, cst.If) else s for s in module.body]
    return module.with_changes(body=body), (DISTLINT_RUNNER[0], DISTLINT_RUNNER[1], alias)

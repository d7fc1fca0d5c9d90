"""DL301: ``sys.exit(77)`` — a raw number that is a registered skip exit code."""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

from distlint.analysis.names import qualified_name_map, qualified_names
from distlint.imports import ImportSpec
from distlint.rules.base import Fix, Invalid, LintRule, Valid
from distlint.skipcodes import PYTORCH_SKIPS, name_for_code
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_DISTRIBUTED_TESTING

EXIT_FUNCTIONS = {"sys.exit": "sys.exit", "os._exit": "os._exit"}
#: Modules whose ``TEST_SKIPS`` is the registry (reused when the file imports it from them).
PROVIDERS = (TORCH_DISTRIBUTED_TESTING, DISTLINT_RUNTIME, "distlint.runtime.skips")


def registry_reference(module: cst.Module) -> tuple[str | None, bool]:
    """How this module can name the registry (``TEST_SKIPS``, ``cd.TEST_SKIPS``), and whether it uses distlint.runtime."""
    reference: str | None = None
    uses_runtime = False
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (
                isinstance(small, cst.ImportFrom)
                and small.module is not None
                and not small.relative
            ):
                name = get_full_name_for_node(small.module) or ""
                uses_runtime = uses_runtime or name.startswith(DISTLINT_RUNTIME)
                if isinstance(small.names, cst.ImportStar):
                    if name in PROVIDERS:
                        reference = reference or "TEST_SKIPS"
                    continue
                for alias in small.names:
                    if isinstance(alias.name, cst.Name) and alias.name.value == "TEST_SKIPS":
                        # A re-export from a suite's own helpers is the same registry.
                        bound = alias.asname.name if alias.asname is not None else alias.name
                        if isinstance(bound, cst.Name):
                            reference = reference or bound.value
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    name = get_full_name_for_node(alias.name) or ""
                    uses_runtime = uses_runtime or name.startswith(DISTLINT_RUNTIME)
                    if name in PROVIDERS and reference is None:
                        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                            reference = f"{alias.asname.name.value}.TEST_SKIPS"
                        else:
                            reference = f"{name}.TEST_SKIPS"
    return reference, uses_runtime


class RawSkipExitCode(LintRule):
    """Exit with the skip registry's entry, not a raw skip exit code.

    ## What it does
    Finds `sys.exit(N)` and `os._exit(N)` where `N` is a number PyTorch's test harness
    reads as a skip (72-89: 75 "multi-gpu-1", 77 "multi-gpu-2", 76 "nccl", ...; written
    in decimal or hex, with `_` separators or not), and rewrites it to
    `TEST_SKIPS["multi-gpu-2"].exit_code`. The fix reuses the module's `TEST_SKIPS`
    (any alias, `cd.TEST_SKIPS` through a module alias, a star import, or a re-export
    from the suite's own helpers) or adds
    `from torch.testing._internal.common_distributed import TEST_SKIPS`
    (`from distlint.runtime import TEST_SKIPS` in modules that use `distlint.runtime`).

    ## Why is this bad?
    A bare `sys.exit(77)` reads like a crash with an arbitrary code; it only works as a
    skip because 77 happens to be registered, and it silently turns into a failure (or a
    different skip) if the code is mistyped or the registry changes.

    ## Example
    ```python
    if torch.cuda.device_count() < 2:
        sys.exit(77)
    ```

    ## Use instead
    ```python
    from torch.testing._internal.common_distributed import TEST_SKIPS

    if torch.cuda.device_count() < 2:
        sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)
    ```
    """

    code = "DL301"

    VALID = [
        Valid(
            """
            import sys
            from torch.testing._internal.common_distributed import TEST_SKIPS

            def check(count):
                if count < 2:
                    sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)
            """
        ),
        # Not a registered skip code: a real failure exit.
        Valid(
            """
            import sys

            sys.exit(1)
            """
        ),
        # Someone else's exit function.
        Valid(
            """
            def exit(code):
                return code

            exit(77)
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            import sys

            import torch


            def require_two_gpus():
                if torch.cuda.device_count() < 2:
                    sys.exit(77)
            """,
            expected_message='`TEST_SKIPS["multi-gpu-2"].exit_code`',
            expected_fix="""
            import sys

            import torch
            from torch.testing._internal.common_distributed import TEST_SKIPS


            def require_two_gpus():
                if torch.cuda.device_count() < 2:
                    sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)
            """,
            line=9,
            column=9,
        ),
        # An existing aliased import is reused; os._exit too.
        Invalid(
            """
            import os
            from torch.testing._internal.common_distributed import TEST_SKIPS as SKIPS

            def worker():
                os._exit(76)
            """,
            expected_message='"nccl"',
            expected_fix="""
            import os
            from torch.testing._internal.common_distributed import TEST_SKIPS as SKIPS

            def worker():
                os._exit(SKIPS["nccl"].exit_code)
            """,
            line=6,
            column=5,
        ),
        # Modules on distlint.runtime get the runtime's registry.
        Invalid(
            """
            import sys
            from distlint.runtime import MultiProcContinuousTest

            class TestGpu(MultiProcContinuousTest):
                def test_two(self):
                    sys.exit(75)
            """,
            expected_fix="""
            import sys
            from distlint.runtime import TEST_SKIPS, MultiProcContinuousTest

            class TestGpu(MultiProcContinuousTest):
                def test_two(self):
                    sys.exit(TEST_SKIPS["multi-gpu-1"].exit_code)
            """,
            line=7,
            column=9,
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._reference: tuple[str | None, bool] | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        value = node.args[0].value
        if not isinstance(value, cst.Integer):
            return
        names = qualified_names(qualified_name_map(self.context.wrapper), node.func)
        function = next((EXIT_FUNCTIONS[n] for n in names if n in EXIT_FUNCTIONS), None)
        if function is None:
            return
        try:
            exit_code = int(value.evaluated_value)
        except ValueError:
            return
        skip = name_for_code(exit_code)
        if skip is None:
            return
        if self._reference is None:
            self._reference = registry_reference(self._module)
        reference, uses_runtime = self._reference
        add: list[ImportSpec] = []
        if reference is None:
            reference = "TEST_SKIPS"
            add.append(
                ImportSpec(
                    DISTLINT_RUNTIME if uses_runtime else TORCH_DISTRIBUTED_TESTING, "TEST_SKIPS"
                )
            )
        replacement = cst.parse_expression(f'{reference}["{skip}"].exit_code')
        message = (
            f'`{function}({exit_code})` is the skip code for "{PYTORCH_SKIPS[skip].message}"; '
            f'write `TEST_SKIPS["{skip}"].exit_code` so it reads as a skip (autofix)'
        )
        self.report(node, message, fix=Fix(edits=((value, replacement),), add_imports=tuple(add)))

"""DL302: the misspelled ``MultiProcContinousTest`` base class."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from distlint.analysis.names import node_names, qualified_name_map
from distlint.rules.base import Fix, Invalid, LintRule, Valid
from distlint.screens import MISSPELLED_CONTINUOUS_BASE
from distlint.torch_names import DISTLINT_RUNTIME, TORCH_DISTRIBUTED_TESTING

if TYPE_CHECKING:
    from distlint.source import FileContext

MISSPELLED = MISSPELLED_CONTINUOUS_BASE
CORRECT = "MultiProcContinuousTest"
#: Modules that export (or exported) the continuous base class.
PROVIDERS = (TORCH_DISTRIBUTED_TESTING, DISTLINT_RUNTIME)
MISSPELLED_QUALIFIED = frozenset(f"{module}.{MISSPELLED}" for module in PROVIDERS)


class MisspelledContinuousBase(LintRule):
    """Use `MultiProcContinuousTest`, not the misspelled `MultiProcContinousTest`.

    ## What it does
    Finds imports and uses of `MultiProcContinousTest` (missing "u"), the name the
    continuous multi-process test base had in older PyTorch releases, and renames them.

    ## Why is this bad?
    Newer PyTorch releases only ship `MultiProcContinuousTest`: code that imports the
    misspelled name fails at import time on upgrade, and a failing import in a test
    module means none of its tests run. `distlint.runtime` accepts both names, torch does not.

    ## Example
    ```python
    from torch.testing._internal.common_distributed import MultiProcContinousTest

    class TestCollectives(MultiProcContinousTest):
        ...
    ```

    ## Use instead
    ```python
    from torch.testing._internal.common_distributed import MultiProcContinuousTest

    class TestCollectives(MultiProcContinuousTest):
        ...
    ```
    """

    code = "DL302"

    VALID = [
        Valid(
            """
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class TestCollectives(MultiProcContinuousTest):
                pass
            """
        ),
        # A local class that happens to carry the name is not the torch base.
        Valid(
            """
            class MultiProcContinousTest:
                pass

            class TestThing(MultiProcContinousTest):
                pass
            """
        ),
    ]
    INVALID = [
        Invalid(
            """
            from torch.testing._internal.common_distributed import MultiProcContinousTest

            class TestCollectives(MultiProcContinousTest):
                pass
            """,
            expected_message="MultiProcContinuousTest",
            expected_fix="""
            from torch.testing._internal.common_distributed import MultiProcContinuousTest

            class TestCollectives(MultiProcContinuousTest):
                pass
            """,
            line=2,
            column=56,
        ),
        # An aliased import: only the imported name changes, the alias stays.
        Invalid(
            """
            from distlint.runtime import MultiProcContinousTest as Base

            class TestCollectives(Base):
                pass
            """,
            expected_fix="""
            from distlint.runtime import MultiProcContinuousTest as Base

            class TestCollectives(Base):
                pass
            """,
            line=2,
            column=30,
        ),
        # Attribute access through the module.
        Invalid(
            """
            import torch.testing._internal.common_distributed as cd

            class TestCollectives(cd.MultiProcContinousTest):
                pass
            """,
            expected_fix="""
            import torch.testing._internal.common_distributed as cd

            class TestCollectives(cd.MultiProcContinuousTest):
                pass
            """,
            line=4,
            column=23,
        ),
    ]

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        self._uses: list[cst.Name] = []

    def _is_misspelled_base(self, node: cst.CSTNode) -> bool:
        return bool(
            node_names(qualified_name_map(self.context.wrapper), node) & MISSPELLED_QUALIFIED
        )

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = cst.helpers.get_full_name_for_node(node.module)
        if module not in PROVIDERS:
            return
        for alias in node.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == MISSPELLED:
                self._imports.append(alias)

    def visit_Module(self, node: cst.Module) -> None:
        self._imports: list[cst.ImportAlias] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == MISSPELLED and self._is_misspelled_base(node):
            self._uses.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == MISSPELLED and self._is_misspelled_base(node):
            self.report(
                node,
                f"`{MISSPELLED}` is misspelled; use `{CORRECT}`",
                replacement=node.with_changes(attr=cst.Name(CORRECT)),
            )

    def leave_Module(self, original_node: cst.Module) -> None:
        for alias in self._imports:
            edits = [(alias.name, cst.Name(CORRECT))]
            if alias.asname is None:
                # Unaliased: every use of the imported name is renamed with it.
                edits += [(use, cst.Name(CORRECT)) for use in self._uses if use is not alias.name]
            self.report(
                alias,
                f"`{MISSPELLED}` is misspelled and gone from newer PyTorch; import `{CORRECT}`",
                fix=Fix(edits=tuple(edits)),
            )

"""The second target: a per-test class whose kept tests run on reused workers.

After the plan has moved what can share the class's PG, the tests a family keeps (they destroy
their PG, set PG environment, pass their own timeout...) still spawn processes for every test.
Where the analysis says the family can (``ClassAnalysis.reused_workers``, the same fact DL201
reports), the root's per-test base becomes ``distlint.runtime.ReusedWorkersTest`` and the
``setUp``/``tearDown`` that only spawned and cleaned up go: every kept test keeps its class, its
id and its body, and runs on ranks spawned once with a PG of its own. torch's classes have no
such target, so under ``--runtime torch`` the report only says what the distlint runtime would do.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

import libcst as cst

from distlint.analysis.model import Reason
from distlint.analysis.pg.hooks import hook_problem, is_spawn
from distlint.analysis.pg.reuse import REUSABLE_BASE, environment_only_setup
from distlint.codemods.bases.multi_process_test_case import environment_statements
from distlint.codemods.bases.spec import Target
from distlint.codemods.families import FamilyClass
from distlint.codemods.report import not_on_reused_workers
from distlint.codemods.twins import Twins
from distlint.syntax.ast_lines import units
from distlint.torch_names import DISTLINT_RUNTIME

REUSED_WORKERS_BASE = Target(DISTLINT_RUNTIME, "ReusedWorkersTest")
#: A class refusal the analysis gave (its backend, options or timeout as one shared PG's, an
#: environment-only setUp, a base from another module it read...) is one it weighed when it
#: called the family fit for reused workers; the codemod's own refusals (class body, factory
#: call, name taken...) leave the class as it is.
_COMPATIBLE_REFUSALS = frozenset(reason.code for reason in Reason)


def decide_reused_workers(
    order: Sequence[FamilyClass], runtime: str, hold: Mapping[str, tuple[str, str]]
) -> None:
    """Mark (``FamilyClass.reused``) every class of each family whose kept tests move to reused
    workers; under another runtime, note on the root what the distlint runtime would do."""
    for root in order:
        if root.parent is not None:
            continue
        family = [root, *root.descendants()]
        kept = [
            f"{cls.name}.{name}"
            for cls in family
            if not cls.removed
            for name in [d.test.name for d in cls.decisions.values() if not d.moved]
        ]
        if not kept:
            continue
        blocker = root.analysis.reused_workers_blocker
        if blocker and root.analysis.per_test_base == REUSABLE_BASE:
            root.notes.append(not_on_reused_workers(blocker))
        if not _can_swap(family, hold):
            continue
        if runtime != "distlint":
            root.notes.append(
                f"its {len(kept)} kept {'test' if len(kept) == 1 else 'tests'} could run as "
                "written on reused workers with a fresh PG each (distlint.runtime's "
                "ReusedWorkersTest), which torch's classes do not offer: use --runtime distlint"
            )
            continue
        for cls in family:
            cls.reused = True


def _can_swap(family: list[FamilyClass], hold: Mapping[str, tuple[str, str]]) -> bool:
    if not family[0].analysis.reused_workers:
        return False
    # A test --verify kept behind (``Class.test`` of any class of the family, inherited tests
    # included) stays per test, and so does its family.
    names = {cls.name for cls in family}
    if any(key.split(".", 1)[0] in names for key in hold):
        return False
    for cls in family:
        if cls.refusal is not None and cls.refusal[0] not in _COMPATIBLE_REFUSALS:
            return False  # the codemod's own refusal (class body, factory call...): left as it is
        if cls.unanalysed_tests:
            return False
    return True


def swapped_bases(cls: FamilyClass, base_name: str) -> tuple[list[cst.Arg], list[cst.CSTNode]]:
    """The root's bases with its per-test base replaced by ``base_name`` (what
    ``ReusedWorkersTest`` is bound to), and the replaced expressions (their imports may go)."""
    bases: list[cst.Arg] = []
    replaced: list[cst.CSTNode] = []
    kept = {id(b) for b in cls.kept_bases}
    for base in cls.node.bases:
        if id(base) in kept or cls.parent is not None:
            bases.append(base)
            continue
        replaced.append(base.value)
        bases.append(base.with_changes(value=cst.Name(base_name)))
    return bases, replaced


def spawn_statements(function: cst.BaseStatement, twins: Twins) -> list[cst.BaseStatement]:
    """The ``self._spawn_processes()`` lines of a hook (asked of its ``ast`` twin)."""
    if not isinstance(function, cst.FunctionDef) or not isinstance(
        function.body, cst.IndentedBlock
    ):
        return []
    hook = twins.ast_of(function)
    assert isinstance(hook, (ast.FunctionDef, ast.AsyncFunctionDef))
    return [twins.libcst_of(s) for s in units(hook) if is_spawn(s)]  # type: ignore[misc]


def setup_on_ranks(function: cst.BaseStatement, twins: Twins) -> cst.FunctionDef | None:
    """What of a reused class's ``setUp`` stays: the environment it sets (it runs on each rank
    before the test now), without the spawn; None when it only spawned, or its environment is
    the class's literal ``worker_env``."""
    if not isinstance(function, cst.FunctionDef):
        return None
    hook = twins.ast_of(function)
    assert isinstance(hook, (ast.FunctionDef, ast.AsyncFunctionDef))
    if hook_problem(hook, twins.source) is None:
        return None
    # The analysis let the family move only then:
    assert environment_only_setup(hook, twins.source)
    spawns = {id(s) for s in spawn_statements(function, twins)}
    body = function.body
    assert isinstance(body, cst.IndentedBlock)
    return function.with_changes(
        body=body.with_changes(body=[s for s in body.body if id(s) not in spawns])
    )


def declare_environment(
    cls: FamilyClass, kept: list[cst.BaseStatement], runtime: str
) -> list[cst.BaseStatement]:
    """A class moving to reused workers declares the literal environment its setUp gave the
    ranks (``worker_env``; after its docstring and class attribute lines, as a continuous class
    does), unless its same-file base declares the same."""
    environment = cls.analysis.environment
    if not environment or (
        cls.parent is not None and cls.parent.analysis.environment == environment
    ):
        return kept
    at = 0
    while at < len(kept) and isinstance(kept[at], cst.SimpleStatementLine):
        at += 1
    return [*kept[:at], *environment_statements(environment, runtime), *kept[at:]]

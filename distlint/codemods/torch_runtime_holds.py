"""Tests that stay per-test for ``--runtime torch`` only: they read state torch's continuous
classes carry from one test to the next on a rank, which the distlint runtime resets.

DTensor's RNG tracker (``torch.distributed.tensor._random._rng_tracker``) is created by the first
random op or ``manual_seed`` of a rank and kept for the process. A per-test rank starts with
none; the distlint runtime sets it back to ``None`` before every test on a shared rank; torch's
``DTensorContinuousTestBase`` runs only the test method on its ranks (no ``setUp``/``tearDown``
there) and never resets it (its ``LocalDTensorContinuousTestBase`` does, in ``tearDown``). A
test that reads the tracker (``_rng_tracker is None``) or seeds it (DTensor's ``manual_seed``)
would see what an earlier test left. Read with stdlib ``ast``: nothing here is rewritten.
"""

from __future__ import annotations

import ast

from distlint.analysis.model import Reason

RANDOM_MODULE = "torch.distributed.tensor._random"
TRACKER = "_rng_tracker"
SEED = "manual_seed"


def _random_module_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound to DTensor's ``_random`` module, and names bound to its ``manual_seed``."""
    modules, seeds = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                if f"{node.module}.{alias.name}" == RANDOM_MODULE:
                    modules.add(alias.asname or alias.name)
                elif node.module == RANDOM_MODULE and alias.name == SEED:
                    seeds.add(alias.asname or SEED)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == RANDOM_MODULE and alias.asname:
                    modules.add(alias.asname)
    return modules, seeds


def _reads_rng_state(function: ast.AST, modules: set[str], seeds: set[str]) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and node.attr == TRACKER:
            return True
        if isinstance(node, ast.Name) and node.id == TRACKER:
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in seeds:
                return True
            if (
                isinstance(func, ast.Attribute)
                and func.attr == SEED
                and isinstance(func.value, ast.Name)
                and func.value.id in modules
            ):
                return True
    return False


def rng_state_holds(source: bytes) -> dict[str, tuple[str, str]]:
    """``Class.test`` -> the reason it stays, for every test method that reads or seeds DTensor's
    RNG tracker (as ``MigrateOptions.hold`` takes it)."""
    if TRACKER.encode() not in source and SEED.encode() not in source:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}  # the migration itself reports the file
    modules, seeds = _random_module_names(tree)
    held = {}
    text = (
        f"{Reason.RNG_STATE.value.text} (torch's continuous classes keep it from test to test; "
        "the distlint runtime resets it)"
    )
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for item in cls.body:
            if (
                isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                and item.name.startswith("test")
                and _reads_rng_state(item, modules, seeds)
            ):
                held[f"{cls.name}.{item.name}"] = (Reason.RNG_STATE.code, text)
    return held

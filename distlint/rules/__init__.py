"""Rule registry: every ``dlNNN_*.py`` module in this package defines one rule."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache

from distlint.rules.base import LintRule

_RULE_MODULE = re.compile(r"^dl\d{3}_\w+$")


@cache
def all_rules() -> tuple:
    """All rule classes, sorted by code."""
    found: list[type[LintRule]] = []
    for info in pkgutil.iter_modules(__path__):
        if not _RULE_MODULE.match(info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        rules = [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type)
            and issubclass(obj, LintRule)
            and obj is not LintRule
            and obj.__module__ == module.__name__
        ]
        if len(rules) != 1:
            raise RuntimeError(
                f"{module.__name__} must define exactly one rule, found {len(rules)}"
            )
        found.append(rules[0])
    codes = [rule.code for rule in found]
    duplicates = {code for code in codes if codes.count(code) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {sorted(duplicates)}")
    return tuple(sorted(found, key=lambda rule: rule.code))


def rules_by_code() -> dict[str, type[LintRule]]:
    return {rule.code: rule for rule in all_rules()}

"""Rule registry: every ``dlNNN_*.py`` module in this package defines one rule.

A module is imported only when one of its rules is asked for (:func:`rules_for`): a file in
which only fact rules may report never imports the libcst rules, nor libcst.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterable
from functools import cache

from distlint.rules.rule import Rule

_RULE_MODULE = re.compile(r"^dl(?P<number>\d{3})_\w+$")


@cache
def _module_names() -> dict[str, str]:
    """Rule code -> the module defining it, read from the file names (nothing imported)."""
    found: dict[str, str] = {}
    # The file names, listed without ``pkgutil`` (whose import costs a one-file check ~10 ms).
    names = {n[:-3] for d in __path__ for n in os.listdir(d) if n.endswith(".py")}
    for name in sorted(names):
        match = _RULE_MODULE.match(name)
        if match is None:
            continue
        code = f"DL{match.group('number')}"
        if code in found:
            raise RuntimeError(f"duplicate rule codes: ['{code}']")
        found[code] = name
    return found


@cache
def _rule_of(module_name: str) -> type[Rule]:
    module = importlib.import_module(f"{__name__}.{module_name}")
    rules = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == module.__name__
    ]
    if len(rules) != 1:
        raise RuntimeError(f"{module.__name__} must define exactly one rule, found {len(rules)}")
    return rules[0]


def rules_for(codes: Iterable[str]) -> list[type[Rule]]:
    """The rules with these codes (unknown codes are left out), importing only their modules."""
    names = _module_names()
    return [_rule_of(names[code]) for code in sorted(set(codes)) if code in names]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """All rule classes, sorted by code."""
    found = [_rule_of(name) for name in _module_names().values()]
    for rule in found:
        expected = next(
            code
            for code, name in _module_names().items()
            if name == rule.__module__.rsplit(".", 1)[-1]
        )
        if rule.code != expected:
            raise RuntimeError(
                f"{rule.__module__} defines {rule.code}, its file name says {expected}"
            )
    return tuple(sorted(found, key=lambda rule: rule.code))


def rules_by_code() -> dict[str, type[Rule]]:
    return {rule.code: rule for rule in all_rules()}

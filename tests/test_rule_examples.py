"""One generic test runs every rule's own VALID and INVALID examples (Fixit style)."""

from __future__ import annotations

import dataclasses
import re
import textwrap

import pytest

from distlint.config import Config
from distlint.linter import fix_source, lint_source
from distlint.rules import all_rules, rules_by_code
from distlint.rules.base import Invalid, LintRule

DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


def _config(rule, example) -> Config:
    return Config.from_table({"select": [rule.code], **example.config}, source="<example>")


def _cases(kind: str):
    for rule in all_rules():
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize("rule,example", list(_cases("VALID")))
def test_valid_example_has_no_finding(rule, example):
    source = textwrap.dedent(example.code).encode()
    for prescreen in (True, False):
        result = lint_source(
            source, example.path, _config(rule, example), [rule], prescreen=prescreen
        )
        assert result.error is None
        assert [f for f in result.findings if f.code == rule.code] == []


def check_invalid_example(rule, example) -> None:
    """What an INVALID example promises: the reports, their place and message, and the fix."""
    source = textwrap.dedent(example.code).encode()
    config = _config(rule, example)
    full = lint_source(source, example.path, config, [rule], prescreen=False)
    screened = lint_source(source, example.path, config, [rule], prescreen=True)
    assert full.error is None
    # The pre-screen may only skip files that provably have no finding.
    assert screened.findings == full.findings
    found = [f for f in full.findings if f.code == rule.code]
    assert len(found) == example.count, [f.message for f in found]
    for finding in found:
        assert "\n" not in finding.message
        if example.expected_message is not None:
            assert example.expected_message in finding.message
    if example.line is not None:
        assert found[0].line == example.line, f"reported at {found[0].line}:{found[0].col}"
    if example.column is not None:
        assert found[0].col == example.column, f"reported at {found[0].line}:{found[0].col}"
    if example.expected_fix is None:
        # A rule fixes only what its examples show it fixing (that is what makes it fixable).
        assert not any(f.fixable for f in found), (
            "the rule offers a fix: add expected_fix to this example"
        )
        return
    assert all(f.fixable for f in found)
    fixed = fix_source(source, example.path, config, [rule])
    assert fixed.error is None
    assert fixed.fixed is not None
    assert fixed.fixed.decode() == textwrap.dedent(example.expected_fix)
    assert [f for f in fixed.remaining if f.code == rule.code] == []
    again = fix_source(fixed.fixed, example.path, config, [rule])
    assert again.fixed is None, "a second --fix must change nothing"


@pytest.mark.parametrize("rule,example", list(_cases("INVALID")))
def test_invalid_example_is_reported_and_fixed(rule, example):
    check_invalid_example(rule, example)


@pytest.mark.parametrize(
    "change",
    [{"line": 99}, {"column": 99}, {"expected_fix": None}, {"count": 2}],
    ids=["line", "column", "fix", "count"],
)
def test_the_harness_rejects_an_example_that_misstates_the_report(change):
    rule = rules_by_code()["DL301"]  # reported at a known place, with a fix
    example = rule.INVALID[0]
    assert example.line is not None and example.expected_fix is not None
    check_invalid_example(rule, example)
    with pytest.raises(AssertionError):
        check_invalid_example(rule, dataclasses.replace(example, **change))


def test_fixable_is_read_from_the_invalid_examples():
    class Fixes(LintRule):
        INVALID = [Invalid("x = 1\n"), Invalid("y = 1\n", expected_fix="y = 2\n")]

    class OnlyReports(LintRule):
        INVALID = [Invalid("x = 1\n")]

    class Inherits(Fixes):
        pass

    assert Fixes.fixable and Inherits.fixable and not OnlyReports.fixable
    with pytest.raises(TypeError, match="fixable comes from the INVALID examples"):

        class _ByHand(LintRule):
            fixable = True


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented_with_examples(rule):
    assert re.fullmatch(r"DL\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    module_name = rule.__module__.rsplit(".", 1)[-1]
    assert module_name.startswith(rule.code.lower() + "_")
    doc = rule.documentation()
    for section in DOC_SECTIONS:
        assert section in doc, f"{rule.code} doc lacks {section!r}"
    assert rule.VALID and rule.INVALID

"""A file the pre-screen settles is checked without importing libcst or any rule module.

Each check runs ``distlint check`` (the CLI's ``main``) in a fresh interpreter, which then
writes which modules it imported as JSON to a file (structured, apart from the CLI's output).
Also: the rule table (``distlint.screens``) and the rule classes agree, with one definition
of each rule's pre-screen.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CLEAN_SOURCE, MISSPELLED_BASE_SOURCE

from distlint.rules import all_rules
from distlint.screens import RULE_SCREENS, SCREENS_BY_CODE

ROOT = Path(__file__).resolve().parent.parent

_PROBE = """
import json, sys
from distlint import cli
code = cli.main(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    json.dump({"exit": code, "libcst": "libcst" in sys.modules,
               "rules": sorted(m for m in sys.modules if m.startswith("distlint.rules.dl"))}, out)
"""


def _check_in_fresh_process(tmp_path: Path, *args: str) -> dict:
    report = tmp_path / "imports.json"
    subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), "check", *args],
        cwd=tmp_path,
        check=True,
        timeout=120,
        capture_output=True,
    )
    return json.loads(report.read_text())


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_a_clean_file_is_checked_without_libcst(tmp_path, cache):
    (tmp_path / "test_clean.py").write_text(CLEAN_SOURCE)
    args = ["test_clean.py"] if cache else ["--no-cache", "test_clean.py"]
    seen = _check_in_fresh_process(tmp_path, *args)
    assert seen == {"exit": 0, "libcst": False, "rules": []}
    if cache:  # a warm run answered from the cache stays libcst-free too
        assert _check_in_fresh_process(tmp_path, *args) == {"exit": 0, "libcst": False, "rules": []}


def test_a_file_with_a_finding_uses_libcst_and_the_rules(tmp_path):
    (tmp_path / "test_misspelled.py").write_text(MISSPELLED_BASE_SOURCE)
    seen = _check_in_fresh_process(tmp_path, "--no-cache", "test_misspelled.py")
    assert seen["exit"] == 1 and seen["libcst"]
    assert "distlint.rules.dl302_misspelled_continuous_base" in seen["rules"]


def test_a_file_only_the_pg_rules_report_in_is_checked_without_libcst(tmp_path):
    """DL201-DL203 are fact rules: their findings come from the ``ast`` tree alone, so a large
    per-test-spawn file never pays for importing or parsing with libcst."""
    fixture = ROOT / "fixtures" / "pg" / "test_c10d_gloo_style.py"
    (tmp_path / fixture.name).write_bytes(fixture.read_bytes())
    expected = (ROOT / "fixtures" / "pg" / "test_c10d_gloo_style.findings").read_text()
    assert "DL202" in expected
    seen = _check_in_fresh_process(tmp_path, "--no-cache", "--select", "DL2", fixture.name)
    assert seen == {
        "exit": 1,
        "libcst": False,
        "rules": [
            "distlint.rules.dl201_per_test_process_group",
            "distlint.rules.dl202_per_test_spawn_class",  # (DL203's pre-screen rules it out)
        ],
    }


def test_the_table_lists_exactly_the_rule_modules_codes():
    assert [entry.code for entry in RULE_SCREENS] == [rule.code for rule in all_rules()]


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_a_rule_takes_name_default_and_prescreen_from_the_table(rule):
    entry = SCREENS_BY_CODE[rule.code]
    assert (rule.name, rule.default_enabled) == (entry.name, entry.default_enabled)
    assert rule.may_report is entry.may_report


def test_a_rule_cannot_define_its_own_prescreen():
    from distlint.rules.base import LintRule

    with pytest.raises(TypeError, match="may_report comes from distlint.screens"):

        class _Own(LintRule):
            @staticmethod
            def may_report(screen, config):
                return True

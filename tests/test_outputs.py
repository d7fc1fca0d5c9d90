"""Structure of every output format."""

from __future__ import annotations

import json
import re

import pytest
from conftest import CLEAN_SOURCE, MISSPELLED_BASE_FIXED, MISSPELLED_BASE_SOURCE, write_tree

from distlint.output import FORMATS, github, sarif
from distlint.output import json as json_output
from distlint.rules import all_rules

TWO_FINDINGS = MISSPELLED_BASE_SOURCE + (
    "\nimport torch.testing._internal.common_distributed as cd\n\n\nclass TestMore(cd.MultiProcContinousTest):\n"
    "    pass\n"
)


@pytest.fixture
def tree(tmp_path):
    write_tree(
        tmp_path,
        {
            "tests/test_one.py": MISSPELLED_BASE_SOURCE,
            "tests/test_two.py": TWO_FINDINGS,
            "tests/test_clean.py": CLEAN_SOURCE,
            "tests/test_broken.py": "def f(:\n",
        },
    )
    return tmp_path


def test_every_format_is_listed():
    assert FORMATS == ("text", "json", "lintrunner", "sarif", "github")


def test_json_is_a_sorted_list_of_objects_with_stable_fields(run_cli, tree):
    status, out, err = run_cli("check", "--format", "json", "--select", "DL302")
    assert status == 1
    assert "test_broken.py: error: syntax error" in err
    findings = json.loads(out)
    assert [tuple(item) for item in findings] == [json_output.FIELDS] * 3
    assert [(f["path"], f["line"], f["column"]) for f in findings] == [
        ("tests/test_one.py", 1, 56),
        ("tests/test_two.py", 1, 56),
        ("tests/test_two.py", 11, 16),
    ]
    first = findings[0]
    assert first["code"] == "DL302" and first["name"] == "misspelled-continuous-base"
    assert first["fixable"] is True
    assert first["end_line"] == 1 and first["end_column"] > first["column"]
    assert isinstance(first["message"], str) and "\n" not in first["message"]


def test_json_of_a_clean_tree_is_an_empty_list(run_cli, tmp_path):
    write_tree(tmp_path, {"test_clean.py": CLEAN_SOURCE})
    assert run_cli("check", "--format", "json") == (0, "[]\n", "")


def test_lintrunner_one_message_per_line_with_whole_file_fix(run_cli, tree):
    status, out, _ = run_cli("check", "--format", "lintrunner", "--select", "DL302")
    assert status == 0  # lintrunner's protocol: problems are messages, the linter exits 0
    messages = [json.loads(line) for line in out.splitlines()]
    fields = [
        "path",
        "line",
        "char",
        "code",
        "severity",
        "name",
        "original",
        "replacement",
        "description",
    ]
    assert all(list(message) == fields for message in messages)
    errors = [m for m in messages if m["code"] == "DISTLINT"]
    assert [(m["path"], m["name"], m["line"]) for m in errors] == [
        ("tests/test_broken.py", "file-error", None)
    ]
    findings = [m for m in messages if m["code"] == "DL302"]
    assert [(m["path"], m["line"], m["char"]) for m in findings] == [
        ("tests/test_one.py", 1, 56),
        ("tests/test_two.py", 1, 56),
        ("tests/test_two.py", 11, 16),
    ]
    assert all(
        m["severity"] == "error" and m["name"] == "misspelled-continuous-base" for m in findings
    )
    # The whole-file fix rides on the first fixable message of each file, once.
    assert findings[0]["original"] == MISSPELLED_BASE_SOURCE
    assert findings[0]["replacement"] == MISSPELLED_BASE_FIXED
    assert findings[1]["original"] == TWO_FINDINGS
    assert findings[1]["replacement"] == TWO_FINDINGS.replace(
        "MultiProcContinousTest", "MultiProcContinuousTest"
    )
    assert findings[2]["original"] is None and findings[2]["replacement"] is None
    assert "fixable" in findings[0]["description"]
    # Nothing was written.
    assert (tree / "tests/test_one.py").read_text() == MISSPELLED_BASE_SOURCE


def test_lintrunner_reports_a_missing_path_as_a_message_and_exit_2(run_cli, tree):
    status, out, _ = run_cli("check", "--format", "lintrunner", "nope.py")
    assert status == 2
    message = json.loads(out.splitlines()[0])
    assert (message["path"], message["code"], message["name"]) == (
        "nope.py",
        "DISTLINT",
        "path-error",
    )


def test_sarif_2_1_0_structure(run_cli, tree):
    status, out, _ = run_cli("check", "--format", "sarif", "--select", "DL302")
    assert status == 1
    document = json.loads(out)
    assert document["$schema"] == sarif.SCHEMA
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "distlint"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == [rule.code for rule in all_rules()]
    for descriptor in driver["rules"]:
        assert descriptor["shortDescription"]["text"]
        assert "## What it does" in descriptor["fullDescription"]["text"]
        assert "helpUri" not in descriptor
    results = run["results"]
    assert len(results) == 3
    for result in results:
        assert result["ruleId"] == "DL302"
        assert driver["rules"][result["ruleIndex"]]["id"] == "DL302"
        assert result["level"] == "error"
        assert result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"].startswith("tests/test_")
        assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1
    assert results[2]["locations"][0]["physicalLocation"]["region"]["startLine"] == 11
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False  # test_broken.py could not be checked
    notification = invocation["toolExecutionNotifications"][0]
    assert notification["level"] == "error" and "syntax error" in notification["message"]["text"]


def test_sarif_uris():
    assert sarif.artifact_uri("tests/a b.py") == "tests/a%20b.py"
    assert sarif.artifact_uri("/abs/x.py") == "file:///abs/x.py"


def test_github_annotations(run_cli, tree):
    status, out, _ = run_cli("check", "--format", "github", "--select", "DL302")
    assert status == 1
    lines = out.splitlines()
    assert (
        lines[0]
        == "::error file=tests/test_broken.py,title=distlint::tests/test_broken.py%3A error%3A syntax "
        "error at 1%3A7%3A invalid syntax".replace("%3A", ":")
    )
    pattern = re.compile(
        r"^::error file=tests/test_\w+\.py,line=\d+,col=\d+,endLine=\d+,endColumn=\d+,"
        r"title=DL302::DL302 .+$"
    )
    assert all(pattern.match(line) for line in lines[1:]), lines
    assert len(lines) == 4
    assert lines[1].startswith("::error file=tests/test_one.py,line=1,col=56,")


def test_github_escaping():
    assert github._escape_data("50% done\nnext") == "50%25 done%0Anext"
    assert github._escape_property("a,b:c") == "a%2Cb%3Ac"


def test_statistics_with_a_machine_format_goes_to_stderr(run_cli, tree):
    status, out, err = run_cli("check", "--format", "json", "--statistics", "--select", "DL302")
    assert status == 1
    assert len(json.loads(out)) == 3
    assert "3  DL302  misspelled-continuous-base  (fixable)" in err.splitlines()

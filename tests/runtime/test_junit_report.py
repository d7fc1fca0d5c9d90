# distlint: ignore[DL101] - its TestCase classes are inputs the tests run, not a script
"""run_tests()'s JUnit XML report: every unittest outcome, in a file CI tools (and our tests) can parse."""

from __future__ import annotations

import io
import os
import stat
import types
import unittest
import xml.etree.ElementTree as ET

import pytest

from distlint.runtime import junit_report, launch, pool_registry

from .support import read_junit


# Run by the tests below through unittest, never collected by pytest itself.
class Outcomes(unittest.TestCase):
    __test__ = False

    def test_passes(self):
        pass

    def test_fails(self):
        self.assertEqual(1, 2, "one is not two")

    def test_errors(self):
        raise KeyError("no such key")

    def test_skips(self):
        self.skipTest("not here")

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.fail("known")

    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass

    def test_subtests(self):
        for value in (1, 2, 3):
            with self.subTest(value=value):
                self.assertLess(value, 2, f"value {value} too big")

    def test_prints_control_characters(self):
        self.fail("colour \x1b[31mred\x1b[0m and a NUL \x00")


class BrokenSetUpClass(unittest.TestCase):
    __test__ = False

    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class fixture broke")

    def test_never_runs(self):
        pass


@unittest.skip("whole class skipped")
class SkippedClass(unittest.TestCase):
    __test__ = False

    def test_never_runs(self):
        pass


def recorded(*classes) -> junit_report.RecordingTextResult:
    suite = unittest.TestSuite(
        unittest.defaultTestLoader.loadTestsFromTestCase(cls) for cls in classes
    )
    runner = unittest.TextTestRunner(
        stream=io.StringIO(), resultclass=junit_report.RecordingTextResult
    )
    return runner.run(suite)


def test_every_unittest_outcome_is_one_testcase_with_its_message(tmp_path):
    result = recorded(Outcomes, BrokenSetUpClass)
    path = tmp_path / "report.xml"
    junit_report.write(str(path), result.cases.values(), "suite", 1.5)

    report = read_junit(path)  # also proves the file parses, control characters and all
    assert {name: case.outcome for name, case in report.items()} == {
        "Outcomes.test_passes": "passed",
        "Outcomes.test_fails": "failure",
        "Outcomes.test_errors": "error",
        "Outcomes.test_skips": "skipped",
        "Outcomes.test_expected_failure": "skipped",  # as pytest reports an xfail
        "Outcomes.test_unexpected_success": "failure",  # unittest: not successful
        "Outcomes.test_subtests": "failure",
        "Outcomes.test_prints_control_characters": "failure",
        "BrokenSetUpClass.setUpClass": "error",
    }
    assert report["Outcomes.test_fails"].message == "1 != 2 : one is not two"
    assert (
        "Traceback" in report["Outcomes.test_fails"].text
        and "one is not two" in report["Outcomes.test_fails"].text
    )
    assert report["Outcomes.test_errors"].message == "'no such key'"
    assert report["Outcomes.test_skips"].message == "not here"
    assert report["Outcomes.test_unexpected_success"].message == "unexpected success"
    subtests = report["Outcomes.test_subtests"].text
    assert "value 2 too big" in subtests and "value 3 too big" in subtests  # both failing subtests
    assert "\\x1b[31mred" in report["Outcomes.test_prints_control_characters"].message
    assert "class fixture broke" in report["BrokenSetUpClass.setUpClass"].text

    suite = ET.parse(path).getroot().find("testsuite")
    counts = {
        key: suite.get(key) for key in ("name", "tests", "failures", "errors", "skipped", "time")
    }
    assert counts == {
        "name": "suite",
        "tests": "9",
        "failures": "4",
        "errors": "2",
        "skipped": "2",
        "time": "1.500",
    }
    classnames = {case.get("classname") for case in suite.iter("testcase")}
    assert classnames == {f"{__name__}.Outcomes", f"{__name__}.BrokenSetUpClass"}


def test_a_skipped_class_is_one_skipped_testcase_per_test():
    result = recorded(SkippedClass)
    assert [
        (c.classname.rsplit(".", 1)[1], c.name, c.outcome, c.message) for c in result.cases.values()
    ] == [("SkippedClass", "test_never_runs", "skipped", "whole class skipped")]


def test_the_option_is_taken_out_of_argv_in_both_spellings():
    assert junit_report.take_option(["t.py", "-v", "--junit-xml", "a.xml", "-k", "x"]) == (
        ["t.py", "-v", "-k", "x"],
        "a.xml",
    )
    assert junit_report.take_option(["t.py", "--junit-xml=b.xml", "Cls"]) == (
        ["t.py", "Cls"],
        "b.xml",
    )
    assert junit_report.take_option(["t.py", "-v"]) == (["t.py", "-v"], None)
    for argv in (["t.py", "--junit-xml"], ["t.py", "--junit-xml="]):
        with pytest.raises(ValueError, match="--junit-xml needs a file path"):
            junit_report.take_option(argv)


def test_under_torchrun_rank_0_writes_unless_the_path_names_the_rank():
    assert junit_report.path_for_rank("r.xml", None) == "r.xml"  # not torchrun
    assert junit_report.path_for_rank("r.xml", 0) == "r.xml"
    assert junit_report.path_for_rank("r.xml", 1) is None
    assert junit_report.path_for_rank("r-{rank}.xml", 1) == "r-1.xml"
    assert junit_report.path_for_rank(None, 0) is None


def test_the_report_is_written_whole_with_its_folder_and_readable_permissions(tmp_path):
    path = tmp_path / "deep" / "er" / "report.xml"
    junit_report.write(str(path), [junit_report.CaseRecord("m.C", "test_x")], "s", 0.0)
    assert read_junit(path) == {"C.test_x": read_junit(path)["C.test_x"]}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert os.listdir(path.parent) == ["report.xml"]  # no temporary file left beside it


# ---- run_tests() in this process, on a module of plain TestCases ------------------


def passing_module() -> types.ModuleType:
    module = types.ModuleType("junit_probe")
    module.Probe = type("Probe", (unittest.TestCase,), {"test_ok": lambda self: None})
    return module


def run_tests_exit(argv, **kwargs) -> int:
    with pytest.raises(SystemExit) as exited:
        launch.run_tests(argv, module=passing_module(), **kwargs)
    return exited.value.code


@pytest.fixture
def quiet_run_tests(monkeypatch):
    # run_tests() ends by closing every pool and the fork server; nothing here started one.
    monkeypatch.setattr(pool_registry, "shutdown_all", lambda: None)
    monkeypatch.delenv(junit_report.JUNIT_XML_ENV, raising=False)


def test_run_tests_takes_the_path_from_argv_then_its_argument_then_the_environment(
    tmp_path, monkeypatch, quiet_run_tests
):
    cli, argument, env = (tmp_path / f"{name}.xml" for name in ("cli", "argument", "env"))
    monkeypatch.setenv(junit_report.JUNIT_XML_ENV, str(env))
    assert run_tests_exit(["probe", "--junit-xml", str(cli)], junit_xml=str(argument)) == 0
    assert run_tests_exit(["probe"], junit_xml=str(argument)) == 0
    assert run_tests_exit(["probe"]) == 0
    for path in (cli, argument, env):
        assert read_junit(path)["Probe.test_ok"].outcome == "passed"


def test_run_tests_fails_clearly_on_a_missing_path_or_an_unwritable_report(
    tmp_path, quiet_run_tests, capsys
):
    assert run_tests_exit(["probe", "--junit-xml"]) == 2
    assert "probe: error: --junit-xml needs a file path\n" in capsys.readouterr().err
    # The tests passed, but a report that cannot be written fails the run, in one line.
    assert run_tests_exit(["probe", "--junit-xml", str(tmp_path)]) == 1
    assert f"distlint.runtime: {tmp_path}: JUnit XML report not written:" in capsys.readouterr().err

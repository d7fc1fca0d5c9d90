"""run_tests() takes the command line PyTorch's test/run_test.py gives `python test_x.py`.

The flag lists below are the ones run_test.py builds (``run_test()``: ``--shard-id``/
``--num-shards``, ``-v``, ``--subprocess`` for the c10d files, ``get_pytest_args()``, the CI
``--import-*-tests`` flags, then ``--sc=KEY --print-items`` from its retry loop).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from distlint.runtime import torch_cli

from .support import CASES, read_junit, run_python, subprocess_env

SC = "--sc=distributed/test_c10d_gloo_1_5b1f0c9ad2e4a7c3"

#: CI, distributed file, pytest (run_test.py's default for every serial file).
PYTEST_CI = [
    "distributed/test_c10d_gloo.py",
    "--shard-id=1",
    "--num-shards=1",
    "--subprocess",
    "-vv",
    "-rfEX",
    "-p",
    "no:xdist",
    "--use-pytest",
    "-x",
    "--reruns=2",
    "--import-slow-tests",
    "--import-disabled-tests",
    SC,
    "--print-items",
]
#: The same under PYTORCH_TEST_RERUN_DISABLED_TESTS=1, the file split by class (-k).
PYTEST_RERUN_DISABLED = [
    "distributed/test_c10d_gloo.py",
    "--shard-id=2",
    "--num-shards=3",
    "-vv",
    "-rfEX",
    "-p",
    "no:xdist",
    "--use-pytest",
    "--flake-finder",
    "--flake-runs=15",
    "-k",
    "ProcessGroupGlooTest or RendezvousTest",
    "--import-slow-tests",
    "--import-disabled-tests",
    "--rerun-disabled-tests",
    SC,
    "--print-items",
]
#: PYTORCH_TEST_DO_NOT_USE_PYTEST=1: the unittest path, run_test.py -v.
UNITTEST_CI = [
    "distributed/test_c10d_gloo.py",
    "--shard-id=1",
    "--num-shards=1",
    "-v",
    "--subprocess",
    "--import-slow-tests",
    "--import-disabled-tests",
    SC,
    "--print-items",
]


def test_the_pytest_command_line_of_ci_goes_to_pytest_as_torch_hands_it_on():
    flags = torch_cli.parse(PYTEST_CI, environ={"CI": "true"})
    assert flags.use_pytest
    assert flags.slow_tests_file == "slow_tests.json"
    assert flags.disabled_tests_file == ".pytorch-disabled-tests.json"
    assert flags.save_xml == "test-reports/python-unittest"  # torch's CI default
    assert flags.notes == [f"--subprocess ignored: {torch_cli._IGNORED['subprocess']}"]
    report = torch_cli.report_path(flags, PYTEST_CI[0], pytest=True, stamp="20260101")
    assert report == (
        "test-reports/python-pytest/distributed.test_c10d_gloo/"
        "TEST-distributed.test_c10d_gloo-20260101.xml"
    )
    # Everything but torch's own flags, for PyTorch's conftest and plugins, as torch passes it.
    assert torch_cli.pytest_args(flags, report) == [
        "distributed/test_c10d_gloo.py",
        "--shard-id=1",
        "--num-shards=1",
        "-vv",
        "-rfEX",
        "-p",
        "no:xdist",
        "-x",
        "--reruns=2",
        SC,
        "--print-items",
        f"--junit-xml={report}",
    ]


def test_rerun_disabled_mode_keeps_the_class_filter_and_flake_finder_for_pytest():
    flags = torch_cli.parse(PYTEST_RERUN_DISABLED, environ={})
    assert flags.rerun_disabled_tests and flags.use_pytest
    assert flags.save_xml is None  # not CI, no --save-xml
    args = torch_cli.pytest_args(flags, None)
    assert args[args.index("-k") + 1] == "ProcessGroupGlooTest or RendezvousTest"
    assert "--shard-id=2" in args and "--flake-runs=15" in args
    assert flags.notes == []


def test_the_unittest_command_line_keeps_unittests_flags_and_notes_the_rest():
    flags = torch_cli.parse(UNITTEST_CI + ["-x", "--save-xml", "out"], environ={})
    assert flags.argv == ["distributed/test_c10d_gloo.py", "-v", "-f"]
    assert (flags.shard_id, flags.num_shards) == (1, 1)
    assert flags.save_xml == "out"
    assert flags.notes == [
        f"--subprocess ignored: {torch_cli._IGNORED['subprocess']}",
        "--sc --print-items ignored: pytest options (no --use-pytest)",
    ]
    suffixed = torch_cli.parse(["t.py", "--save-xml", "--log-suffix=-shard-1"], environ={})
    assert torch_cli.report_path(suffixed, "t.py", pytest=False, stamp="1") == (
        "test-reports/python-unittest-shard-1/t/TEST-t-1.xml"
    )


def test_a_bad_value_is_a_one_line_error_and_shards_split_a_files_tests():
    with pytest.raises(ValueError, match="--repeat: invalid int value: 'x'"):
        torch_cli.parse(["t.py", "--repeat", "x"], environ={})
    with pytest.raises(ValueError, match="--shard-id 4 is not a shard of --num-shards 3"):
        torch_cli.parse(["t.py", "--shard-id=4", "--num-shards=3"], environ={})
    ids = [f"__main__.Cls.test_{index}" for index in range(30)]
    shards = [torch_cli.parse(["t.py", f"--shard-id={i}", "--num-shards=3"], {}) for i in (1, 2, 3)]
    owners = [[s.shard_id for s in shards if torch_cli.in_shard(i, "t.py", s)] for i in ids]
    assert all(len(owner) == 1 for owner in owners)  # every test in exactly one shard
    assert {owner[0] for owner in owners} == {1, 2, 3}


def test_test_lists_are_loaded_where_torchs_disabled_check_reads_them(tmp_path, monkeypatch):
    from torch.testing._internal import common_utils

    monkeypatch.setattr(common_utils, "disabled_tests_dict", {})
    monkeypatch.setattr(common_utils, "slow_tests_dict", {})
    monkeypatch.setattr(common_utils, "RERUN_DISABLED_TESTS", False)
    monkeypatch.setenv("DISABLED_TESTS_FILE", "")  # undone after the test, as set below
    listed = tmp_path / "disabled.json"
    listed.write_text(json.dumps({"test_disabled_here (__main__.Probe)": ["#1", []]}))
    flags = torch_cli.parse(
        ["t.py", f"--import-disabled-tests={listed}", f"--import-slow-tests={tmp_path / 'no'}"],
        environ={},
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch_cli.load_test_lists(flags) == []
    assert [str(w.message) for w in caught] == [
        f"slow test file provided but not found: {tmp_path / 'no'}"
    ]
    # What torch's check_if_enable reads (the run below shows a listed test skipped).
    assert common_utils.disabled_tests_dict == {"test_disabled_here (__main__.Probe)": ["#1", []]}
    assert os.environ["DISABLED_TESTS_FILE"] == str(listed)  # as torch: for later processes
    assert common_utils.slow_tests_dict == {}


def test_a_file_run_as_ci_runs_it_writes_torchs_report_with_outcomes_and_restored_state(
    tmp_path,
):
    """One run of a continuous class file with run_test.py's unittest flags and --save-xml."""
    disabled = tmp_path / "disabled.json"
    disabled.write_text(
        json.dumps({"test_c_puts_back_what_it_changes (__main__.LeakThenExpectFresh)": ["#2", []]})
    )
    reports = tmp_path / "test-reports"
    args = ["rank_state_case.py", *UNITTEST_CI[1:], "--save-xml", str(reports)]
    args[args.index("--import-disabled-tests")] = f"--import-disabled-tests={disabled}"
    done = run_python(args, subprocess_env(tmp_path), timeout=300, cwd=CASES)
    assert done.returncode == 0, done.stderr[-3000:]
    (report,) = (reports / "rank_state_case").glob("TEST-rank_state_case-*.xml")
    cases = read_junit(report)
    assert {name: case.outcome for name, case in cases.items()} == {
        "LeakThenExpectFresh.test_a_leaks_process_wide_state": "passed",
        "LeakThenExpectFresh.test_b_sees_what_a_fresh_process_has": "passed",
        "LeakThenExpectFresh.test_c_puts_back_what_it_changes": "skipped",  # the list's
    }
    properties = _properties(report)
    assert set(properties) == {"test_a_leaks_process_wide_state"}
    assert properties["test_a_leaks_process_wide_state"].startswith(
        "default dtype torch.float64 (was torch.float32) on ranks 0, 1; "
    )


def _properties(report: Path) -> dict:
    import xml.etree.ElementTree as ET

    return {
        case.get("name"): prop.get("value")
        for case in ET.parse(report).getroot().iter("testcase")
        for prop in case.iter("property")
        if prop.get("name") == "distlint.restored_state"
    }

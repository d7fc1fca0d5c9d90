"""Process-wide state a test leaks on shared ranks is put back before the next test, and named."""

from __future__ import annotations

import os
import unittest
import warnings

import torch

from distlint.runtime import rank_state
from distlint.runtime.outcome import Observation, decide_outcome
from distlint.runtime.protocol import RankResult, Status

from .support import RecordingResult, load_case

case = load_case("rank_state_case")


def test_restore_puts_back_each_setting_and_names_only_what_changed(tmp_path, monkeypatch):
    monkeypatch.delenv("DISTLINT_PROBE_SET", raising=False)
    monkeypatch.setenv("DISTLINT_PROBE_CHANGED", "before")
    monkeypatch.setenv("DISTLINT_PROBE_REMOVED", "before")
    monkeypatch.chdir(tmp_path)
    before = rank_state.take()
    assert rank_state.restore(before) == ()  # nothing changed: nothing to say

    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    os.environ["DISTLINT_PROBE_SET"] = "secret-value"
    os.environ["DISTLINT_PROBE_CHANGED"] = "after"
    del os.environ["DISTLINT_PROBE_REMOVED"]
    (tmp_path / "elsewhere").mkdir()
    os.chdir(tmp_path / "elsewhere")
    lines = rank_state.restore(before)

    assert torch.get_default_dtype() is torch.float32
    assert torch.is_grad_enabled()
    assert "DISTLINT_PROBE_SET" not in os.environ
    assert os.environ["DISTLINT_PROBE_CHANGED"] == "before"
    assert os.environ["DISTLINT_PROBE_REMOVED"] == "before"
    assert os.getcwd() == str(tmp_path)
    assert lines == (
        "default dtype torch.float64 (was torch.float32)",
        "grad mode False (was True)",
        (
            "os.environ: set DISTLINT_PROBE_SET; changed DISTLINT_PROBE_CHANGED; "
            "removed DISTLINT_PROBE_REMOVED"
        ),
        f"cwd {tmp_path / 'elsewhere'} (was {tmp_path})",
    )
    assert not any("secret-value" in line for line in lines)  # names, never values


def test_the_outcome_names_each_change_once_with_the_ranks_that_made_it():
    def result(rank: int, restored: tuple) -> RankResult:
        return RankResult(seq=1, test_id="t", rank=rank, status=Status.PASSED, restored=restored)

    outcome = decide_outcome(
        Observation(
            test_id="t",
            world_size=2,
            results={
                0: result(0, ("default dtype torch.float64 (was torch.float32)", "cwd /a (was /)")),
                1: result(1, ("default dtype torch.float64 (was torch.float32)",)),
            },
        )
    )
    assert outcome.verdict.value == "pass"  # restoring never changes the verdict
    assert outcome.restored == (
        "default dtype torch.float64 (was torch.float32) on ranks 0, 1",
        "cwd /a (was /) on rank 0",
    )


def test_a_later_test_on_shared_ranks_gets_fresh_state_and_the_leaking_test_is_named(case_log):
    tests = list(unittest.defaultTestLoader.loadTestsFromTestCase(case.LeakThenExpectFresh))
    result = RecordingResult()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unittest.TestSuite(tests).run(result)  # the suite forgets its tests as it runs them

    assert {name: outcome.kind for name, outcome in result.outcomes.items()} == {
        "LeakThenExpectFresh.test_a_leaks_process_wide_state": "pass",
        "LeakThenExpectFresh.test_b_sees_what_a_fresh_process_has": "pass",
        "LeakThenExpectFresh.test_c_puts_back_what_it_changes": "pass",
    }
    restored = {test._testMethodName: getattr(test, rank_state.RESTORED_ATTR, ()) for test in tests}
    assert restored["test_b_sees_what_a_fresh_process_has"] == ()
    assert restored["test_c_puts_back_what_it_changes"] == ()
    leaked = restored["test_a_leaks_process_wide_state"]
    assert [line.split(" ")[0] for line in leaked] == [
        "default",  # dtype
        "default",  # device
        "grad",
        "deterministic",
        "os.environ:",
        "cwd",
        "process",  # groups
    ]
    assert leaked[0] == "default dtype torch.float64 (was torch.float32) on ranks 0, 1"
    assert leaked[4] == f"os.environ: set {case.PROBE} on ranks 0, 1"
    assert leaked[6] == (
        "process groups: 1 created and not destroyed (destroyed now) on ranks 0, 1"
    )
    warned = [w.message for w in caught if issubclass(w.category, rank_state.RestoredStateWarning)]
    assert len(warned) == 1 and "test_a_leaks_process_wide_state" in str(warned[0])

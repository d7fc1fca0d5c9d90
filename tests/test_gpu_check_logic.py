"""scripts/gpu_check.sh's parts that run without a GPU: its exit 2, and the outcome comparison
scripts/migrated_fixtures_check.py applies to the migrated DTensor/FSDP fixtures under NCCL."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_check():
    spec = importlib.util.spec_from_file_location(
        "migrated_fixtures_check", ROOT / "scripts" / "migrated_fixtures_check.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load_check()
RENAMED = {"XContinuous": "X", "XContinuousWithLocalTensor": "XWithLocalTensor"}
ORIGINAL = {
    "X.test_a": "passed",
    "X.test_b": "skipped",
    "X.test_c": "passed",
    "XWithLocalTensor.test_a": "passed",
}


def test_same_outcomes_under_new_class_names_hold():
    migrated = {
        "XContinuous.test_a": "passed",
        "XContinuous.test_b": "skipped",
        "X.test_c": "passed",
        "XContinuousWithLocalTensor.test_a": "passed",
    }
    assert check.compare(ORIGINAL, migrated, RENAMED) == []


@pytest.mark.parametrize(
    "migrated, problem",
    [
        (
            {
                "XContinuous.test_a": "passed",
                "XContinuous.test_b": "passed",
                "X.test_c": "passed",
                "XContinuousWithLocalTensor.test_a": "passed",
            },
            "passed differ",
        ),  # a skip became a pass
        (
            {
                "XContinuous.test_a": "failed",
                "XContinuous.test_b": "skipped",
                "X.test_c": "passed",
                "XContinuousWithLocalTensor.test_a": "passed",
            },
            "migrated had",
        ),  # a failure
        (
            {"XContinuous.test_a": "passed", "XContinuous.test_b": "skipped", "X.test_c": "passed"},
            "passed differ",
        ),  # the local tensor twin went missing
    ],
)
def test_a_difference_is_a_problem(migrated, problem):
    problems = check.compare(ORIGINAL, migrated, RENAMED)
    assert any(p.startswith(problem) for p in problems), problems


def test_an_original_that_reported_nothing_is_a_problem():
    assert "the original reported no test" in check.compare({}, {}, {})


def test_gpu_check_exits_2_without_a_gpu():
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: scripts/gpu_check.sh runs for real")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh")],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHON=sys.executable),
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no CUDA device" in done.stdout

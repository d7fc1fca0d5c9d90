"""Skip decorators outside continuous classes: plain tests, child processes, classes."""

from __future__ import annotations

import multiprocessing
import unittest

import pytest

from distlint.runtime import (
    TEST_SKIPS,
    environment,
    require_world_size,
    requires_gloo,
    requires_nccl,
    skip_if_lt_x_gpu,
    skip_if_odd_worldsize,
)
from distlint.runtime.decorators import REQUIREMENTS_ATTR, AtLeastGpus, BackendBuilt


@skip_if_lt_x_gpu(2)
def needs_two_gpus():
    return "ran"


@skip_if_odd_worldsize
def needs_even_world():
    return "ran"


def call_in_child(fn_name: str, world_size: str) -> int:
    """Exit code of a child process (forked: it only calls a plain function) running one of the above."""
    ctx = multiprocessing.get_context("fork")
    process = ctx.Process(target=_child, args=(fn_name, world_size))
    process.start()
    process.join(timeout=60)
    assert process.exitcode is not None, "child did not finish"
    return process.exitcode


def _child(fn_name: str, world_size: str) -> None:
    import os

    os.environ["WORLD_SIZE"] = world_size
    globals()[fn_name]()


def test_in_the_main_process_an_unmet_requirement_is_a_skiptest_with_the_registry_message():
    if environment.cuda_device_count() >= 2:
        pytest.skip("this machine has 2 GPUs: the requirement is met")
    with pytest.raises(unittest.SkipTest, match="^Need at least 2 CUDA devices$"):
        needs_two_gpus()


def test_in_a_child_process_it_exits_with_the_registry_code():
    if environment.cuda_device_count() >= 2:
        pytest.skip("this machine has 2 GPUs: the requirement is met")
    assert call_in_child("needs_two_gpus", "2") == TEST_SKIPS["multi-gpu-2"].exit_code
    assert call_in_child("needs_even_world", "3") == TEST_SKIPS["odd_worldsize"].exit_code
    assert call_in_child("needs_even_world", "2") == 0


def test_requirements_accumulate_and_metadata_is_kept():
    @requires_gloo()
    @skip_if_lt_x_gpu(1, allow_cpu=True)
    def test_something():
        """doc"""

    assert test_something.__name__ == "test_something" and test_something.__doc__ == "doc"
    assert getattr(test_something, REQUIREMENTS_ATTR) == (
        AtLeastGpus(1, True),
        BackendBuilt("gloo"),
    )
    test_something()  # gloo is built in; allow_cpu lets a CPU-only machine run it


def test_require_world_size_is_readable_by_harnesses():
    @require_world_size(4)
    def test_four():
        pass

    assert test_four._required_world_size == 4


def test_on_a_plain_testcase_class_the_decision_is_made_at_decoration(monkeypatch):
    monkeypatch.setattr(environment, "backend_available", lambda name: False)

    @requires_nccl()
    class NeedsNccl(unittest.TestCase):
        def test_x(self):
            pass

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(NeedsNccl).run(result)
    assert result.skipped and result.skipped[0][1] == "c10d not compiled with NCCL support"

"""NCCL tests skip cleanly, through the registry, where there is no GPU or no NCCL.

The same case file runs for real on a GPU machine (scripts/gpu_check.sh); here
the assertions follow what this machine can do, and on a CPU-only machine the
skip path itself is what is tested: skipped with the registry's message,
decided before any worker process exists, never passed or failed.
"""

from __future__ import annotations

import pytest

from distlint.runtime import TEST_SKIPS, environment, pool_registry

from .support import CASES, load_case, read_junit, run_classes, run_python, subprocess_env

nccl_case = load_case("nccl_case")
CLASSES = ("NcclCase", "NcclWorldSize1", "NcclWorldSize2")


def expected_skip(world_size):
    """The registry message this machine must produce for an NCCL class, or None if it can run."""
    if not environment.backend_available("nccl"):
        return TEST_SKIPS["nccl"].message
    gpus = environment.cuda_device_count()
    if gpus == 0:
        return TEST_SKIPS["no_cuda"].message
    if world_size is not None and gpus < world_size:
        return TEST_SKIPS[f"multi-gpu-{world_size}"].message
    return None


def test_nccl_classes_skip_in_the_dispatcher_with_the_registry_message():
    if expected_skip(1) is None:
        pytest.skip("NCCL and a GPU are available: scripts/gpu_check.sh runs these for real")
    before = pool_registry.stats()["pools_started"]
    outcomes = run_classes(*(getattr(nccl_case, name) for name in CLASSES))
    assert len(outcomes) == 3  # one class-level skip each
    for name, size in zip(CLASSES, (None, 1, 2)):
        outcome = outcomes[f"setUpClass ({nccl_case.__name__}.{name})"]
        assert (outcome.kind, outcome.message) == ("skip", expected_skip(size)), name
    assert pool_registry.stats()["pools_started"] == before, (
        "a skip decided without workers must not start any"
    )


def test_running_the_nccl_file_reports_skips_not_passes(tmp_path):
    if expected_skip(1) is None:
        pytest.skip("NCCL and a GPU are available: scripts/gpu_check.sh runs these for real")
    report = tmp_path / "nccl.xml"
    proc = run_python(
        [str(CASES / "nccl_case.py"), "-v", "--junit-xml", str(report)],
        subprocess_env(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Only the three class-level skips: no test ran, passed or failed.
    assert {name: (case.outcome, case.message) for name, case in read_junit(report).items()} == {
        f"{name}.setUpClass": ("skipped", expected_skip(size))
        for name, size in zip(CLASSES, (None, 1, 2))
    }

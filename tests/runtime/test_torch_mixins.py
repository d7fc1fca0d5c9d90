"""distlint's continuous class accepts torch's DTensor/FSDP mixins; the bases migrate targets work."""

from __future__ import annotations

import torch

from distlint.runtime.resolve import plan_for_class

from .cases.caselog import read
from .support import load_case, run_classes

cases = load_case("torch_mixins")


def test_dtensor_mixin_on_the_runtime_builds_meshes_at_its_world_size(case_log):
    outcomes = run_classes(cases.MixinOnRuntime)
    assert {k: v.kind for k, v in outcomes.items()} == {
        "MixinOnRuntime.test_mesh_and_distribute": "pass"
    }
    entries = read(case_log)
    assert sorted(e["rank"] for e in entries) == [0, 1, 2, 3]  # NUM_DEVICES ranks on CPU
    assert {(e["device_type"], e["mesh"]) for e in entries} == {("cpu", 4)}


def test_dtensor_base_keeps_the_helpers_and_resets_the_rng_tracker(case_log):
    outcomes = run_classes(cases.DTensorHelpers)
    assert {k: v.kind for k, v in outcomes.items()} == {
        "DTensorHelpers.test_helpers": "pass",
        "DTensorHelpers.test_random_op_leaves_a_tracker": "pass",
        "DTensorHelpers.test_random_op_tracker_starts_empty": "pass",
        "DTensorHelpers.test_saved_dtensor_loads_with_weights_only": "pass",
    }, {k: v.message for k, v in outcomes.items()}
    helpers = [e for e in read(case_log) if e["test"] == "test_helpers"]
    assert len(helpers) == 4
    for entry in helpers:
        assert (entry["device_type"], entry["device_call"], entry["world"]) == ("cpu", "cpu", 4)
        assert entry["subtests"] == [1, 2]
    # On a test, device_type is the plain str torch's mixin gives (a mesh pickles it).
    assert {e["device_type_class"] for e in read(case_log) if "device_type_class" in e} == {"str"}
    trackers = {e["test"]: e["tracker"] for e in read(case_log) if "tracker" in e}
    assert trackers == {
        "test_random_op_leaves_a_tracker": True,
        "test_random_op_tracker_starts_empty": False,
    }


def test_device_type_is_a_property_and_a_classmethod():
    cls = cases.DTensorHelpers
    assert cls.device_type() == "cpu" and cls.device_type == "cpu"
    assert plan_for_class(cls).config.device_type == "cpu"


def test_fsdp_base_skips_without_an_accelerator_per_rank(case_log):
    outcomes = run_classes(cases.FSDPHelpers)
    assert (
        torch.accelerator.device_count() < cases.FSDPHelpers.world_size
    )  # CPU: FSDPTest skips every test
    assert {k: v.kind for k, v in outcomes.items()} == {"FSDPHelpers.test_skipped_on_cpu": "skip"}
    assert "CUDA device" in next(iter(outcomes.values())).message
    assert read(case_log) == []


def test_local_tensor_twin_of_a_continuous_class_runs_in_this_process(case_log):
    import os

    outcomes = run_classes(cases.LocalSourceWithLocalTensor)
    assert {k: v.kind for k, v in outcomes.items()} == {
        "LocalSourceWithLocalTensor.test_in_local_tensor_mode": "pass"
    }, {k: v.message for k, v in outcomes.items()}
    assert cases.LOCAL_RUNS == [(os.getpid(), True)]

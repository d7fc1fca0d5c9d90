"""The skip/exit-code registry: PyTorch's table, clash-free registration, lookups."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from distlint.runtime import (
    TEST_SKIPS,
    SkipRegistry,
    TestSkip,
    register_skip,
    skip_for_code,
    skip_for_name,
)
from distlint.runtime.skips import REGISTRY, RegistrySkip, gpu_skip


def torch_test_skips() -> dict:
    """TEST_SKIPS as written in torch's source (read, not imported: that module takes seconds)."""
    spec = importlib.util.find_spec("torch")
    source = (
        Path(spec.submodule_search_locations[0]) / "testing" / "_internal" / "common_distributed.py"
    )
    tree = ast.parse(source.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "TEST_SKIPS" for t in node.targets
        ):
            table = {}
            for key, call in zip(node.value.keys, node.value.values):
                code, message = (ast.literal_eval(arg) for arg in call.args)
                table[ast.literal_eval(key)] = (code, message)
            return table
    raise AssertionError(f"TEST_SKIPS not found in {source}")


def test_codes_and_messages_match_the_installed_torch():
    theirs = torch_test_skips()
    assert len(theirs) >= 18
    for name, (code, message) in theirs.items():
        assert tuple(TEST_SKIPS[name]) == (code, message), name


def test_the_codes_the_issue_names():
    expected = {
        "backend_unavailable": 72, "small_worldsize": 73, "no_cuda": 74, "multi-gpu-1": 75, "nccl": 76,
        "multi-gpu-2": 77, "skipIfRocm": 78, "no_peer_access": 79, "multi-gpu-8": 85, "generic": 86,
        "odd_worldsize": 87, "importerror": 88, "no_accelerator": 89,
    }  # fmt: skip
    assert {name: TEST_SKIPS[name].exit_code for name in expected} == expected


def test_lookup_by_name_and_by_code():
    assert skip_for_name("multi-gpu-2") == TestSkip(77, "Need at least 2 CUDA devices")
    assert skip_for_code(77) == TestSkip(77, "Need at least 2 CUDA devices")
    assert REGISTRY.name_for_code(76) == "nccl"
    assert skip_for_code(0) is None and skip_for_code(1) is None and skip_for_code(None) is None
    assert skip_for_code(True) is None  # bool is not an exit code
    with pytest.raises(KeyError, match="no skip named 'multi-gpu-99'"):
        skip_for_name("multi-gpu-99")


def test_register_rejects_clashes_and_accepts_an_identical_repeat():
    registry = SkipRegistry()
    added = registry.register("needs_transformers", 90, "transformers is not installed")
    assert registry.by_code(90) == added and registry.by_name("needs_transformers") == added
    assert registry.register("needs_transformers", 90, "transformers is not installed") == added
    with pytest.raises(ValueError, match="already registered"):
        registry.register("needs_transformers", 91, "another meaning")
    with pytest.raises(ValueError, match="already means skip 'nccl'"):
        registry.register("my_nccl", 76, "mine")
    for bad_code in (0, 1, 10, 128, -3, "75", 75.0):
        with pytest.raises(ValueError):
            registry.register(f"bad_{bad_code}", bad_code, "bad")
    with pytest.raises(ValueError):
        registry.register("", 92, "no name")
    with pytest.raises(ValueError):
        registry.register("no_message", 93, "")


def test_module_level_register_skip_shows_in_test_skips():
    entry = register_skip("distlint_test_only_entry", 120, "registered by the distlint test suite")
    assert TEST_SKIPS["distlint_test_only_entry"] == entry  # TEST_SKIPS is a live view
    assert skip_for_code(120) == entry
    with pytest.raises(TypeError):
        TEST_SKIPS["x"] = entry  # read-only


def test_gpu_skip_names_the_count():
    assert gpu_skip(3) == TEST_SKIPS["multi-gpu-3"]
    assert gpu_skip(0) == TEST_SKIPS["no_cuda"]
    assert gpu_skip(16) == TestSkip(85, "Need at least 16 CUDA devices")


def test_registry_skip_is_a_skiptest_with_the_registry_message():
    import unittest

    skip = RegistrySkip(TEST_SKIPS["odd_worldsize"])
    assert isinstance(skip, unittest.SkipTest)
    assert str(skip) == "Skipped due to odd world size." and skip.exit_code == 87

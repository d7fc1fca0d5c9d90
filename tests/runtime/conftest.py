"""Fixtures for the runtime tests (helpers live in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

# The runtime is an optional extra (torch); without it there is nothing here to run.
try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - exercised only in a torch-less environment
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture
def case_log(tmp_path, monkeypatch) -> Path:
    """A fresh $DISTLINT_CASE_LOG for the case tests; no timeout override leaks in."""
    path = tmp_path / "case.log"
    monkeypatch.setenv("DISTLINT_CASE_LOG", str(path))
    monkeypatch.delenv("DISTLINT_TEST_TIMEOUT", raising=False)
    return path



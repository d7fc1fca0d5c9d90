"""Fixtures for the runtime tests (helpers live in support.py)."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import pytest

from .support import RunScope

# Run as its own pytest session by test_on_ranks.py (its conftest is that session's).
collect_ignore = ["cases/on_ranks"]

# The runtime is an optional extra (torch); without it there is nothing here to run.
try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover - exercised only in a torch-less environment
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session", autouse=True)
def short_multiprocessing_tempdir() -> None:
    """multiprocessing's folder for this process (the fork server's socket goes there) is made
    once and kept for the session: make it now, under the default temporary root, before a
    test points tempfile at its own tmp_path, which under xdist is too long for a socket path."""
    from multiprocessing import util

    util.get_temp_dir()


@pytest.fixture
def case_log(tmp_path, monkeypatch) -> Path:
    """A fresh $DISTLINT_CASE_LOG for the case tests; no timeout override leaks in."""
    path = tmp_path / "case.log"
    monkeypatch.setenv("DISTLINT_CASE_LOG", str(path))
    monkeypatch.delenv("DISTLINT_TEST_TIMEOUT", raising=False)
    return path


@pytest.fixture
def run_scope(tmp_path, monkeypatch) -> RunScope:
    """In-process runs whose every process and rendezvous folder can be found afterwards.

    The pools and fork server of earlier tests are closed first, so that what this
    test starts (fork server, workers) inherits its token; multiprocessing's
    resource tracker, one for the whole session, is started before the token is set.
    """
    from multiprocessing import resource_tracker

    from distlint.runtime import pool_registry

    pool_registry.shutdown_all()
    resource_tracker.ensure_running()
    token = uuid.uuid4().hex
    monkeypatch.setenv("DISTLINT_TEST_TOKEN", token)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(
        tempfile, "tempdir", str(tmpdir)
    )  # where WorkerPool makes its rendezvous folder
    yield RunScope(token, tmpdir)
    pool_registry.shutdown_all()  # nothing carrying this token outlives the test

"""Choose how worker processes start: a fork server with torch preloaded, or spawn.

A fork server imports torch once and forks every worker from it, so a pool
starts in milliseconds instead of one torch import per rank.  It is only used
where it is known to be safe:

* Linux, Python < 3.14 (3.14 changed the fork server; torchrec saw hangs and
  went back to spawn);
* torch not built with CUDA >= 12.8 (known fork-server hangs);
* no CUDA context in this process (CUDA state must never be forked; the
  server is a fresh process, but a parent that already initialised CUDA is a
  sign the suite does GPU work in the dispatcher, so play safe).

``DISTLINT_START_METHOD=spawn|forkserver`` overrides the choice.  If the fork
server fails to start, the pool falls back to spawn for the rest of the run.
The server itself (what it preloads, when it starts and stops) is
:mod:`forkserver`'s.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext

from . import environment

START_METHOD_ENV = "DISTLINT_START_METHOD"
SPAWN = "spawn"
FORKSERVER = "forkserver"

_forkserver_failed = False


def python_version() -> tuple[int, int]:
    return sys.version_info[:2]


def forkserver_unsafe_reason() -> str | None:
    if sys.platform != "linux":
        return f"platform {sys.platform}"
    if python_version() >= (3, 14):
        return "Python >= 3.14"
    cuda = environment.cuda_build_version()
    if cuda is not None and cuda >= (12, 8):
        return f"torch built with CUDA {'.'.join(map(str, cuda))} (>= 12.8)"
    if environment.cuda_initialized_here():
        return "CUDA is already initialised in this process"
    return None


def choose_start_method() -> str:
    override = os.environ.get(START_METHOD_ENV, "").strip().lower()
    if override:
        if override not in (SPAWN, FORKSERVER):
            raise ValueError(f"{START_METHOD_ENV}={override!r}: expected 'spawn' or 'forkserver'")
        return override
    if _forkserver_failed or forkserver_unsafe_reason() is not None:
        return SPAWN
    return FORKSERVER


def record_forkserver_failure() -> None:
    """After a failed fork-server start, every later pool uses spawn."""
    global _forkserver_failed
    _forkserver_failed = True


def forkserver_failed() -> bool:
    """Whether the fork server failed earlier in this run (even where DISTLINT_START_METHOD forces it)."""
    return _forkserver_failed


def context(
    method: str,
) -> SpawnContext | ForkServerContext | ForkContext:
    """The multiprocessing context for ``method``; for the fork server, call :func:`forkserver.prepare` first."""
    import multiprocessing

    # One of the start methods above, each a context with its Process class.
    return cast(
        "SpawnContext | ForkServerContext | ForkContext", multiprocessing.get_context(method)
    )

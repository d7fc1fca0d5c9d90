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
"""

from __future__ import annotations

import os
import signal
import sys
import threading

from . import environment

START_METHOD_ENV = "DISTLINT_START_METHOD"
SPAWN = "spawn"
FORKSERVER = "forkserver"

# Preloaded into the fork server: what every worker imports anyway.
FORKSERVER_PRELOAD = ["torch", "torch.distributed", "distlint.runtime.worker"]

# The fork server exits once no process holds its "alive" pipe, and every
# process it forked holds one: a worker that is still running would keep
# stop_forkserver() waiting forever.  After this long the server is killed.
FORKSERVER_STOP_TIMEOUT_S = 5.0

_forkserver_failed = False


def python_version() -> "tuple[int, int]":
    return sys.version_info[:2]


def forkserver_unsafe_reason() -> "str | None":
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


def context(method: str):
    import multiprocessing

    ctx = multiprocessing.get_context(method)
    if method == FORKSERVER:
        ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
    return ctx


def stop_forkserver() -> None:
    """Stop the fork server this process started, so no helper outlives the suite.  Bounded."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    stop = getattr(server, "_stop", None)  # private, present since Python 3.8
    pid = getattr(server, "_forkserver_pid", None)
    if stop is None or pid is None:
        return
    # _stop() closes the server's pipe and waits for it without a bound.
    timeout_s = FORKSERVER_STOP_TIMEOUT_S
    killer = threading.Timer(timeout_s, _kill_forkserver, args=(server, pid, timeout_s))
    killer.daemon = True
    killer.start()
    try:
        stop()
    except Exception:  # noqa: BLE001 - best effort at exit
        pass
    finally:
        killer.cancel()


def _kill_forkserver(server: object, pid: int, timeout_s: float) -> None:
    if getattr(server, "_forkserver_pid", None) != pid:
        return  # it stopped (and was reaped) just now: the pid may belong to someone else
    sys.stderr.write(
        f"distlint.runtime: the fork server did not stop within {timeout_s:g} s "
        "(a process it started is still running); killing it\n"
    )
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass

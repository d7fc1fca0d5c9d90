"""The dispatcher's pools: one per distinct :class:`PoolConfig`, shared by every class.

Classes that resolve to the same config (world size, backend, options, timeout,
environment) run on the same pool, whatever module they come from; a class
only resets per-class state on the ranks.  At most ``MAX_LIVE_POOLS`` pools
live at once (least recently used is closed first) so a suite mixing world
sizes does not fill a small machine with idle ranks.

Every pool is closed when the process exits normally, on SIGTERM (the handler
closes pools, then lets SIGTERM end the process as it would have), and, after
Ctrl-C, by the KeyboardInterrupt unwinding through the dispatcher.
"""

from __future__ import annotations

import atexit
import collections
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any, Callable

from . import forkserver
from . import start_method as start_methods
from .protocol import ClassRef
from .resolve import PoolConfig
from .worker_pool import PoolStartError, PoolState, WorkerPool

MAX_LIVE_POOLS = 2

_pools: collections.OrderedDict[PoolConfig, WorkerPool] = collections.OrderedDict()
_lock = threading.RLock()
_hooks_installed = False
_previous_sigterm: Callable[[int, FrameType | None], Any] | None = None
_started = 0  # pools started by this process, for tests and benchmarks


def _note(message: str) -> None:
    sys.stderr.write(f"distlint.runtime: {message}\n")
    sys.stderr.flush()


#: Starting a pool (a fork server importing torch, then the ranks and their PG) may take a
#: minute on a loaded CI machine, whatever a test's own timeout.
MIN_STARTUP_TIMEOUT_S = 60.0


def pool_for_test(
    config: PoolConfig, test_id: str, test_timeout_s: float, preload: Sequence[str] = ()
) -> WorkerPool | str:
    """The pool that runs ``test_id`` (a class test or an ``@on_ranks`` function), or why none
    could start, in the words both report as the test's failure."""
    try:
        return pool_for(config, max(MIN_STARTUP_TIMEOUT_S, test_timeout_s), preload)
    except PoolStartError as error:
        return f"worker pool for {test_id} could not start:\n{error}"


def pool_for(
    config: PoolConfig, startup_timeout_s: float, preload: Sequence[str] = ()
) -> WorkerPool:
    """A started pool for ``config``: the live one, or a new one replacing a broken one
    (``preload``: modules a fork server that starts now imports before forking the ranks)."""
    global _started
    with _lock:
        install_exit_hooks()
        pool = _pools.get(config)
        if pool is not None and pool.usable():
            _pools.move_to_end(config)
            return pool
        if pool is not None:
            if pool.state is not PoolState.CLOSED:
                _note(
                    f"{pool.describe()} lost a rank after {pool.last_test_id}; starting a new pool"
                )
            pool.close(graceful=False)
            del _pools[config]
        while len(_pools) >= MAX_LIVE_POOLS:
            _, oldest = _pools.popitem(last=False)
            oldest.close(graceful=True)
        _started += 1
        return _start_pool(config, startup_timeout_s, preload)


def _start_pool(
    config: PoolConfig, startup_timeout_s: float, preload: Sequence[str] = ()
) -> WorkerPool:
    method = start_methods.choose_start_method()
    try:
        return _start_registered(config, method, startup_timeout_s, preload)
    except PoolStartError as error:
        overridden = bool(os.environ.get(start_methods.START_METHOD_ENV))
        if method != start_methods.FORKSERVER or not error.retry_with_spawn or overridden:
            raise
        _note(f"the fork server failed ({str(error).splitlines()[0]}); using spawn from now on")
        start_methods.record_forkserver_failure()
        return _start_registered(config, start_methods.SPAWN, startup_timeout_s, preload)


def _start_registered(
    config: PoolConfig, method: str, startup_timeout_s: float, preload: Sequence[str]
) -> WorkerPool:
    # Registered before it starts, so Ctrl-C or SIGTERM during start-up still
    # finds (and closes) its processes and rendezvous directory.
    pool = _pools[config] = WorkerPool(config, method)
    try:
        pool.start(startup_timeout_s, preload)
    except BaseException:
        pool.close(graceful=False)
        _pools.pop(config, None)
        raise
    return pool


def pools_serving(cls_ref: ClassRef) -> list[WorkerPool]:
    with _lock:
        return [pool for pool in _pools.values() if cls_ref in pool.entered]


def live_pools() -> list[WorkerPool]:
    with _lock:
        return [pool for pool in _pools.values() if pool.state in (PoolState.READY, PoolState.NEW)]


def shutdown_all(graceful: bool = True) -> None:
    """Close every pool (bounded) and stop the fork server, ending any fast-start rank still running."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        try:
            pool.close(graceful=graceful)
        except Exception as exc:  # noqa: BLE001 - keep closing the others
            _note(f"error closing {pool.describe()}: {exc!r}")
    forkserver.stop()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    shutdown_all(graceful=False)
    # Now die of SIGTERM as the process would have without us.
    signal.signal(
        signal.SIGTERM, _previous_sigterm if callable(_previous_sigterm) else signal.SIG_DFL
    )
    if callable(_previous_sigterm):
        _previous_sigterm(signum, frame)
    else:
        os.kill(os.getpid(), signal.SIGTERM)


def install_exit_hooks() -> None:
    """At exit and on SIGTERM: close every pool and stop the fork server (and what it still runs).  Once."""
    global _hooks_installed, _previous_sigterm
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(shutdown_all)
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)
        # Only chain onto a Python handler or the default; never replace SIG_IGN.
        if previous in (signal.SIG_DFL, None) or callable(previous):
            _previous_sigterm = previous if callable(previous) else None
            signal.signal(signal.SIGTERM, _on_sigterm)


def stats() -> dict[str, int]:
    """Counters for tests and benchmarks."""
    with _lock:
        return {
            "live_pools": len(live_pools()),
            "pools_started": _started,
            "stale_messages": sum(p.stale_messages for p in _pools.values()),
        }

"""Fast start: torch's per-test ``MultiProcessTestCase`` ranks, forked from the preloaded fork server.

torch's ``MultiProcessTestCase`` (and ``DTensorTestBase``, ``FSDPTest``,
``DistributedTestBase``, ... and suites' own subclasses) starts fresh rank
processes for every test with ``spawn``: each re-imports torch and torch's test
helpers, seconds per test.  :func:`install` replaces the one method that picks
the start method, ``MultiProcessTestCase._spawn_processes``, with one that hands
torch's own ``_start_processes`` a process class forked from the fork server
(:mod:`forkserver`), which has imported all of that once.  Everything else is
torch's: ``_run``, ``_join_processes``, return-code checks,
``skip_return_code_checks``, timeouts, skip exit codes.  Every test still gets
fresh processes (a fork of a server that never runs a test) and a fresh PG.

What a spawned rank would have that a forked one must be given:

* the dispatcher's ``os.environ`` *as it is when the test starts* (a test's
  ``setUp`` often sets variables just before spawning), applied before the
  test module is unpickled, and ``TORCH_DISTRIBUTED_DEBUG`` re-read;
* the dispatcher's current stdout/stderr file descriptors (pytest captures
  them per test);
* the start method torch set (``spawn``) as the rank's default.

A forked rank ends as every process multiprocessing forks does, with
``os._exit``: exit handlers (``atexit``) do not run in it.

A test falls back to spawn, with a one-line note per reason, when: fast start is
off (``DISTLINT_FAST_START=0``: silently), the fork server is unsafe here (see
:mod:`start_method`) or failed, or a variable torch reads only at import
(``TORCH_LOGS``, ``TORCHDYNAMO_*``, ...) differs from what the server imported torch with.
A torch whose ``MultiProcessTestCase`` lacks the methods replaced here is left
alone (spawn), with a note.  A rank of a test whose dispatcher dies exits too.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import threading
import time
from collections.abc import Iterable
from multiprocessing import context as mp_context
from multiprocessing import popen_forkserver  # Unix only, as the fork server is
from typing import TYPE_CHECKING, Any, Callable, cast

if TYPE_CHECKING:
    from torch.testing._internal.common_distributed import MultiProcessTestCase

from . import early_start, forkserver, start_method
from .peer_wait import hold_pg_until_peers_are_done, wait_for_peers_before_leaving

COMMON_DISTRIBUTED = early_start.COMMON_DISTRIBUTED
#: A file that imports this (or a module of it) opted in to fast start under pytest.
RUNTIME = "distlint.runtime"
#: What torch's own test modules import before any rank runs: preloaded when fast start is on.
SUPPORT_MODULES = ("torch.testing._internal.common_utils", COMMON_DISTRIBUTED)
#: The exit code of a fast-start rank whose dispatcher disappeared (as a pool worker's).
EXIT_DISPATCHER_GONE = 70

_original: Callable[..., Any] | None = None
#: torch's ``MultiProcContinuousTest._spawn_processes`` (a classmethod) while fast start serves it.
_original_continuous: classmethod | None = None
#: The per-test classes fast start is for; None: every one (asked for by flag, ini or run_tests).
_only: frozenset | None = None
_noted: set[str] = set()
_lock = threading.Lock()


def _note_once(key: str, message: str) -> None:
    with _lock:
        if key in _noted:
            return
        _noted.add(key)
    sys.stderr.write(f"distlint.runtime: fast start: {message}\n")
    sys.stderr.flush()


# ---- turning it on and off ----------------------------------------------------------


def per_test_base() -> type[MultiProcessTestCase] | None:
    """torch's ``MultiProcessTestCase``, if torch's test helpers are imported (never imports them)."""
    return cast("type[MultiProcessTestCase] | None", early_start.per_test_base())


def continuous_base() -> type | None:
    """torch's ``MultiProcContinuousTest``, if torch's test helpers are imported (never imports them)."""
    return cast("type | None", early_start.continuous_base())


def continuous_shape_problem(base: type) -> str | None:
    """Why ``base`` is not the MultiProcContinuousTest whose rank start this module can serve."""
    spawn = inspect.getattr_static(base, "_spawn_processes", None)
    if not isinstance(spawn, classmethod):
        return "MultiProcContinuousTest._spawn_processes is not a classmethod"
    try:
        parameters = list(inspect.signature(spawn.__func__).parameters)
    except (TypeError, ValueError):
        return "MultiProcContinuousTest._spawn_processes has no readable signature"
    module = sys.modules.get(base.__module__)
    torch_mp = getattr(getattr(module, "torch", None), "multiprocessing", None)
    if len(parameters) != 2 or not isinstance(getattr(torch_mp, "Process", None), type):
        return "MultiProcContinuousTest._spawn_processes does not take (cls, world_size)"
    return None


def shape_problem(base: type) -> str | None:
    """Why ``base`` is not the MultiProcessTestCase this module knows how to change, or None."""
    spawn = inspect.getattr_static(base, "_spawn_processes", None)
    start = inspect.getattr_static(base, "_start_processes", None)
    if not callable(spawn) or not callable(start):
        return "MultiProcessTestCase has no _spawn_processes/_start_processes"
    try:
        parameters = list(inspect.signature(start).parameters)
    except (TypeError, ValueError):
        return "MultiProcessTestCase._start_processes has no readable signature"
    if len(parameters) != 2:
        return f"MultiProcessTestCase._start_processes{inspect.signature(start)} does not take (self, proc)"
    return None


def install(only: Iterable[type] | None = None) -> bool:
    """Make ``MultiProcessTestCase`` start its ranks from the fork server.  True if it now does.

    ``only``: the classes it does so for (the others spawn, as torch does); None: all of them.
    A no-op (False) when fast start is off, when torch's test helpers are not
    imported (then no per-test class exists), or for an unknown shape (a note).
    """
    global _original, _only
    if early_start.fast_spawn_disabled():
        return False
    base = per_test_base()
    if base is None:
        return False
    if _original is not None:
        _only = None if only is None or _only is None else _only | frozenset(only)
        return True
    problem = shape_problem(base)
    if problem is not None:
        _note_once("shape", f"{problem} (unknown torch internals); per-test classes use spawn")
        return False
    from . import pool_registry

    pool_registry.install_exit_hooks()  # SIGTERM stops the fork server and its ranks too
    _only = None if only is None else frozenset(only)
    _original = base._spawn_processes
    setattr(base, "_spawn_processes", _spawn_processes)
    _install_continuous()
    return True


def _install_continuous() -> None:
    """Serve the ranks of torch's continuous classes too (``--runtime torch`` migrations): their
    start costs every class ``world_size`` fresh torch imports under spawn."""
    global _original_continuous
    base = continuous_base()
    if base is None:
        return
    problem = continuous_shape_problem(base)
    if problem is not None:
        _note_once("continuous-shape", f"{problem} (unknown torch internals); its ranks use spawn")
        return
    _original_continuous = inspect.getattr_static(base, "_spawn_processes")
    setattr(base, "_spawn_processes", classmethod(_spawn_continuous_processes))


def uninstall() -> None:
    """Put torch's own ``_spawn_processes`` back."""
    global _original, _only, _original_continuous
    base = per_test_base()
    if _original is not None and base is not None:
        setattr(base, "_spawn_processes", _original)
    continuous = continuous_base()
    if _original_continuous is not None and continuous is not None:
        setattr(continuous, "_spawn_processes", _original_continuous)
    _original, _only, _original_continuous = None, None, None


def installed() -> bool:
    return _original is not None


def spawn_reason() -> str | None:
    """Why the next per-test ranks must use spawn, or None to fork them from the server."""
    method = start_method.choose_start_method()
    if method != start_method.FORKSERVER:
        reason = start_method.forkserver_unsafe_reason()
        if os.environ.get(start_method.START_METHOD_ENV, "").strip().lower() == start_method.SPAWN:
            return f"{start_method.START_METHOD_ENV}=spawn"
        return reason or "the fork server failed earlier in this run"
    return None


# ---- the replacement ---------------------------------------------------------------


def _spawn_processes(self: Any) -> None:
    """``MultiProcessTestCase._spawn_processes`` with the fork server as the start method."""
    if early_start.fast_spawn_disabled() or (_only is not None and type(self) not in _only):
        return _original(self)  # type: ignore[misc]
    reason = spawn_reason()
    if reason is not None:
        _note_once(reason, f"{reason}; {self.id()} and later per-test classes use spawn")
        return _original(self)  # type: ignore[misc]
    import torch.multiprocessing

    # What torch's own version does first: the rank's default start method stays spawn.
    try:
        torch.multiprocessing.set_start_method("spawn")
    except RuntimeError:
        pass
    self._start_processes(FastStartProcess)


#: Held while torch's continuous ``_spawn_processes`` runs with the fork server's process class.
_continuous_lock = threading.Lock()


def _spawn_continuous_processes(cls: Any, world_size: int) -> None:
    """``MultiProcContinuousTest._spawn_processes`` with its ranks forked from the fork server:
    torch's own loop, queues and rendezvous file; only the process class differs."""
    assert _original_continuous is not None  # installed with it
    original = _original_continuous.__func__
    if early_start.fast_spawn_disabled() or (_only is not None and cls not in _only):
        return original(cls, world_size)
    reason = spawn_reason()
    if reason is not None:
        _note_once(reason, f"{reason}; {cls.__name__} and later classes use spawn")
        return original(cls, world_size)
    import torch.multiprocessing

    # torch's loop builds torch.multiprocessing.Process(...): that name is swapped for the call.
    with _continuous_lock:
        spawned = torch.multiprocessing.Process
        torch.multiprocessing.Process = FastStartProcess  # type: ignore[misc, assignment]
        try:
            original(cls, world_size)
        finally:
            torch.multiprocessing.Process = spawned  # type: ignore[misc]


class FastStartProcess(mp_context.ForkServerProcess):
    """A rank process forked from the fork server, carrying what a spawned one would inherit."""

    # Not 'forkserver': the child takes its default start method from the
    # dispatcher (torch set 'spawn'), exactly as a spawned rank does.
    _start_method = None  # type: ignore[assignment]  # multiprocessing's own value; typeshed says str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # First in __dict__, so unpickled (and applied) before the target's module is imported.
        self._distlint_handoff = _Handoff()
        super().__init__(*args, **kwargs)

    def start(self) -> None:
        self._distlint_handoff.environ = dict(os.environ)
        super().start()

    @staticmethod
    def _Popen(process_obj: Any) -> Any:  # noqa: N802 - multiprocessing's name
        return _popen(process_obj)

    def run(self) -> None:
        # Like every process multiprocessing forks, the rank then leaves with os._exit:
        # exit handlers do not run (torch's would spend 0.1-0.5 s un-registering its operator
        # libraries in a process about to end).
        _exit_with_dispatcher(self._parent_pid)  # type: ignore[attr-defined]  # not in typeshed
        test_class = getattr(self._target, "__self__", None)  # type: ignore[attr-defined]
        base = per_test_base()
        if isinstance(test_class, type) and base is not None and issubclass(test_class, base):
            hold_pg_until_peers_are_done(test_class)
        try:
            super().run()
        finally:
            wait_for_peers_before_leaving()


def _popen(process_obj: Any) -> Any:
    """Fork from the server; if it cannot (died twice, hung, failed), spawn this and later ranks."""
    from multiprocessing import popen_spawn_posix

    if start_method.choose_start_method() == start_method.FORKSERVER:
        try:
            forkserver.prepare()
            popen = forkserver.bounded_start(lambda: _fork_unless_env_changed(process_obj))
        except forkserver.ForkServerFailed as error:
            start_method.record_forkserver_failure()
            _note_once("failed", f"{error}; ranks use spawn from now on")
        else:
            if popen is not None:
                return popen
    return popen_spawn_posix.Popen(process_obj)


def _fork_unless_env_changed(process_obj: Any) -> Any | None:
    """Fork the rank from the server, or None when torch would see another import-time environment there."""
    changed = forkserver.import_time_env_changed()
    if changed:
        names = ", ".join(changed)
        _note_once(
            f"env:{names}",
            f"{names} differ(s) from what the fork server imported torch with (torch reads it at import); "
            "ranks that start while it does use spawn",
        )
        return None
    return _ForkServerPopen(process_obj)


class _ForkServerPopen(popen_forkserver.Popen):
    """multiprocessing's fork-server Popen, except when the server dies under a running rank.

    multiprocessing then reports exit code 255 at once, for a rank that may
    still be running: it would never be terminated (leaked) and the test would
    fail early.  Here a rank that is still alive stays "running".
    """

    def poll(self, flag: int = os.WNOHANG) -> int | None:
        if self.returncode is None:
            from multiprocessing import forkserver as mp_forkserver
            from multiprocessing.connection import wait

            if not wait([self.sentinel], 0 if flag == os.WNOHANG else None):
                return None
            try:
                self.returncode = mp_forkserver.read_signed(self.sentinel)
            except (OSError, EOFError):
                if _alive(self.pid):
                    _note_once(
                        "died-under-rank",
                        "the fork server died while ranks ran; their exit codes are unknown",
                    )
                    return None
                self.returncode = 255
        return self.returncode


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


# ---- the child's side --------------------------------------------------------------


class _Handoff:
    """Pickled with the process; unpickling it in the rank applies the dispatcher's state there."""

    def __init__(self) -> None:
        self.environ: dict[str, str] = {}

    def __reduce__(self) -> tuple[Callable[..., _Handoff], tuple[object, ...]]:
        from multiprocessing import reduction

        # The dispatcher's stdout/stderr now (pytest swaps them per test), if open.
        fds: list[object] = []
        for fd in (1, 2):
            try:
                os.fstat(fd)
            except OSError:
                fds.append(None)
            else:
                fds.append(reduction.DupFd(fd))
        return _adopt, (self.environ, fds[0], fds[1])


def _adopt(environ: dict[str, str], stdout: Any, stderr: Any) -> _Handoff:
    """In the rank, while it is unpickled (before the test's module is imported): the dispatcher's
    environment and output."""
    if environ:
        os.environ.clear()
        os.environ.update(environ)
    for handle, target in ((stdout, 1), (stderr, 2)):
        if handle is None:
            continue
        fd = handle.detach()
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)
    dist = sys.modules.get("torch.distributed")
    set_debug_level = getattr(dist, "set_debug_level_from_env", None)
    if set_debug_level is not None:
        set_debug_level()  # torch.distributed reads TORCH_DISTRIBUTED_DEBUG when imported
    return _Handoff()


#: How often a rank whose data pipe closed checks whether the dispatcher is gone (no pidfd).
DISPATCHER_POLL_S = 0.2


def _exit_with_dispatcher(dispatcher_pid: int) -> None:
    """End this rank if the dispatcher dies (SIGKILL included), so no rank outlives the run.

    The dispatcher is not the rank's parent (the fork server is), so its end is watched
    through a pidfd, readable once it has exited. Where there is none (Linux < 5.3), the
    data pipe closing wakes the watch, which then polls the pid: the pipe closes while the
    dying dispatcher is still exiting (its files are closed before it turns zombie), and
    also when a live dispatcher merely drops its Process object. Deciding on one look at
    that moment let a rank outlive a SIGKILLed dispatcher now and then.
    """
    import multiprocessing

    try:
        pidfd: int | None = os.pidfd_open(dispatcher_pid)
    except ProcessLookupError:
        os._exit(EXIT_DISPATCHER_GONE)
    except (AttributeError, OSError):  # no pidfd_open here
        pidfd = None
    sentinel = getattr(multiprocessing.parent_process(), "sentinel", None)
    if pidfd is None and sentinel is None:
        return
    threading.Thread(
        target=watch_dispatcher,
        args=(dispatcher_pid, pidfd, sentinel, _leave_now),
        name="distlint-watch-dispatcher",
        daemon=True,
    ).start()


def watch_dispatcher(
    dispatcher_pid: int, pidfd: int | None, sentinel: int | None, on_gone: Callable[[], None]
) -> None:
    """Block until the dispatcher is gone, then call ``on_gone`` (see :func:`_exit_with_dispatcher`)."""
    import select
    from multiprocessing.connection import wait

    if pidfd is not None:
        select.select([pidfd], [], [])
    else:
        assert sentinel is not None  # the caller passes a pidfd or a sentinel
        wait([sentinel])
        while _alive(dispatcher_pid):
            time.sleep(DISPATCHER_POLL_S)
    on_gone()


def _leave_now() -> None:
    os._exit(EXIT_DISPATCHER_GONE)


# ---- entry points -----------------------------------------------------------------


@functools.cache
def uses_distlint_runtime(path: str) -> bool:
    """The file imports ``distlint.runtime`` anywhere (read with ast, nothing imported): it
    opted in.

    Every file ``distlint migrate`` writes for the distlint runtime does; under pytest its
    per-test classes get fast start without a flag.
    """
    return any(
        name == RUNTIME or name.startswith(RUNTIME + ".")
        for name in early_start.imported_modules(path, top_level=False)
    )


def enable_for_script() -> bool:
    """``run_tests()`` under ``python test_x.py``: fast start on; the fork server starts now if it has not."""
    if not install():
        return False
    try:
        forkserver.start(hints=SUPPORT_MODULES, defer=True)
    except Exception:  # noqa: BLE001 - the first rank tries again, or falls back to spawn with a note
        pass
    return True

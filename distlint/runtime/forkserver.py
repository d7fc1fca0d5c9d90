"""The one fork server of a dispatcher: started early, told late what to preload, never waited on unbounded.

Worker pools and fast start (:mod:`fast_start`) fork their processes from
multiprocessing's fork server, one per dispatcher process.  This module owns it:

* **Start early.**  :func:`start` launches the server at once and returns; it
  imports torch (and any hints) while the dispatcher is still importing the
  test file or collecting tests, on the other core.
* **Preload what the ranks will import.**  What that is (the test modules,
  ``__main__``, ``sys.path`` as the dispatcher ends up with it) is only known
  later, so a server started early waits for a *manifest*: :func:`publish`
  writes it just before the first process is started from the server.  Every
  process start goes through :func:`prepare`, which publishes first: the server
  never waits for a manifest nobody will write.
* **Bounded.**  :func:`prepare` waits for the preload at most
  :data:`START_TIMEOUT_S` (the server reports when it is done) and
  :func:`bounded_start` gives a fork as long: a server that takes longer is
  killed, the start fails and the caller uses spawn.
* **Restarted once.**  A server that died is restarted by :func:`prepare`; one
  that dies again is given up (``start_method.record_forkserver_failure``).
* **Stopped.**  :func:`stop` ends it (bounded) and removes its folder; nothing
  of it outlives the dispatcher.  Whoever starts it installs the exit hooks
  first (``pool_registry.install_exit_hooks``: at exit and on SIGTERM the pools
  close, then the server stops).

The server side is :mod:`forkserver_preload`; the two share :data:`SPEC_ENV`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Callable, TypeVar

from . import start_method

T = TypeVar("T")

#: The fork server's only preload entry; it imports the rest (see forkserver_preload).
PRELOAD_MODULE = "distlint.runtime.forkserver_preload"
#: Environment variable through which the server reads its preload spec (JSON), set only while it starts.
SPEC_ENV = "DISTLINT_FORKSERVER_SPEC"
#: What every rank imports: preloaded by every server, before any hint or manifest.
BASE_PRELOAD = (
    "torch",
    "torch.distributed",
    "distlint.runtime.worker",
    "distlint.runtime.fast_start",
)
#: A process start (the server's preload included) that takes longer is a hang: the server is killed.
START_TIMEOUT_S = 180.0
#: How often a server that died is started again before the run uses spawn.
MAX_RESTARTS = 1
#: Stopping waits this long for the server (which waits for every process it forked), then kills it.
STOP_TIMEOUT_S = 5.0
#: Prefix of the folder holding a server's manifest and report: the leak checks look for it.
DIR_PREFIX = "distlint-forkserver-"
#: The server's report, written once it has preloaded: the import-time variables as it has them.
REPORT_NAME = "preloaded.json"
#: Variables torch (or its test helpers) reads only while being imported: a server that imported
#: torch under other values would give its ranks a different torch than a spawned rank gets.
IMPORT_TIME_ENV = ("TORCH_LOGS", "TORCH_LOGS_OUT", "TORCH_LOGS_FORMAT", "TORCH_CPP_LOG_LEVEL")
IMPORT_TIME_ENV_PREFIXES = ("TORCHDYNAMO_", "TORCHINDUCTOR_", "TORCH_COMPILE_", "PYTORCH_TEST")


class ForkServerFailed(RuntimeError):
    """The fork server could not start a process (it died, hung, or was given up)."""


class _Server:
    """What this process knows about the server it started (one at a time)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.folder: str | None = None
        self.manifest: str | None = None  # path the server waits for; None once published
        self.imported_under: dict[str, str] | None = (
            None  # the server's report (see import_time_env_changed)
        )
        self.restarts = 0


_server = _Server()
_lock = threading.RLock()


# Any: multiprocessing's ForkServer, used for its private state (_forkserver_pid and the like),
# which typeshed leaves out.
def _mp_server() -> Any:
    from multiprocessing import forkserver

    return forkserver._forkserver


def running_pid() -> int | None:
    """The pid of the fork server this process started, if one is running."""
    return getattr(_mp_server(), "_forkserver_pid", None)


def _note(message: str) -> None:
    sys.stderr.write(f"distlint.runtime: {message}\n")
    sys.stderr.flush()


# ---- what the server preloads ---------------------------------------------------


@contextlib.contextmanager
def default_start_method_kept() -> Iterator[None]:
    """Leave multiprocessing's default start method as unset as it was.

    ``spawn.get_preparation_data()`` (which the fork server's ``ensure_running()`` calls too) asks
    for the default start method, and asking fixes it for the whole process (``fork`` on Linux).
    torch's ``set_start_method("spawn")`` then fails quietly, and torch's own continuous classes
    fork their ranks from a process whose OpenMP threads are running: ranks that hang in their
    first matmul."""
    import multiprocessing

    unset = multiprocessing.get_start_method(allow_none=True) is None
    try:
        yield
    finally:
        if unset and multiprocessing.get_start_method(allow_none=True) is not None:
            multiprocessing.set_start_method(None, force=True)  # back to "not chosen yet"


def main_entry() -> dict:
    """How a child re-creates ``__main__`` (what multiprocessing's spawn does): by path, by name, or not at all."""
    from multiprocessing import spawn

    with default_start_method_kept():
        data = spawn.get_preparation_data("distlint")
    return {key: data[key] for key in ("init_main_from_path", "init_main_from_name") if key in data}


def _manifest(modules: Iterable[str]) -> dict:
    return {
        "sys_path": list(sys.path),
        "modules": list(dict.fromkeys(modules)),
        "main": main_entry(),
    }


def _write_atomically(path: str, data: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


# ---- life cycle -------------------------------------------------------------------


def start(hints: Sequence[str] = (), defer: bool = True, modules: Iterable[str] = ()) -> bool:
    """Start the fork server now, unless one runs or the fork server is not to be used here.

    ``hints``: modules to import right away, besides torch.  ``defer``: the
    server then waits for :func:`publish` before it forks anyone; otherwise
    ``modules`` and ``__main__`` are preloaded at once.  True if a server runs.
    """
    with _lock:
        if running_pid() is not None:
            return True
        if start_method.choose_start_method() != start_method.FORKSERVER:
            return False
        folder = tempfile.mkdtemp(prefix=DIR_PREFIX)
        spec: dict[str, Any] = {  # a JSON document
            "argv": list(sys.argv),
            "sys_path": list(sys.path),
            "modules": [*BASE_PRELOAD, *hints],
            "report": os.path.join(folder, REPORT_NAME),
            "import_time_env": [list(IMPORT_TIME_ENV), list(IMPORT_TIME_ENV_PREFIXES)],
        }
        if defer:
            spec["manifest"] = os.path.join(folder, "manifest.json")
        else:
            spec["then"] = _manifest(modules)
        server = _mp_server()
        server.set_forkserver_preload([PRELOAD_MODULE])
        # The server inherits os.environ as it is now; the spec is for it alone.
        previous = os.environ.get(SPEC_ENV)
        os.environ[SPEC_ENV] = json.dumps(spec)
        try:
            with default_start_method_kept():
                server.ensure_running()
        except Exception as exc:  # noqa: BLE001 - e.g. no /dev/shm, fd limits: the caller uses spawn
            shutil.rmtree(folder, ignore_errors=True)
            # A TMPDIR too long for a Unix socket's path (AF_UNIX allows ~107 bytes, and Python
            # 3.11 puts the server's socket there) ends here too: a long CI workspace or
            # pytest's tmp_path under xdist must cost the speed-up, never the run.
            raise ForkServerFailed(
                f"the fork server could not start: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            if previous is None:
                os.environ.pop(SPEC_ENV, None)
            else:
                os.environ[SPEC_ENV] = previous
        _server.pid, _server.folder, _server.manifest = (
            server._forkserver_pid,
            folder,
            spec.get("manifest"),
        )
        _server.imported_under = None
        return True


def _import_time(name: str) -> bool:
    return name in IMPORT_TIME_ENV or name.startswith(IMPORT_TIME_ENV_PREFIXES)


def import_time_env_changed() -> list[str]:
    """Variables read at torch's import that this process has and the running server had otherwise (sorted).

    Known once the server has preloaded (see :func:`prepare`).  A variable only the
    server has was set by an import both sides make (torch's test helpers set
    some), so it is not a difference.
    """
    with _lock:
        theirs = _server.imported_under if running_pid() == _server.pid else None
    if theirs is None:
        return []
    return sorted(
        name
        for name, value in os.environ.items()
        if _import_time(name) and theirs.get(name) != value
    )


def _await_preloaded(timeout_s: float) -> None:
    """Wait until the server has preloaded (it writes its report then); kill it if it takes longer."""
    import time

    if (
        _server.imported_under is not None
        or _server.folder is None
        or _server.pid is None
        or running_pid() != _server.pid
    ):
        return
    pid, path = _server.pid, os.path.join(_server.folder, REPORT_NAME)
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if _exited(pid):
            raise ForkServerFailed(f"the fork server (pid {pid}) exited while preloading")
        if time.monotonic() > deadline:
            _note(
                f"the fork server (pid {pid}) did not finish preloading within {timeout_s:g} s; killing it"
            )
            _kill_and_forget(pid)
            raise ForkServerFailed(f"the fork server (pid {pid}) hung while preloading")
        time.sleep(0.01)
    try:
        with open(path) as handle:
            _server.imported_under = json.load(handle)
    except (OSError, ValueError):
        _server.imported_under = {}


def publish(modules: Iterable[str] = ()) -> None:
    """Tell a server that is waiting what else to preload: ``modules``, ``__main__``, ``sys.path``.  Once."""
    with _lock:
        if _server.manifest is None or running_pid() != _server.pid:
            return
        path, _server.manifest = _server.manifest, None
        _write_atomically(path, _manifest(modules))


def prepare(modules: Iterable[str] = ()) -> None:
    """Before any process is started from the server: it runs (restarted if it died), knows
    what to preload, and has preloaded it (bounded by :data:`START_TIMEOUT_S`). ``modules``:
    what to preload besides torch when this starts the server or tells it what to preload (a
    pool's test module, so its ranks do not each import it); ignored once it has preloaded.

    Raises :class:`ForkServerFailed` when the server died more often than it may be
    restarted, hung while preloading (it is killed), or failed earlier in the run.
    """
    with _lock:
        if start_method.forkserver_failed():
            raise ForkServerFailed("the fork server failed earlier in this run")
        known = _server.pid
        if known is not None and running_pid() == known and _exited(known):
            # It died: reap it and start another under our control (multiprocessing
            # would restart it too, but without the preload spec).
            _server.restarts += 1
            _forget_dead_server()
            if _server.restarts > MAX_RESTARTS:
                start_method.record_forkserver_failure()
                raise ForkServerFailed(
                    f"the fork server (pid {known}) died {_server.restarts} times"
                )
            _note(f"the fork server (pid {known}) died; starting a new one")
        modules = [name for name in modules if name != "__main__"]  # __main__ is re-created by path
        if running_pid() is None:
            if not start(defer=False, modules=modules):
                raise ForkServerFailed("the fork server is not to be used here")
        else:
            publish(modules)
        _await_preloaded(START_TIMEOUT_S)


def _exited(pid: int) -> bool:
    """True if our child ``pid`` has ended (a zombie counts; it is not reaped here)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except OSError:
        return True


def _forget_dead_server() -> None:
    """Reap an ended server and reset multiprocessing's record of it, as its ensure_running() does."""
    server = _mp_server()
    pid = server._forkserver_pid
    if pid is not None:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    if server._forkserver_alive_fd is not None:
        try:
            os.close(server._forkserver_alive_fd)
        except OSError:
            pass
    address = server._forkserver_address
    if isinstance(address, str) and not address.startswith("\0"):
        try:
            os.unlink(address)  # a socket file (where abstract sockets are not supported)
        except OSError:
            pass
    server._forkserver_pid = server._forkserver_alive_fd = server._forkserver_address = None
    _discard_folder()


def _discard_folder() -> None:
    if _server.folder is not None:
        shutil.rmtree(_server.folder, ignore_errors=True)
    _server.pid = _server.folder = _server.manifest = None


def bounded_start(start_process: Callable[[], T], timeout_s: float | None = None) -> T:
    """Call ``start_process`` (which connects to the server); kill the server if it takes longer than the bound.

    After :func:`prepare` the server only has to fork; one that does not is wedged.
    A killed server makes the pending start fail; that is raised as :class:`ForkServerFailed`.
    """
    timeout_s = START_TIMEOUT_S if timeout_s is None else timeout_s
    pid = running_pid()
    done = threading.Event()
    guard = threading.Lock()

    def kill() -> None:
        with guard:
            if done.is_set() or pid is None or running_pid() != pid:
                return
            _note(
                f"the fork server (pid {pid}) did not start a process within {timeout_s:g} s; killing it"
            )
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    timer = threading.Timer(timeout_s, kill)
    timer.daemon = True
    timer.start()
    try:
        result = start_process()
    except (OSError, EOFError) as exc:
        raise ForkServerFailed(f"the fork server could not start a process: {exc!r}") from exc
    finally:
        with guard:
            done.set()
        timer.cancel()
    return result


def stop() -> None:
    """Stop the server this process started and remove its folder.  Bounded; a no-op when none runs."""
    with _lock:
        if (
            _server.pid is not None
            and _server.imported_under is None
            and running_pid() == _server.pid
        ):
            # Still preloading (or waiting for its manifest): nothing was forked from it
            # (prepare() waits for the preload first), so there is nothing to wait for.
            _kill_and_forget(_server.pid)
            return
        _end_forked_processes()
        server = _mp_server()
        pid = running_pid()
        stop_server = getattr(server, "_stop", None)  # private, present since Python 3.8
        if pid is not None and stop_server is not None:
            # _stop() closes the server's pipe and waits for it without a bound.
            killer = threading.Timer(STOP_TIMEOUT_S, _kill_stuck_server, args=(server, pid))
            killer.daemon = True
            killer.start()
            try:
                stop_server()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
            finally:
                killer.cancel()
        _discard_folder()


def _kill_and_forget(pid: int | None) -> None:
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (OSError, ChildProcessError):
            pass
    _forget_dead_server()


def _end_forked_processes(timeout_s: float = 2.0) -> None:
    """SIGTERM, then SIGKILL, every fast-start rank still running (the run is over; pools close their own)."""
    import multiprocessing
    import time

    forked = [p for p in multiprocessing.active_children() if hasattr(p, "_distlint_handoff")]
    for action in ("terminate", "kill"):
        alive = [p for p in forked if p.is_alive()]
        if not alive:
            return
        for process in alive:
            try:
                getattr(process, action)()
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + timeout_s
        for process in alive:
            process.join(max(0.0, deadline - time.monotonic()))


def _kill_stuck_server(server: object, pid: int) -> None:
    if getattr(server, "_forkserver_pid", None) != pid:
        return  # it stopped (and was reaped) just now: the pid may belong to someone else
    _note(
        f"the fork server did not stop within {STOP_TIMEOUT_S:g} s "
        "(a process it started is still running); killing it"
    )
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass

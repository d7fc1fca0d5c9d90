"""The loop a pool worker runs: become one rank, then run tests until told to stop.

A worker never decides an outcome; it reports what happened on its rank,
tagged with the message's seq, and the dispatcher decides.  Safety nets, all set
up before the process group exists:

* SIGINT is ignored: Ctrl-C reaches the whole process group, and the
  dispatcher, not each rank, decides what to do about it;
* ``faulthandler`` writes every thread's Python stack to the rank's stack file
  on SIGUSR1 (the dispatcher's request when a test hangs) and on a fatal
  signal (segfault), without needing the GIL;
* a thread watches the dispatcher and exits this process if it disappears, so a
  killed dispatcher never leaves a rank stuck in a collective;
* stdout and stderr (file descriptors 1 and 2, so C++ output too) go to the
  rank's output file, which the dispatcher replays under the right test.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

from . import role
from .class_pg import tests_pg
from .execute import RankSession, classify_exception, format_exception, rank_result
from .loader import load_class
from .protocol import (
    ClassExited,
    ExitClass,
    RankResult,
    RunFunction,
    RunTest,
    Shutdown,
    Status,
    WorkerReady,
    WorkerSpec,
)

# Kept referenced for the life of the process: faulthandler writes to its fd.
_stack_file: Any = None


def main(spec: WorkerSpec, conn: Connection) -> None:
    """Process entry point (``multiprocessing.Process(target=main)``)."""
    _adopt_environment(spec)
    role.set_role(role.Role.WORKER, device_type=spec.device_type)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _redirect_output(spec.output_path)
    _install_stack_dumps(spec.stack_path)
    _exit_when_dispatcher_dies(os.path.dirname(spec.store_path) if spec.rank == 0 else None)

    if spec.fresh_pg:
        # ReusedWorkersTest: no PG here; each test creates its own from a store file of its own.
        _send(conn, WorkerReady(rank=spec.rank, pid=os.getpid()))
        store_dir = os.path.dirname(spec.store_path)
        _serve(conn, RankSession(spec.rank, spec.world_size, None, world=None, store_dir=store_dir))
        return
    try:
        pg = _init_process_group(spec)
    except BaseException as exc:  # noqa: BLE001 - reported, then this worker ends
        status, detail = classify_exception(exc)
        skip = detail if status is Status.SKIPPED else None
        error = None if skip else f"rank {spec.rank} could not join the process group:\n{detail}"
        _send(conn, WorkerReady(rank=spec.rank, pid=os.getpid(), init_skip=skip, init_error=error))
        return
    _send(conn, WorkerReady(rank=spec.rank, pid=os.getpid()))
    import torch.distributed as dist

    _serve(conn, RankSession(spec.rank, spec.world_size, pg, world=dist.group.WORLD))


def _adopt_environment(spec: WorkerSpec) -> None:
    # A fork server was started before the suite may have changed os.environ:
    # take the dispatcher's environment as it was when this pool was made.
    if spec.environ:
        os.environ.clear()
        os.environ.update(dict(spec.environ))
    if spec.fresh_pg:
        # As torch's per-test ranks: no RANK/WORLD_SIZE exported (a test passes its own), and
        # the C++ stack traces its run_test turns on.
        os.environ["TORCH_SHOW_CPP_STACKTRACES"] = "1"
        return
    os.environ.update(
        {
            "RANK": str(spec.rank),
            "LOCAL_RANK": str(spec.rank),
            "WORLD_SIZE": str(spec.world_size),
            "LOCAL_WORLD_SIZE": str(spec.world_size),
            "BACKEND": spec.backend_name,
        }
    )


def _redirect_output(path: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _install_stack_dumps(path: str) -> None:
    global _stack_file
    _stack_file = open(path, "a", buffering=1)
    faulthandler.enable(file=_stack_file, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=_stack_file, all_threads=True, chain=False)


def _exit_when_dispatcher_dies(pool_dir: str | None) -> None:
    """Exit if the dispatcher goes (even SIGKILLed); rank 0 then removes the pool's directory."""
    import multiprocessing
    import shutil
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])
        if pool_dir is not None:
            shutil.rmtree(pool_dir, ignore_errors=True)
        os._exit(70)

    threading.Thread(target=watch, name="distlint-watch-dispatcher", daemon=True).start()


def _init_process_group(spec: WorkerSpec) -> Any:
    import torch
    import torch.distributed as dist

    if spec.bind_cuda:
        # Bind cuda:<rank> before init so NCCL never touches another rank's GPU.
        torch.cuda.set_device(spec.rank)
    options = None
    if spec.options_owner is not None:
        owner = load_class(spec.options_owner)
        options = getattr(owner, "opts")()  # the options hook torch's per-test classes define
    store = dist.FileStore(spec.store_path, spec.world_size)
    kwargs = {}
    if options is not None:
        kwargs["pg_options"] = options
    dist.init_process_group(
        backend=spec.backend,
        rank=spec.rank,
        world_size=spec.world_size,
        store=store,
        timeout=timedelta(seconds=spec.pg_timeout_s),
        **kwargs,
    )
    return tests_pg(spec.backend, store, spec.rank, spec.world_size, options)


def _send(conn: Connection, message: object) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    conn.send(message)


def _serve(conn: Connection, session: RankSession) -> None:
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the dispatcher is gone
        if isinstance(message, RunTest):
            _send(conn, _run_test(session, message))
        elif isinstance(message, RunFunction):
            from .on_ranks_rank import run_function

            _send(conn, run_function(session, message))
        elif isinstance(message, ExitClass):
            _send(conn, _exit_class(session, message))
        elif isinstance(message, Shutdown):
            _shutdown(session)
            return


def _run_test(session: RankSession, message: RunTest) -> RankResult:
    import time

    start = time.perf_counter()
    restored: tuple = ()
    try:
        cls = load_class(message.cls)
    except BaseException as exc:  # noqa: BLE001
        status, detail = Status.ERRORED, format_exception(exc)
    else:
        status, detail, restored = session.run_test(cls, message.method, seq=message.seq)
    return rank_result(session, message, status, detail, start, restored)


def _exit_class(session: RankSession, message: ExitClass) -> ClassExited:
    error: str | None
    try:
        error = session.exit_class(load_class(message.cls))
    except BaseException as exc:  # noqa: BLE001
        error = format_exception(exc)
    return ClassExited(seq=message.seq, rank=session.rank, error=error)


def _shutdown(session: RankSession) -> None:
    for cls in session.entered_classes():
        session.exit_class(cls)
    if session.pg_intact():
        import torch.distributed as dist

        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - the process is ending either way
            pass
    sys.stdout.flush()
    sys.stderr.flush()

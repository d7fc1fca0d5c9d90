"""A pool of worker processes, one per rank, sharing one process group.

The dispatcher talks to the pool through three calls, each with a deadline:
:meth:`WorkerPool.start`, :meth:`WorkerPool.run_test`, :meth:`WorkerPool.exit_class`,
and :meth:`WorkerPool.close` ends it (join with a timeout, then SIGTERM, then
SIGKILL).  Nothing here waits without a bound.

While a test runs the dispatcher waits on every rank's pipe *and* process
sentinel at once, so a rank that dies is seen the moment it dies.  When a rank
fails, dies or skips, the others get a short grace period to report and are
then stopped: the test's outcome never waits for a rank stuck in a collective
its failed peer will never join.  A pool that was not left clean by a test
(see :mod:`outcome`) is closed, and the next test gets a new one.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Callable, cast

from . import forkserver, worker
from . import start_method as start_methods
from .outcome import Observation, Outcome, Verdict, decide_outcome
from .protocol import (
    ClassExited,
    ClassRef,
    ExitClass,
    RankResult,
    RunFunction,
    RunTest,
    Shutdown,
    Status,
    WorkerReady,
    WorkerSpec,
    next_seq,
)
from .resolve import PoolConfig
from .skips import REGISTRY

GRACE_S = 0.5  # after one rank fails, dies or skips, how long the others may still report
STACK_DUMP_WAIT_S = 1.0  # how long faulthandler output may take to appear
JOIN_TIMEOUT_S = 5.0  # graceful shutdown
TERM_TIMEOUT_S = 2.0  # after SIGTERM
KILL_TIMEOUT_S = 2.0  # after SIGKILL
OUTPUT_TAIL_CHARS = 4000

_generations = itertools.count(1)


class PoolState(enum.Enum):
    """A pool's life: NEW -> READY -> CLOSED (NEW -> CLOSED if start fails), or NEW -> SKIPPING for good."""

    NEW = "new"  # ranks are starting
    READY = "ready"  # every rank joined the PG and takes tests
    SKIPPING = "skipping"  # the ranks asked to skip while joining; every test here is that skip
    CLOSED = "closed"  # every rank ended, rendezvous directory removed


class PoolStartError(RuntimeError):
    """The pool could not start; ``retry_with_spawn`` when the start method may be to blame."""

    def __init__(self, message: str, *, retry_with_spawn: bool) -> None:
        super().__init__(message)
        self.retry_with_spawn = retry_with_spawn


@dataclasses.dataclass
class _Rank:
    rank: int
    process: BaseProcess
    conn: Connection
    stack_path: str
    output_path: str
    conn_open: bool = True
    stack_offset: int = 0
    output_offset: int = 0


@dataclasses.dataclass
class _Gathered:
    replies: dict[int, object]
    deaths: dict[int, int]  # rank -> exit code (negative: signal)
    pending: list[int]
    timed_out: bool
    cut_short: bool


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    skip_name = REGISTRY.name_for_code(exitcode)
    return f"exited with code {exitcode}" + (f" (skip code {skip_name!r})" if skip_name else "")


def _read_from(path: str, offset: int) -> tuple[str, int]:
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return "", offset
    return data.decode("utf-8", "replace"), offset + len(data)


def _file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def tidy_stack_dump(text: str) -> str:
    """Keep the frames a user wrote: drop the dispatcher-watch thread and the worker loop below the test."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith(("Thread 0x", "Current thread 0x")) and current:
            blocks.append(current)
            current = []
        current.append(line)
    if current:
        blocks.append(current)
    kept = []
    for block in blocks:
        if any("in watch" in line and "worker.py" in line for line in block):
            continue
        trimmed = []
        for line in block:
            if "distlint/runtime/execute.py" in line or "distlint/runtime/worker.py" in line:
                break
            trimmed.append(line)
        kept.append("\n".join(trimmed))
    return "\n".join(kept).strip()


class WorkerPool:
    """``config.world_size`` worker processes that joined one process group."""

    def __init__(self, config: PoolConfig, method: str) -> None:
        self.config = config
        self.start_method = method
        self.generation = next(_generations)
        self.state = PoolState.NEW
        self.init_skip: str | None = None
        self.entered: set = set()  # ClassRefs whose setUpClass ran on these ranks
        self.last_test_id: str | None = None
        self.stale_messages = 0
        self._ranks: list[_Rank] = []
        self._dir: str | None = None

    # -- life cycle -----------------------------------------------------------

    def describe(self) -> str:
        backend = self.config.backend_name
        return f"{backend} pool #{self.generation} ({self.config.world_size} ranks, {self.start_method})"

    def usable(self) -> bool:
        if self.state is PoolState.SKIPPING:
            return True
        if self.state is not PoolState.READY or not all(r.conn_open for r in self._ranks):
            return False
        # One poll of every sentinel: a rank that died between tests must not be
        # blamed on the next test.
        return not wait([r.process.sentinel for r in self._ranks], timeout=0)

    def start(self, startup_timeout_s: float, preload: Sequence[str] = ()) -> None:
        """Start every rank and wait until each joined the PG, asked to skip, or failed.
        ``preload``: modules the fork server should import first (the test class's)."""
        self._dir = tempfile.mkdtemp(prefix="distlint-pool-")
        ctx = start_methods.context(self.start_method)
        forked = self.start_method == start_methods.FORKSERVER
        try:
            if forked:
                forkserver.prepare(preload)
            for rank in range(self.config.world_size):
                spec = WorkerSpec(
                    rank=rank,
                    world_size=self.config.world_size,
                    backend=self.config.backend,
                    backend_name=self.config.backend_name,
                    bind_cuda=self.config.bind_cuda,
                    device_type=self.config.device_type,
                    pg_timeout_s=self.config.pg_timeout_s,
                    store_path=os.path.join(self._dir, "store"),
                    stack_path=os.path.join(self._dir, f"stacks.{rank}"),
                    output_path=os.path.join(self._dir, f"output.{rank}"),
                    options_owner=self.config.options_owner,
                    environ=self.config.environ,
                    fresh_pg=self.config.fresh_pg,
                )
                parent_conn, child_conn = ctx.Pipe(duplex=True)
                process = ctx.Process(
                    target=worker.main,
                    args=(spec, child_conn),
                    name=f"distlint-rank{rank}",
                    daemon=False,
                )
                if forked:
                    forkserver.bounded_start(process.start)
                else:
                    process.start()
                child_conn.close()  # so the dispatcher sees EOF when the worker goes
                self._ranks.append(
                    _Rank(rank, process, parent_conn, spec.stack_path, spec.output_path)
                )
        except Exception as exc:  # noqa: BLE001 - e.g. the fork server could not start
            self.close(graceful=False)
            raise PoolStartError(
                f"could not start worker processes with {self.start_method}: {exc!r}",
                retry_with_spawn=True,
            ) from exc
        self._await_ready(startup_timeout_s)

    def _await_ready(self, timeout_s: float) -> None:
        # A rank that cannot join (error, skip, death) leaves its peers waiting in
        # the rendezvous: they get the grace period, not the whole start-up timeout.
        got = self._gather(
            lambda rank, msg: isinstance(msg, WorkerReady),
            time.monotonic() + timeout_s,
            starts_grace=lambda msg: bool(
                cast(WorkerReady, msg).init_error or cast(WorkerReady, msg).init_skip
            ),
        )
        replies: dict[int, WorkerReady] = got.replies  # type: ignore[assignment]
        errors = [m.init_error for _, m in sorted(replies.items()) if m.init_error]
        skips = [m.init_skip for _, m in sorted(replies.items()) if m.init_skip]
        if errors:
            self.close(graceful=False)
            raise PoolStartError("\n".join(errors), retry_with_spawn=False)
        if got.deaths:
            details = "; ".join(
                f"rank {r} {describe_exit(code)}" for r, code in sorted(got.deaths.items())
            )
            tail = self._output_tail()
            self.close(graceful=False)
            raise PoolStartError(
                f"{self.describe()} failed to start: {details}"
                + (f"\nrank output:\n{tail}" if tail else ""),
                retry_with_spawn=True,
            )
        if skips:
            self.close(graceful=False)
            self.init_skip = skips[0]
            self.state = PoolState.SKIPPING
            return
        if got.timed_out:
            stacks = self._dump_stacks(got.pending)
            self.close(graceful=False)
            text = "\n".join(
                f"rank {r} was at:\n{stacks.get(r, '(no stack)')}" for r in got.pending
            )
            raise PoolStartError(
                f"{self.describe()} did not start within {timeout_s:g} s\n{text}",
                retry_with_spawn=True,
            )
        self.state = PoolState.READY

    def close(self, graceful: bool = True) -> None:
        """End every rank: Shutdown and join (graceful), then SIGTERM, then SIGKILL.  Bounded."""
        if self.state is PoolState.CLOSED or (self.state is PoolState.SKIPPING and not self._ranks):
            return
        live = [r for r in self._ranks if r.process.pid is not None]
        if graceful and self.state is PoolState.READY:
            for r in live:
                self._send(r, Shutdown())
            self._wait_exit(live, JOIN_TIMEOUT_S)
        for sig_timeout, action in ((TERM_TIMEOUT_S, "terminate"), (KILL_TIMEOUT_S, "kill")):
            alive = [r for r in live if r.process.exitcode is None]
            if not alive:
                break
            for r in alive:
                try:
                    getattr(r.process, action)()
                except (OSError, ValueError):
                    pass
            self._wait_exit(alive, sig_timeout)
        for r in live:
            r.process.join(timeout=0.1)  # reap
        for r in self._ranks:
            try:
                r.conn.close()
            except OSError:
                pass
            r.conn_open = False
        self.replay_output()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._ranks = []
        if self.state is not PoolState.SKIPPING:
            self.state = PoolState.CLOSED

    @staticmethod
    def _wait_exit(ranks: list[_Rank], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        waiting = [r for r in ranks if r.process.exitcode is None]
        while waiting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            wait([r.process.sentinel for r in waiting], timeout=remaining)
            waiting = [r for r in waiting if r.process.exitcode is None]

    # -- running tests ----------------------------------------------------------

    def run_test(self, cls: ClassRef, method: str, test_id: str, timeout_s: float) -> Outcome:
        if self.state is not PoolState.SKIPPING:
            self.entered.add(cls)
        return self.run(RunTest(seq=next_seq(), test_id=test_id, cls=cls, method=method), timeout_s)

    def run(self, message: RunTest | RunFunction, timeout_s: float) -> Outcome:
        """Send one test (a class's method, an ``@on_ranks`` function) to every rank; its outcome."""
        if self.state is PoolState.SKIPPING:
            return Outcome(Verdict.SKIP, self.init_skip or "", pool_reusable=True)
        seq, test_id = message.seq, message.test_id
        for r in self._ranks:
            r.stack_offset = _file_size(r.stack_path)
        self.last_test_id = test_id
        started = time.monotonic()
        try:
            for r in self._ranks:
                self._send(r, message)

            def is_answer(rank: int, msg: object) -> bool:
                return (
                    isinstance(msg, RankResult)
                    and msg.seq == seq
                    and msg.rank == rank
                    and msg.test_id == test_id
                )

            got = self._gather(
                is_answer,
                started + timeout_s,
                starts_grace=lambda msg: cast(RankResult, msg).status is not Status.PASSED,
            )
            observation = self._observe(test_id, got, timeout_s)
        except BaseException:
            # KeyboardInterrupt / SIGTERM handler mid-test: ranks may be anywhere.
            self.close(graceful=False)
            raise
        outcome = decide_outcome(observation)
        self.replay_output()
        if not outcome.pool_reusable:
            self.close(graceful=False)
        return outcome

    def _observe(self, test_id: str, got: _Gathered, timeout_s: float) -> Observation:
        deaths, death_skips, death_stacks = {}, {}, {}
        for rank, code in got.deaths.items():
            entry = REGISTRY.by_code(code)
            if entry is not None:
                death_skips[rank] = entry.message
                continue
            deaths[rank] = describe_exit(code)
            stack = tidy_stack_dump(
                _read_from(self._ranks[rank].stack_path, self._ranks[rank].stack_offset)[0]
            )
            if stack:
                death_stacks[rank] = stack
        hung_stacks = self._dump_stacks(got.pending) if got.timed_out else {}
        return Observation(
            test_id=test_id,
            world_size=self.config.world_size,
            results=got.replies,  # type: ignore[arg-type]
            deaths=deaths,
            death_skips=death_skips,
            death_stacks=death_stacks,
            timed_out_after_s=timeout_s if got.timed_out else None,
            hung_stacks=hung_stacks,
            stopped=got.pending if got.cut_short else (),
        )

    def exit_class(self, cls: ClassRef, timeout_s: float) -> list[str]:
        """Run the class's tearDownClass on every rank; the errors, one text per rank."""
        if self.state is not PoolState.READY or cls not in self.entered:
            return []
        self.entered.discard(cls)
        seq = next_seq()
        try:
            for r in self._ranks:
                self._send(r, ExitClass(seq=seq, cls=cls))
            got = self._gather(
                lambda rank, msg: (
                    isinstance(msg, ClassExited) and msg.seq == seq and msg.rank == rank
                ),
                time.monotonic() + timeout_s,
            )
        except BaseException:
            self.close(graceful=False)
            raise
        exited = cast(dict[int, ClassExited], got.replies)
        errors = [f"rank {r}: {m.error}" for r, m in sorted(exited.items()) if m.error]
        errors += [
            f"rank {r} {describe_exit(code)} in tearDownClass"
            for r, code in sorted(got.deaths.items())
        ]
        if got.pending:
            errors.append(
                f"ranks {got.pending} did not finish tearDownClass within {timeout_s:g} s"
            )
        self.replay_output()
        if got.deaths or got.pending:
            self.close(graceful=False)
        return errors

    # -- plumbing -------------------------------------------------------------

    def _send(self, r: _Rank, message: object) -> None:
        if not r.conn_open:
            return
        try:
            r.conn.send(message)
        except (OSError, ValueError):
            r.conn_open = False  # a dead rank: its sentinel tells the rest

    def _gather(
        self,
        is_answer: Callable[[int, object], bool],
        deadline: float,
        starts_grace: Callable[[object], bool] | None = None,
    ) -> _Gathered:
        """Wait for one answer per rank, a death, the deadline, or the end of the grace period."""
        replies: dict[int, object] = {}
        deaths: dict[int, int] = {}
        grace_end: float | None = None
        timed_out = cut_short = False
        while True:
            pending = [r for r in self._ranks if r.rank not in replies and r.rank not in deaths]
            if not pending:
                break
            now = time.monotonic()
            if grace_end is not None and now >= grace_end:
                cut_short = True
                break
            if now >= deadline:
                timed_out = True
                break
            limit = min(deadline, grace_end) if grace_end is not None else deadline
            waitables: list[Connection | int] = [r.conn for r in pending if r.conn_open] + [
                r.process.sentinel for r in pending
            ]
            ready = wait(waitables, timeout=max(0.0, limit - now))
            for r in pending:
                if r.conn_open and r.conn in ready:
                    self._drain(r, is_answer, replies)
                if r.rank not in replies and r.process.sentinel in ready:
                    self._drain(r, is_answer, replies)  # it may have answered just before exiting
                    if r.rank not in replies:
                        r.process.join(timeout=1.0)
                        deaths[r.rank] = (
                            r.process.exitcode
                            if r.process.exitcode is not None
                            else -signal.SIGKILL
                        )
            if grace_end is None and starts_grace is not None:
                if deaths or any(starts_grace(msg) for msg in replies.values()):
                    grace_end = time.monotonic() + GRACE_S
        pending_ranks = [
            r.rank for r in self._ranks if r.rank not in replies and r.rank not in deaths
        ]
        return _Gathered(replies, deaths, pending_ranks, timed_out, cut_short)

    def _drain(
        self, r: _Rank, is_answer: Callable[[int, object], bool], replies: dict[int, object]
    ) -> None:
        try:
            while r.conn.poll():
                message = r.conn.recv()
                if r.rank not in replies and is_answer(r.rank, message):
                    replies[r.rank] = message
                else:
                    self.stale_messages += 1  # an answer to something we stopped waiting for
        except (EOFError, OSError):
            r.conn_open = False

    def _dump_stacks(self, ranks: list[int]) -> dict[int, str]:
        """Ask hung ranks for their Python stacks (faulthandler on SIGUSR1) and read them."""
        targets = [
            self._ranks[rank]
            for rank in ranks
            if self._ranks[rank].process.pid is not None
            and self._ranks[rank].process.exitcode is None
        ]
        for r in targets:
            r.stack_offset = _file_size(r.stack_path)
            if r.process.pid is None:
                continue  # never started
            try:
                os.kill(r.process.pid, signal.SIGUSR1)
            except OSError:
                pass
        deadline = time.monotonic() + STACK_DUMP_WAIT_S
        sizes: dict[int, int] = {}
        while targets and time.monotonic() < deadline:
            time.sleep(0.05)
            now_sizes = {r.rank: _file_size(r.stack_path) for r in targets}
            grown = all(now_sizes[r.rank] > r.stack_offset for r in targets)
            if grown and now_sizes == sizes:
                break  # every rank wrote, and nothing changed for one poll
            sizes = now_sizes
        return {
            r.rank: tidy_stack_dump(_read_from(r.stack_path, r.stack_offset)[0]) for r in targets
        }

    def replay_output(self) -> None:
        """Copy what the ranks printed since the last replay to this process's stderr."""
        for r in self._ranks:
            if _file_size(r.output_path) <= r.output_offset:
                continue  # nothing new: a stat is cheaper than an open per test
            text, r.output_offset = _read_from(r.output_path, r.output_offset)
            if text:
                prefix = f"[rank {r.rank}] "
                sys.stderr.write("".join(prefix + line for line in text.splitlines(keepends=True)))
                if not text.endswith("\n"):
                    sys.stderr.write("\n")
        sys.stderr.flush()

    def _output_tail(self) -> str:
        tails = []
        for r in self._ranks:
            text = _read_from(r.output_path, 0)[0][-OUTPUT_TAIL_CHARS:]
            if text.strip():
                tails.append(f"[rank {r.rank}]\n{text}")
        return "\n".join(tails)

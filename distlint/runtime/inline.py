"""Torchrun mode: each launched process is one rank and runs its own tests.

``torchrun --nproc-per-node N file.py`` starts N copies of the test file; nothing
is spawned.  Every rank runs the same tests in the same order, and after each
test the ranks swap their results through the rendezvous store (keys carry the
test's seq and id) and call the same :func:`outcome.decide_outcome` as spawn
mode, so every rank reports the same outcome the dispatcher would.

What cannot be done without a dispatcher is replaced as follows:

* a rank whose test failed posts its result first and then abandons its PG
  (:func:`abandon_pg`): it shuts down the connections the PG opened (gloo) or
  aborts it (NCCL), so a peer blocked in a collective with it errors out at
  once; a peer's destroy_process_group alone does not do that while anything
  still holds the group;
* while a test runs, a thread on every rank watches the store for a peer's
  failed result and abandons this rank's PG too, so no rank waits out the
  timeout in a collective a failed peer will never join; a rank whose test
  errored after a peer had failed is reported as stopped, not as a second
  failure;
* after any unclean outcome every rank joins a fresh PG (a new store prefix)
  before the next test, and the rest of the class runs;
* a rank still running after the timeout dumps its Python stacks and exits
  (``faulthandler.dump_traceback_later``); torchrun then stops the job with a
  non-zero status, which is the only bounded answer once a rank is stuck.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import socket
import threading
import time
import unittest
from datetime import timedelta
from typing import Any

from .class_pg import tests_pg
from .execute import RankSession
from .outcome import Observation, Outcome, decide_outcome
from .protocol import RankResult, Status
from .resolve import ClassPlan, PoolConfig
from .worker_pool import GRACE_S

# A hung rank's watchdog fires this long after the test timeout; its peers
# wait a little longer than that for its result.
WATCHDOG_MARGIN_S = 2.0
EXCHANGE_MARGIN_S = WATCHDOG_MARGIN_S + GRACE_S + 2.0
# How often a rank looks in the store for a failed peer while its test runs.
PEER_WATCH_INTERVAL_S = 0.05


def socket_fds() -> set[int]:
    """This process's open sockets (file descriptors), from /proc."""
    found: set[int] = set()
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                found.add(int(name))
        except (OSError, ValueError):
            pass
    return found


def shut_down_sockets(fds: set[int]) -> None:
    """Shut down the connections among these sockets, so whoever waits on one errors out.

    Shut down, not closed (their owner closes them), and listening sockets are
    left alone: gloo's listener thread aborts the process if its accept() fails.
    """
    for fd in fds:
        try:
            with socket.socket(fileno=os.dup(fd)) as sock:
                if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                    sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _InlineRank:
    def __init__(self) -> None:
        import torch.distributed as dist

        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        run_id = os.environ.get("TORCHELASTIC_RUN_ID", "run")
        store, _, _ = next(dist.rendezvous("env://", timeout=timedelta(seconds=300)))
        self._base_store = dist.PrefixStore(f"distlint/{run_id}/", store)
        self._results = dist.PrefixStore("results/", self._base_store)
        self.config: PoolConfig | None = None
        self.generation = 0
        self.seq = 0
        self.session: RankSession | None = None
        self._sockets_before_pg: set[int] | None = None
        self._abandon_lock = threading.Lock()

    def ensure_pg(self, config: PoolConfig) -> RankSession:
        import torch
        import torch.distributed as dist

        if self.session is not None and self.config == config and dist.is_initialized():
            return self.session
        self.drop_pg()
        if config.world_size != self.world_size:
            # Every rank sees the same config, so every rank skips: no rank is left waiting.
            raise unittest.SkipTest(
                f"needs world size {config.world_size}; torchrun started {self.world_size} ranks"
            )
        self.generation += 1
        if config.bind_cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", self.rank)))
        store = dist.PrefixStore(f"pg{self.generation}/", self._base_store)
        options = None
        if config.options_owner is not None:
            from .loader import load_class

            # The options hook torch's per-test classes define.
            options = getattr(load_class(config.options_owner), "opts")()
        kwargs = {"pg_options": options} if options is not None else {}
        # What is open now is not the PG's: abandon_pg() shuts down only what opens after.
        self._sockets_before_pg = socket_fds()
        dist.init_process_group(
            backend=config.backend,
            rank=self.rank,
            world_size=self.world_size,
            store=store,
            timeout=timedelta(seconds=config.pg_timeout_s),
            **kwargs,
        )
        os.environ["BACKEND"] = config.backend_name
        self.config = config
        pg = tests_pg(config.backend, store, self.rank, self.world_size, options)
        self.session = RankSession(
            self.rank, self.world_size, pg, world=dist.group.WORLD, run_class_fixtures=False
        )
        return self.session

    def abandon_pg(self) -> None:
        """Make every collective on this rank's PG, here and on its peers, fail now.

        gloo: shut down the connections opened since the PG was made (its pairs,
        and subgroups'); other backends (NCCL): abort the PG.  Safe from another
        thread while the test is blocked in a collective.
        """
        import torch.distributed as dist

        with self._abandon_lock:
            before, self._sockets_before_pg = self._sockets_before_pg, None
            if before is None:
                return  # no PG, or abandoned already
            shut_down_sockets(socket_fds() - before)
            if self.config is not None and self.config.backend_name != "gloo":
                abort = getattr(dist.distributed_c10d, "_abort_process_group", None)
                if abort is not None and dist.is_initialized():
                    try:
                        abort()
                    except Exception:  # noqa: BLE001 - best effort: the PG is dropped next
                        pass

    def drop_pg(self) -> None:
        """Leave the PG now; peers blocked in a collective with this rank get an error."""
        import torch.distributed as dist

        self.abandon_pg()
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001 - it may already be half gone
                pass
        self.session = None

    def post(self, local: RankResult, stopped: bool = False) -> None:
        self._results.set(f"{local.seq}/{local.rank}", json.dumps(_encode(local, stopped)))

    def peer_failed(self, seq: int) -> bool:
        """Whether a peer has posted a result other than a pass for test ``seq``."""
        for peer in range(self.world_size):
            if peer == self.rank:
                continue
            key = f"{seq}/{peer}"
            try:
                if self._results.check([key]):
                    result, _ = _decode(json.loads(self._results.get(key)))
                    if result.status is not Status.PASSED:
                        return True
            except Exception:  # noqa: BLE001 - the store is gone: nothing to learn from it
                return False
        return False

    def collect(self, local: RankResult, deadline: float) -> tuple[dict[int, RankResult], set[int]]:
        """Every rank's result for this test (until the deadline), and the ranks that were stopped."""
        results = {local.rank: local}
        stopped: set[int] = set()
        for peer in range(self.world_size):
            if peer == local.rank:
                continue
            key = f"{local.seq}/{peer}"
            try:
                self._results.wait([key], timedelta(seconds=max(0.1, deadline - time.monotonic())))
                theirs, was_stopped = _decode(json.loads(self._results.get(key)))
            except Exception:  # noqa: BLE001 - a timeout: the peer never reported
                continue
            if theirs.test_id == local.test_id:
                results[peer] = theirs
                if was_stopped:
                    stopped.add(peer)
        return results, stopped

    def watch_peers(self, seq: int) -> tuple[threading.Event, threading.Thread]:
        """While test ``seq`` runs: abandon this rank's PG as soon as a peer posts a failure."""
        done = threading.Event()

        def watch() -> None:
            while not done.wait(PEER_WATCH_INTERVAL_S):
                if self.peer_failed(seq):
                    if not done.is_set():
                        self.abandon_pg()
                    return

        thread = threading.Thread(target=watch, name="distlint-watch-peers", daemon=True)
        thread.start()
        return done, thread


def _encode(result: RankResult, stopped: bool = False) -> dict[str, Any]:
    return {
        "stopped": stopped,
        "seq": result.seq,
        "test_id": result.test_id,
        "rank": result.rank,
        "status": result.status.value,
        "detail": result.detail,
        "pg_intact": result.pg_intact,
        "restored": list(result.restored),
    }


def _decode(data: dict[str, Any]) -> tuple[RankResult, bool]:
    result = RankResult(
        seq=data["seq"],
        test_id=data["test_id"],
        rank=data["rank"],
        status=Status(data["status"]),
        detail=data["detail"],
        pg_intact=data["pg_intact"],
        restored=tuple(data.get("restored", ())),
    )
    return result, bool(data.get("stopped"))


_state: _InlineRank | None = None


def _rank_state() -> _InlineRank:
    global _state
    if _state is None:
        _state = _InlineRank()
    return _state


def enter_class(cls: type, plan: ClassPlan) -> None:
    """setUpClass on this rank: join the PG the class needs, give the class its world."""
    assert plan.config is not None
    session = _rank_state().ensure_pg(plan.config)
    session.bind_class(cls)


def exit_class(cls: type) -> None:
    pass  # unittest runs tearDownClass in this process itself


def run_test(cls: type, method: str, test_id: str, plan: ClassPlan) -> Outcome:
    state = _rank_state()
    assert plan.config is not None
    session = state.ensure_pg(plan.config)
    state.seq += 1
    start = time.monotonic()
    faulthandler.dump_traceback_later(plan.test_timeout_s + WATCHDOG_MARGIN_S, exit=True)
    watching, watcher = state.watch_peers(state.seq)
    try:
        status, detail, restored = session.run_test(cls, method)
    finally:
        watching.set()
        faulthandler.cancel_dump_traceback_later()
    watcher.join()
    local = RankResult(
        seq=state.seq,
        test_id=test_id,
        rank=state.rank,
        status=status,
        detail=detail,
        pg_intact=session.pg_intact(),
        restored=restored,
    )
    stopped = False
    if status is not Status.PASSED or not local.pg_intact:
        # An error after a peer failed is that failure's echo (its collective was
        # abandoned), unless it is this rank's own assertion.
        stopped = status is Status.ERRORED and state.peer_failed(state.seq)
        local = dataclasses.replace(local, pg_intact=False)
        # Post first, then leave: a peer blocked in a collective with this rank
        # errors out at once and finds out why; every rank then starts a fresh PG.
        state.post(local, stopped)
        state.drop_pg()
    else:
        state.post(local)
    results, stopped_peers = state.collect(local, start + plan.test_timeout_s + EXCHANGE_MARGIN_S)
    if stopped:
        stopped_peers.add(state.rank)
    missing = [r for r in range(state.world_size) if r not in results]
    outcome = decide_outcome(
        Observation(
            test_id=test_id,
            world_size=state.world_size,
            results={rank: result for rank, result in results.items() if rank not in stopped_peers},
            timed_out_after_s=plan.test_timeout_s if missing else None,
            stopped=sorted(stopped_peers),
        )
    )
    if not outcome.pool_reusable:
        state.drop_pg()
    return outcome


FINISH_WAIT_S = 60.0


def finish() -> None:
    """End of the run: wait (bounded) until every rank has reported, then leave the PG.

    torchrun stops the other ranks as soon as one exits non-zero; waiting here
    keeps rank 0 from being killed while it is still printing the report.
    """
    if _state is None:
        return
    state = _state
    try:
        done = [f"done/{rank}" for rank in range(state.world_size)]
        state._results.set(done[state.rank], "1")
        state._results.wait(done, timedelta(seconds=FINISH_WAIT_S))
    except Exception:  # noqa: BLE001 - a peer that died; nothing left to wait for
        pass
    state.drop_pg()

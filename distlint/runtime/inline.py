"""Torchrun mode: each launched process is one rank and runs its own tests.

``torchrun --nproc-per-node N file.py`` starts N copies of the test file; nothing
is spawned.  Every rank runs the same tests in the same order, and after each
test the ranks swap their results through the rendezvous store (keys carry the
test's seq and id) and call the same :func:`outcome.decide_outcome` as spawn
mode, so every rank reports the same outcome the dispatcher would.

What cannot be done without a dispatcher is replaced as follows:

* a failed rank destroys its PG at once, so a peer waiting in a collective
  with it errors out instead of hanging; after any unclean outcome every rank
  joins a fresh PG (a new store prefix) before the next test;
* a rank still running after the timeout dumps its Python stacks and exits
  (``faulthandler.dump_traceback_later``); torchrun then stops the job with a
  non-zero status, which is the only bounded answer once a rank is stuck.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import time
import unittest
from datetime import timedelta
from typing import Any, Dict, Optional

from .execute import RankSession
from .outcome import Observation, Outcome, decide_outcome
from .protocol import RankResult, Status
from .resolve import ClassPlan, PoolConfig
from .worker_pool import GRACE_S

# A hung rank's watchdog fires this long after the test timeout; its peers
# wait a little longer than that for its result.
WATCHDOG_MARGIN_S = 2.0
EXCHANGE_MARGIN_S = WATCHDOG_MARGIN_S + GRACE_S + 2.0


class _InlineRank:
    def __init__(self) -> None:
        import torch.distributed as dist

        self.rank = int(os.environ["RANK"])
        self.world_size = int(os.environ["WORLD_SIZE"])
        run_id = os.environ.get("TORCHELASTIC_RUN_ID", "run")
        store, _, _ = next(dist.rendezvous("env://", timeout=timedelta(seconds=300)))
        self._base_store = dist.PrefixStore(f"distlint/{run_id}/", store)
        self._results = dist.PrefixStore("results/", self._base_store)
        self.config: Optional[PoolConfig] = None
        self.generation = 0
        self.seq = 0
        self.session: Optional[RankSession] = None

    def ensure_pg(self, config: PoolConfig) -> RankSession:
        import torch
        import torch.distributed as dist

        if self.session is not None and self.config == config and dist.is_initialized():
            return self.session
        self.drop_pg()
        if config.world_size != self.world_size:
            # Every rank sees the same config, so every rank skips: no rank is left waiting.
            raise unittest.SkipTest(f"needs world size {config.world_size}; torchrun started {self.world_size} ranks")
        self.generation += 1
        if config.bind_cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", self.rank)))
        store = dist.PrefixStore(f"pg{self.generation}/", self._base_store)
        options = None
        if config.options_owner is not None:
            from .loader import load_class

            options = load_class(config.options_owner).opts()
        kwargs = {"pg_options": options} if options is not None else {}
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
        self.session = RankSession(self.rank, self.world_size, dist.group.WORLD, run_class_fixtures=False)
        return self.session

    def drop_pg(self) -> None:
        """Leave the PG now; peers blocked in a collective with this rank get an error."""
        import torch.distributed as dist

        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001 - it may already be half gone
                pass
        self.session = None

    def exchange(self, local: RankResult, deadline: float) -> Dict[int, RankResult]:
        self._results.set(f"{local.seq}/{local.rank}", json.dumps(_encode(local)))
        results = {local.rank: local}
        for peer in range(self.world_size):
            if peer == local.rank:
                continue
            key = f"{local.seq}/{peer}"
            try:
                self._results.wait([key], timedelta(seconds=max(0.1, deadline - time.monotonic())))
                theirs = _decode(json.loads(self._results.get(key)))
            except Exception:  # noqa: BLE001 - a timeout: the peer never reported
                continue
            if theirs.test_id == local.test_id:
                results[peer] = theirs
        return results


def _encode(result: RankResult) -> Dict[str, Any]:
    return {
        "seq": result.seq,
        "test_id": result.test_id,
        "rank": result.rank,
        "status": result.status.value,
        "detail": result.detail,
        "pg_intact": result.pg_intact,
    }


def _decode(data: Dict[str, Any]) -> RankResult:
    return RankResult(
        seq=data["seq"],
        test_id=data["test_id"],
        rank=data["rank"],
        status=Status(data["status"]),
        detail=data["detail"],
        pg_intact=data["pg_intact"],
    )


_state: Optional[_InlineRank] = None


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
    try:
        status, detail = session.run_test(cls, method)
    finally:
        faulthandler.cancel_dump_traceback_later()
    local = RankResult(
        seq=state.seq, test_id=test_id, rank=state.rank, status=status, detail=detail, pg_intact=session.pg_intact()
    )
    if status is not Status.PASSED or not local.pg_intact:
        # Leave at once so a peer blocked in a collective with this rank errors
        # out, and say so: every rank must then start a fresh PG, not just this one.
        state.drop_pg()
        local = dataclasses.replace(local, pg_intact=False)
    results = state.exchange(local, start + plan.test_timeout_s + EXCHANGE_MARGIN_S)
    missing = [r for r in range(state.world_size) if r not in results]
    outcome = decide_outcome(
        Observation(
            test_id=test_id,
            world_size=state.world_size,
            results=results,
            timed_out_after_s=plan.test_timeout_s if missing else None,
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

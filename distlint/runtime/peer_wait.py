"""A bounded wait for the other ranks, counted in a c10d store: no collective, so a peer that
never comes (it failed, it hangs) costs at most the bound, never a hang."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, NoReturn

#: How often the count is read while waiting.
POLL_S = 0.005


def await_peers(store: Any, key: str, size: int, timeout_s: float) -> bool:
    """Count this rank in at ``key`` and wait until ``size`` ranks have, at most ``timeout_s``.
    True when all came; False when the bound passed or the store failed (a peer gone with it)."""
    try:
        store.add(key, 1)
        deadline = time.monotonic() + timeout_s
        while store.add(key, 0) < size:
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)
    except Exception:  # noqa: BLE001 - the store went with a peer: nothing left to wait for
        return False
    return True


def default_store() -> Any | None:
    """The default process group's store, or None (no group, or no torch.distributed imported)."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:  # noqa: BLE001 - a torch without it: nothing to wait on
        return None


# -- a rank leaving its test with the PG up (fast start's per-test and continuous ranks) --------

#: How long a rank leaving with its default PG still up waits for its peers to be done too.
PEER_EXIT_WAIT_S = 3.0
#: Where every rank of a test counts itself in once it is done with its test.
EXIT_KEY = "distlint/rank-exit"

#: Whether this rank has counted itself in at :data:`EXIT_KEY` (once: it is done once).
_counted = False


def _store_to_count_in_once() -> Any | None:
    """The store to count this rank in as done at, the first time only; None: counted already,
    or no PG."""
    global _counted
    store = default_store()
    if store is None or _counted:
        return None
    _counted = True
    return store


def wait_for_peers_before_leaving() -> None:
    """A rank that leaves with the default PG still up waits, bounded, for its peers to be done.

    gloo's ``init_process_group`` returns on a rank once its own pairs are connected, while a
    peer may still be finishing the handshake; a rank that closes its sockets then ("Connection
    closed by peer") fails the peer's test. A spawned rank leaves slowly enough (exit handlers,
    interpreter shutdown: 0.1-0.5 s) that this is rare; a forked one leaves with ``os._exit`` at
    once. Counted in the test's own store (fresh per test), so ranks that all leave here leave
    together, and a peer that never comes (it hangs, a signal killed it) costs at most the bound."""
    store = _store_to_count_in_once()
    if store is not None:
        dist = sys.modules["torch.distributed"]
        await_peers(store, EXIT_KEY, dist.get_world_size(), PEER_EXIT_WAIT_S)


def hold_pg_until_peers_are_done(test_class: type) -> None:
    """In this rank process only: wait for the peers (:func:`wait_for_peers_before_leaving`)
    between the test passing and torch's ``run_test`` destroying the PG, and count a rank that a
    test ends with ``os._exit`` in as done, so that its peers need not wait for it.

    torch destroys the PG the moment the test body returns: a collective that does not connect
    every pair (a broadcast, none at all) lets a rank close its sockets while a peer is still in
    gloo's handshake, and the peer's test fails with "Connection closed by peer" (measured with
    forked ranks on an idle machine: 5 of 168 tests that only create the PG, then none of 120).
    The wait costs a run nothing while the peers are busy (torch waits for every rank anyway, and
    stops the waiting ones as soon as a peer exits with its error code); a rank whose test raised
    or skipped waits on its way out instead."""
    run_test = test_class.run_test  # type: ignore[attr-defined]

    def run_test_then_wait(self: Any, test_name: str, parent_pipe: Any) -> None:
        test = getattr(self, test_name)

        def test_then_wait() -> None:
            test()
            wait_for_peers_before_leaving()

        setattr(self, test_name, test_then_wait)  # what run_test looks up and calls
        run_test(self, test_name, parent_pipe)

    test_class.run_test = run_test_then_wait  # type: ignore[attr-defined]
    leave = os._exit

    def exit_counted_in(status: int) -> NoReturn:
        store = _store_to_count_in_once()
        if store is not None:
            try:
                store.add(EXIT_KEY, 1)
            except Exception:  # noqa: BLE001 - the store went with a peer: no one to tell
                pass
        leave(status)

    os._exit = exit_counted_in

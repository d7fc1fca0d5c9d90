"""A bounded wait for the other ranks, counted in a c10d store: no collective, so a peer that
never comes (it failed, it hangs) costs at most the bound, never a hang."""

from __future__ import annotations

import sys
import time
from typing import Any

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

#: How long a rank leaving with its default PG still up (it skipped, or raised) waits for its peers.
PEER_EXIT_WAIT_S = 3.0
#: How long a rank whose test passed keeps its PG up for its peers: longer, as it costs a run
#: nothing while its peers are still busy (torch's dispatcher waits for every rank anyway, and
#: stops the waiting ones as soon as a peer exits with the error code) and a loaded machine can
#: keep a peer in gloo's handshake for seconds. It is paid only when a peer dies otherwise (a
#: signal, ``os._exit``) while the others pass.
PASSED_PEER_WAIT_S = 5.0
#: Where every rank of a test counts itself in once it is done with its test.
EXIT_KEY = "distlint/rank-exit"

#: Whether this rank has counted itself in at :data:`EXIT_KEY` (it does so once, its test done).
_counted = False


def wait_for_peers_before_leaving(timeout_s: float = PEER_EXIT_WAIT_S) -> None:
    """A rank that leaves with the default PG still up waits, bounded, for its peers to be done.

    gloo's ``init_process_group`` returns on a rank once its own pairs are connected, while a
    peer may still be finishing the handshake; a rank that closes its sockets then ("Connection
    closed by peer") fails the peer's test. A spawned rank leaves slowly enough (exit handlers,
    interpreter shutdown: 0.1-0.5 s) that this is rare; a forked one leaves with ``os._exit`` at
    once. Counted in the test's own store (fresh per test), so ranks that all leave here leave
    together, and a peer that never comes costs at most the bound. Once per rank: a rank that
    waited after its test passed does not count itself in again on its way out."""
    global _counted
    store = default_store()
    if store is None or _counted:
        return
    _counted = True
    dist = sys.modules["torch.distributed"]
    await_peers(store, EXIT_KEY, dist.get_world_size(), timeout_s)


def keep_pg_until_peers_pass(test_class: type) -> None:
    """Make this rank wait for its peers between its test passing and torch's ``run_test``
    destroying the PG (``destroy_pg_upon_exit``), in this rank process only.

    torch destroys the PG the moment the test body returns: a collective that does not connect
    every pair (a broadcast, none at all) lets a rank close its sockets while a peer is still in
    gloo's handshake, and the peer's test fails with "Connection closed by peer" (measured with
    forked ranks on an idle machine: 5 of 168 tests that only create the PG, then none of 312).
    A rank whose test raised or skipped leaves through :func:`wait_for_peers_before_leaving`."""
    run_test = test_class.run_test  # type: ignore[attr-defined]

    def run_test_then_wait(self: Any, test_name: str, parent_pipe: Any) -> None:
        test = getattr(self, test_name)

        def test_then_wait() -> None:
            test()
            wait_for_peers_before_leaving(PASSED_PEER_WAIT_S)

        setattr(self, test_name, test_then_wait)  # what run_test looks up and calls
        run_test(self, test_name, parent_pipe)

    test_class.run_test = run_test_then_wait  # type: ignore[attr-defined]

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

"""A rank of a ReusedWorkersTest pool: a store file per test, and what is put away after it.

Such a rank holds no process group between tests. A test creates its own, exactly as on a
per-test rank of torch's ``MultiProcessTestCase``: from ``self.file_name`` (a ``FileStore`` or
``init_method="file://..."``), with the backend, options, timeout and environment it chooses.
After it, the rank does what torch's per-test rank does before it exits (destroy the groups the
test left: ``destroy_pg_upon_exit``), removes the store file, and says whether it could: a rank
whose groups could not be destroyed is replaced before the next test.
"""

from __future__ import annotations

import os
from typing import Any


def store_file(store_dir: str, seq: int) -> str:
    """The test's ``self.file_name``: the same path on every rank (``seq`` is the message's), and
    a new one for every test, so no test ever reads keys an earlier one wrote."""
    return os.path.join(store_dir, f"test-store.{seq}")


#: The file of the store the ranks of a pool count each other in (never a test's own store).
RANKS_STORE = "ranks.store"
#: torch's per-test default: a peer that never comes is the dispatcher's to report sooner.
PEER_TIMEOUT_S = 300.0


class RankBarrier:
    """Each rank counts itself in when its test body is done, and runs ``tearDown`` once every
    rank has (bounded): a per-test ``tearDown`` ran in the parent after every rank had exited,
    and one that removes ``self.file_name`` must not pull the store from under a slower peer."""

    def __init__(self, store_dir: str, world_size: int, seq: int) -> None:
        self._path = os.path.join(store_dir, RANKS_STORE)
        self._world_size = world_size
        self._key = f"body-done/{seq}"

    def wait(self, timeout_s: float = PEER_TIMEOUT_S) -> bool:
        """True once every rank is here; False after ``timeout_s`` (a peer died or hangs: the
        dispatcher's deadline, not this wait, decides the outcome)."""
        from .peer_wait import await_peers

        try:
            store = _ranks_store(self._path, self._world_size)
        except Exception:  # noqa: BLE001 - no store, no wait: tearDown runs at once
            return False
        return await_peers(store, self._key, self._world_size, timeout_s)


_stores: dict = {}


def _ranks_store(path: str, world_size: int) -> Any:
    """One FileStore per pool directory for the life of the rank."""
    store = _stores.get(path)
    if store is None:
        import torch.distributed as dist

        store = _stores[path] = dist.FileStore(path, world_size)
    return store


def put_away(file_name: str) -> bool:
    """Destroy every process group the test left on this rank and remove its store file; False
    when a group could not be destroyed (the rank is then not used again)."""
    import torch.distributed as dist

    reusable = True
    if dist.is_available() and dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - an aborted or broken group: the rank is replaced
            reusable = False
    try:
        os.remove(file_name)
    except OSError:
        pass  # never created, or another rank (or the FileStore itself) removed it
    return reusable

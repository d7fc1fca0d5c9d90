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


def store_file(store_dir: str, seq: int) -> str:
    """The test's ``self.file_name``: the same path on every rank (``seq`` is the message's), and
    a new one for every test, so no test ever reads keys an earlier one wrote."""
    return os.path.join(store_dir, f"test-store.{seq}")


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

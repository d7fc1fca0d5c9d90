"""The process group a continuous class's tests get as ``self.pg``.

The default group, except for a gloo class with ``opts()``: torch's ``init_process_group``
drops gloo options (threads, devices, lazy init; it builds ``ProcessGroupGloo`` with a
timeout only), so those tests get a ``ProcessGroupGloo`` built from the options over the
class's store, as the per-test tests they came from built one (``ProcessGroupGloo(store,
rank, world_size, opts)``). The default group still exists for ``dist.*`` calls.
"""

from __future__ import annotations

from typing import Any

#: Prefix of the options group's keys in the class's store (apart from the default group's).
STORE_PREFIX = "distlint-options-pg/"


def tests_pg(backend: str | None, store: Any, rank: int, world_size: int, options: Any) -> Any:
    """``self.pg`` for a class whose default group was just initialised from ``store``."""
    import torch.distributed as dist

    if options is None or backend != "gloo":
        return dist.group.WORLD
    if not options._devices:  # what torch's constructor uses when it gets no options
        options._devices = [dist.ProcessGroupGloo.create_default_device()]
    return dist.ProcessGroupGloo(dist.PrefixStore(STORE_PREFIX, store), rank, world_size, options)

"""Which part this process plays in a distributed test run.

The same test class runs in three kinds of process, and each method of
MultiProcContinuousTest behaves according to this:

* DISPATCHER: the process the test runner (unittest, pytest) lives in.  It
  owns the worker pools and only reports results; test bodies never run here.
* WORKER: a pool process.  It is one rank and runs test bodies on the shared PG.
* INLINE: a process launched by torchrun.  It is one rank *and* reports results,
  so it runs test bodies itself and agrees on outcomes with its peers.
"""

from __future__ import annotations

import enum
import os


class Role(enum.Enum):
    DISPATCHER = "dispatcher"
    WORKER = "worker"
    INLINE = "inline"


_role: Role | None = None
_worker_device_type = "cpu"


def launched_by_torchrun(environ: dict | None = None) -> bool:
    """True in a process started by torchrun / torch.distributed.run."""
    env = os.environ if environ is None else environ
    return "TORCHELASTIC_RUN_ID" in env and "RANK" in env and "WORLD_SIZE" in env


def current_role() -> Role:
    global _role
    if _role is None:
        _role = Role.INLINE if launched_by_torchrun() else Role.DISPATCHER
    return _role


def set_role(role: Role, device_type: str = "cpu") -> None:
    global _role, _worker_device_type
    _role = role
    _worker_device_type = device_type


def worker_device_type() -> str:
    """In a pool worker: the device type its pool was resolved to ("cuda" for NCCL)."""
    return _worker_device_type

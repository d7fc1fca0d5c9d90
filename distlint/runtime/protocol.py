"""Messages between the dispatcher and its workers.

Every message is a small frozen dataclass sent over one duplex pipe per rank.
Anything about a test carries its ``seq``: a number the dispatcher never reuses
in a process.  A worker echoes it, and the dispatcher only accepts a result
whose seq, test id and rank match what it is waiting for, so a late answer to an
earlier test can never be read as the answer to a later one.

Nothing here imports torch: both sides unpickle these before torch matters.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools


class Status(str, enum.Enum):
    """How a test ended on one rank."""

    PASSED = "passed"
    FAILED = "failed"  # the test's failureException (an assertion)
    ERRORED = "errored"  # any other exception, sys.exit with a non-skip code, ...
    SKIPPED = "skipped"


@dataclasses.dataclass(frozen=True)
class ClassRef:
    """How a worker finds a test class: import ``module`` (or load ``file``), walk ``qualname``."""

    module: str
    qualname: str
    file: str | None = None

    def describe(self) -> str:
        return f"{self.module}.{self.qualname}"


@dataclasses.dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs to become one rank of a pool."""

    rank: int
    world_size: int
    backend: str | None  # passed to init_process_group as is
    backend_name: str  # resolved name, exported as $BACKEND ("gloo", "nccl")
    bind_cuda: bool  # call torch.cuda.set_device(rank) before init
    device_type: str
    pg_timeout_s: float
    store_path: str
    stack_path: str
    output_path: str
    options_owner: ClassRef | None  # whose opts() builds the PG options
    environ: tuple  # (name, value) pairs: the dispatcher's environment
    #: No shared PG: each test creates its own from ``self.file_name`` (a store file per test in
    #: ``dirname(store_path)``), and the rank destroys what the test left after it.
    fresh_pg: bool = False


# ---- dispatcher -> worker -------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunTest:
    seq: int
    test_id: str
    cls: ClassRef
    method: str


#: The attribute of an ``@on_ranks`` test's dispatcher that holds what the decorator declared
#: (``on_ranks_dispatch.OnRanksSpec``); the rank finds the test function through it.
ON_RANKS_SPEC_ATTR = "_distlint_on_ranks"


@dataclasses.dataclass(frozen=True)
class RunFunction:
    """Run an ``@on_ranks`` test: ``function`` names it as a ClassRef names a class (module, qualname,
    file); ``arguments`` are its fixtures' values, pickled in the dispatcher; ``owner`` and
    ``instance_state`` (pickled attributes) rebuild ``self`` for a method of a test class."""

    seq: int
    test_id: str
    function: ClassRef
    arguments: bytes
    owner: ClassRef | None = None
    instance_state: bytes | None = None


@dataclasses.dataclass(frozen=True)
class ExitClass:
    """The dispatcher's tearDownClass: run the class's tearDownClass on the ranks."""

    seq: int
    cls: ClassRef


@dataclasses.dataclass(frozen=True)
class Shutdown:
    """Leave the loop, destroying the PG first when it is still healthy."""


# ---- worker -> dispatcher -------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WorkerReady:
    rank: int
    pid: int
    init_skip: str | None = None  # PG init asked to skip (registry message)
    init_error: str | None = None  # PG init failed (traceback)


@dataclasses.dataclass(frozen=True)
class RankResult:
    seq: int
    test_id: str
    rank: int
    status: Status
    detail: str = ""  # traceback or skip message
    pg_intact: bool = True  # the default PG is still the pool's shared one
    duration_s: float = 0.0
    # Process-wide state the test changed on this rank, put back before the next test
    # (rank_state.restore's lines: "default dtype torch.float64 (was torch.float32)").
    restored: tuple = ()
    #: This rank can run another test: false when what the test left (its process groups) could
    #: not be put away; the pool is then replaced, whatever the outcome.
    reusable: bool = True


@dataclasses.dataclass(frozen=True)
class ClassExited:
    seq: int
    rank: int
    error: str | None = None


_sequence = itertools.count(1)


def next_seq() -> int:
    """A number no earlier message of this process carried."""
    return next(_sequence)

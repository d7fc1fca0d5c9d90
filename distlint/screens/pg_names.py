"""Names of torch's process-group API and test bases that the pre-screen and the PG analysis share.

Plain data and name helpers, without libcst: the DL2xx pre-screens (:mod:`distlint.screens`)
decide from these words whether a file can have a finding before anything imports libcst;
the libcst analysis (:mod:`distlint.analysis.pg`) matches the same names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distlint.screens.names import last_component

if TYPE_CHECKING:
    from distlint.config import Config

SPAWN_METHODS = ("_spawn_processes", "_fork_processes")

#: torch bases whose setUp spawns processes for every test (MultiProcessTestCase itself does not).
PER_TEST_BASES = frozenset(
    {"DistributedTestBase", "DynamoDistributedMultiProcTestCase", "FSDPTest", "DTensorTestBase"}
)
#: Per-test bases whose worker creates the PG itself before every test (no call in the test).
BASE_RUN_PG = frozenset({"FSDPTest"})
CONTINUOUS_BASES = frozenset(
    {
        "MultiProcContinuousTest",
        "MultiProcContinousTest",
        "DTensorContinuousTestBase",
        "DTensorContinuousTest",
        "FSDPContinuousTest",  # distlint.runtime's forms
        "LocalDTensorContinuousTestBase",
        "FSDPTestContinuous",
        "C10dTorchCommsTestBase",
    }
)
#: Bases whose ranks are spawned once per class while each test creates its own PG
#: (distlint.runtime's): nothing left to move, and their tests own their PG's lifecycle.
REUSED_WORKERS_BASES = frozenset({"ReusedWorkersTest"})
#: Backend classes whose constructor creates a PG, and the backend they are.
BACKEND_CONSTRUCTORS: dict[str, str] = {
    "ProcessGroupNCCL": "nccl",
    "ProcessGroupGloo": "gloo",
    "ProcessGroupUCC": "ucc",
    "ProcessGroupXCCL": "xccl",
}
ABORT_FUNCTIONS = frozenset({"_abort_process_group", "abort_process_group"})
ABORT_METHODS = frozenset({"abort", "shutdown", "_shutdown"})


#: Helpers of bases defined in other files that create a PG, with where their arguments are.
@dataclass(frozen=True)
class HelperSignature:
    backend: str | None = None  # fixed backend, when the helper implies one
    backend_arg: tuple[int | None, str | None] = (None, "backend")
    world_size_arg: tuple[int | None, str | None] = (None, "world_size")
    options_arg: tuple[int | None, str | None] = (None, None)
    timeout_arg: tuple[int | None, str | None] = (None, "timeout")
    store_arg: tuple[int | None, str | None] = (None, "store")
    #: A ``device`` argument whose literal ("cuda"/"cpu") picks the backend (create_pg).
    device_arg: tuple[int | None, str | None] = (None, None)


KNOWN_HELPERS: dict[str, HelperSignature] = {
    # test_c10d_nccl.py: _create_process_group_nccl(store, opts, device_id=None)
    "_create_process_group_nccl": HelperSignature(
        backend="nccl", options_arg=(1, "opts"), store_arg=(0, "store")
    ),
    # test_c10d_gloo.py: _create_process_group_gloo(store, rank, world_size, opts)
    "_create_process_group_gloo": HelperSignature(
        backend="gloo",
        world_size_arg=(2, "world_size"),
        options_arg=(3, "opts"),
        store_arg=(0, "store"),
    ),
    # DistributedTestBase.create_pg(device, world_size=None)
    "create_pg": HelperSignature(world_size_arg=(1, "world_size"), device_arg=(0, "device")),
    # DTensorTestBase.init_pg(eager_init, backend=None)
    "init_pg": HelperSignature(backend_arg=(1, "backend")),
    # common_distributed._dynamo_dist_per_rank_init(rank, world_size, backend=None, ...): a context manager
    "_dynamo_dist_per_rank_init": HelperSignature(
        backend_arg=(2, "backend"), world_size_arg=(1, "world_size")
    ),
}
#: Decorators (torch's) that create the PG around the test: name -> default backend.
KNOWN_PG_DECORATORS = frozenset({"with_comms"})


def config_names(entries: Sequence[str]) -> frozenset[str]:
    """Config entries (qualified or bare) as the bare names the pre-screen and matching use."""
    return frozenset(last_component(entry) for entry in entries)


# -- pre-screen words (cheap, conservative: a file without them cannot have a DL2xx finding) -------


def per_test_words(config: Config) -> frozenset[str]:
    """A per-test spawn class needs one of these in the file."""
    return frozenset(SPAWN_METHODS) | PER_TEST_BASES | config_names(config.per_test_bases)


def creation_words(config: Config) -> frozenset[str]:
    """A PG creation needs one of these in the file (helpers end in one of them too)."""
    return (
        frozenset({"init_process_group", "init_device_mesh"})
        | frozenset(BACKEND_CONSTRUCTORS)
        | frozenset(KNOWN_HELPERS)
        | KNOWN_PG_DECORATORS
        | BASE_RUN_PG
        | config_names(config.pg_helpers)
        | config_names(config.pg_decorators)
    )


def continuous_words(config: Config) -> frozenset[str]:
    return CONTINUOUS_BASES | config_names(config.continuous_bases)


def lifecycle_words() -> frozenset[str]:
    return (
        frozenset({"init_process_group", "destroy_process_group", "destroy_pg"})
        | ABORT_FUNCTIONS
        | ABORT_METHODS
    )

"""What creates, tears down or disturbs a process group: names and call shapes.

Everything here is about one call at a time: which torch.distributed API a call
resolves to (through aliases, via libcst's qualified names), and what a PG creation
call says about backend, world size, timeout, options and store. Walking test bodies
and following helpers is ``distlint.analysis.pg.scan``'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from distlint.analysis.names import QualifiedNames, dotted_name, last_component, qualified_names
from distlint.screens.pg_names import (  # noqa: F401 - names the analysis shares with the pre-screen
    ABORT_FUNCTIONS,
    ABORT_METHODS,
    BACKEND_CONSTRUCTORS,
    KNOWN_HELPERS,
    KNOWN_PG_DECORATORS,
    HelperSignature,
    config_names,
)

# Modules under which torch exposes the c10d API (``import torch.distributed as dist``,
# ``import torch.distributed.distributed_c10d as c10d``, the C extension).
TORCH_DIST_MODULES = (
    "torch.distributed",
    "torch.distributed.distributed_c10d",
    "torch.distributed.c10d",
    "torch._C._distributed_c10d",
    "torch.distributed.device_mesh",
)

STORE_CONSTRUCTORS = frozenset({"FileStore", "TCPStore", "HashStore", "PrefixStore"})
#: Subgroups on top of the default PG: fine on a shared PG.
SUBGROUP_FUNCTIONS = frozenset(
    {"new_group", "new_subgroups", "new_subgroups_by_enumeration", "split_group"}
)
#: Collectives (module functions and PG/backend methods) and waiting on their work.
COLLECTIVES = frozenset(
    {
        "all_reduce",
        "allreduce",
        "all_gather",
        "allgather",
        "all_gather_into_tensor",
        "_allgather_base",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "broadcast",
        "reduce",
        "gather",
        "scatter",
        "all_to_all",
        "alltoall",
        "alltoall_base",
        "all_to_all_single",
        "barrier",
        "monitored_barrier",
        "send",
        "recv",
        "isend",
        "irecv",
        "batch_isend_irecv",
        "all_gather_object",
        "broadcast_object_list",
        "gather_object",
        "scatter_object_list",
        "all_gather_coalesced",
        "all_reduce_coalesced",
        "allreduce_coalesced",
        "allgather_coalesced",
        "send_object_list",
        "recv_object_list",
        "wait",
        "reduce_scatter_tensor_coalesced",
        "allgather_into_tensor_coalesced",
    }
)

#: Helpers of external bases that only tear the PG down.
KNOWN_TEARDOWN_HELPERS = frozenset({"destroy_pg"})
#: Decorators that change PG environment for the test.
ENV_DECORATORS = frozenset({"with_nccl_blocking_wait", "with_dist_debug_levels"})

_PG_ENV = re.compile(r"^(TORCH_NCCL_|NCCL_)|^TORCH_DISTRIBUTED_DEBUG$")


def is_pg_env_key(key: str) -> bool:
    """Environment variables that change how a PG behaves (so a shared PG would not see them)."""
    return bool(_PG_ENV.match(key))


def env_family(key: str) -> str:
    """'TORCH_NCCL_*' / 'NCCL_*' / 'TORCH_DISTRIBUTED_DEBUG' for messages."""
    if key.startswith("TORCH_NCCL_"):
        return "TORCH_NCCL_*"
    if key.startswith("NCCL_"):
        return "NCCL_*"
    return key


def torch_dist_member(names: QualifiedNames, node: cst.CSTNode) -> str | None:
    """``init_process_group`` for ``dist.init_process_group`` (any alias); None for non-c10d names."""
    for qualified in qualified_names(names, node):
        module, _, member = qualified.rpartition(".")
        if module in TORCH_DIST_MODULES:
            return member
        # ``c10d.ProcessGroupNCCL.Options()`` and friends are not members; only direct ones count.
    return None


def callee_last_name(names: QualifiedNames, node: cst.CSTNode) -> str | None:
    """Last component of what a call/decorator refers to (qualified when known, else as written)."""
    if isinstance(node, cst.Call):
        node = node.func
    resolved = qualified_names(names, node)
    if resolved:
        return last_component(sorted(resolved)[0])
    written = dotted_name(node)
    return last_component(written) if written else None


def self_method_name(call: cst.Call) -> str | None:
    """``X`` for ``self.X(...)`` / ``cls.X(...)``."""
    func = call.func
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value in ("self", "cls")
    ):
        return func.attr.value
    return None


def method_name(call: cst.Call) -> str | None:
    """``X`` for any ``<expr>.X(...)``."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def argument(
    call: cst.Call, position: int | None, keyword: str | None
) -> cst.BaseExpression | None:
    """The expression passed at ``position`` or as ``keyword=`` (None when absent or starred)."""
    if keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg.value
    if position is not None:
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in positional[: position + 1]):
            return None
        if position < len(positional):
            return positional[position].value
    return None


def string_literal(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def backend_for_device(device: str | None) -> str | None:
    if device is None:
        return None
    if device.startswith("cuda"):
        return "nccl"
    if device.startswith("cpu"):
        return "gloo"
    return None


# Positional order of ``init_process_group``'s parameters.
INIT_PROCESS_GROUP_PARAMS = (
    "backend",
    "init_method",
    "timeout",
    "world_size",
    "rank",
    "store",
    "group_name",
    "pg_options",
    "device_id",
)


def init_arg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return argument(call, INIT_PROCESS_GROUP_PARAMS.index(name), name)


@dataclass
class CallFacts:
    """What one PG-creating call says (expressions as written at that call)."""

    backend: cst.BaseExpression | None = None
    backend_literal: str | None = None
    world_size: cst.BaseExpression | None = None
    timeout: cst.BaseExpression | None = None
    options: cst.BaseExpression | None = None
    store: cst.BaseExpression | None = None


def init_process_group_facts(call: cst.Call) -> CallFacts:
    backend = init_arg(call, "backend")
    return CallFacts(
        backend=backend,
        backend_literal=string_literal(backend),
        world_size=init_arg(call, "world_size"),
        timeout=init_arg(call, "timeout"),
        options=init_arg(call, "pg_options"),
        store=init_arg(call, "store"),
    )


def constructor_facts(call: cst.Call, backend: str) -> CallFacts:
    # ProcessGroupNCCL(store, rank, size, options) / ProcessGroupGloo(store, rank, size, options)
    return CallFacts(
        backend_literal=backend,
        world_size=argument(call, 2, "size"),
        timeout=argument(call, None, "timeout"),
        options=argument(call, 3, "options"),
        store=argument(call, 0, "store"),
    )


def device_mesh_facts(call: cst.Call) -> CallFacts:
    device = argument(call, 0, "device_type")
    shape = argument(call, 1, "mesh_shape")
    world_size = None
    if isinstance(shape, (cst.Tuple, cst.List)) and len(shape.elements) == 1:
        world_size = shape.elements[0].value
    return CallFacts(
        backend_literal=backend_for_device(string_literal(device)), world_size=world_size
    )


def helper_facts(call: cst.Call, signature: HelperSignature) -> CallFacts:
    backend = argument(call, *signature.backend_arg)
    literal = signature.backend or string_literal(backend)
    if literal is None and signature.device_arg != (None, None):
        literal = backend_for_device(string_literal(argument(call, *signature.device_arg)))
    return CallFacts(
        backend=backend,
        backend_literal=literal,
        world_size=argument(call, *signature.world_size_arg),
        timeout=argument(call, *signature.timeout_arg),
        options=argument(call, *signature.options_arg),
        store=argument(call, *signature.store_arg),
    )


def decorator_call(decorator: cst.Decorator) -> tuple[cst.BaseExpression, cst.Call | None]:
    """The decorator's callee and, for ``@dec(...)``, the call."""
    expression = decorator.decorator
    if isinstance(expression, cst.Call):
        return expression.func, expression
    return expression, None

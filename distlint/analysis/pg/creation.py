"""What creates, tears down or disturbs a process group: names and call shapes.

Everything here is about one call at a time (stdlib ``ast`` nodes): which
torch.distributed API a call resolves to (through aliases, via the module's qualified
names, :class:`~distlint.syntax.ast_names.AstNames`), and what a PG creation call says
about backend, world size, timeout, options and store. Walking test bodies
and following helpers is ``distlint.analysis.pg.scan``'s job.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from distlint.screens.names import last_component
from distlint.screens.pg_names import (  # noqa: F401 - names the analysis shares with the pre-screen
    ABORT_FUNCTIONS,
    ABORT_METHODS,
    BACKEND_CONSTRUCTORS,
    KNOWN_HELPERS,
    KNOWN_PG_DECORATORS,
    HelperSignature,
    config_names,
)
from distlint.syntax.ast_names import AstNames
from distlint.syntax.ast_nodes import dotted_name

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


def torch_dist_member(names: AstNames, node: ast.AST) -> str | None:
    """``init_process_group`` for ``dist.init_process_group`` (any alias); None for non-c10d names."""
    for qualified in names.names_of(node):
        module, _, member = qualified.rpartition(".")
        if module in TORCH_DIST_MODULES:
            return member
        # ``c10d.ProcessGroupNCCL.Options()`` and friends are not members; only direct ones count.
    return None


def callee_last_name(names: AstNames, node: ast.AST) -> str | None:
    """Last component of what a call/decorator refers to (qualified when known, else as written)."""
    if isinstance(node, ast.Call):
        node = node.func
    resolved = names.names_of(node)
    if resolved:
        return last_component(sorted(resolved)[0])
    written = dotted_name(node)
    return last_component(written) if written else None


def self_method_name(call: ast.Call) -> str | None:
    """``X`` for ``self.X(...)`` / ``cls.X(...)``."""
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        return func.attr
    return None


def method_name(call: ast.Call) -> str | None:
    """``X`` for any ``<expr>.X(...)``."""
    return call.func.attr if isinstance(call.func, ast.Attribute) else None


def argument(call: ast.Call, position: int | None, keyword: str | None) -> ast.expr | None:
    """The expression passed at ``position`` or as ``keyword=`` (None when absent or starred).

    ``position`` counts ``call.args`` (positional and ``*`` arguments): a ``*args`` at or
    before it hides it. ``**kwargs`` are no positional arguments (they follow all of them)."""
    if keyword is not None:
        for passed in call.keywords:
            if passed.arg == keyword:
                return passed.value
    if position is not None and position < len(call.args):
        positional = call.args[: position + 1]
        if any(isinstance(a, ast.Starred) for a in positional):
            return None
        return positional[position]
    return None


def string_literal(node: ast.AST | None) -> str | None:
    """The value of a string literal (``"nccl"``; not bytes, not an f-string)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
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


def init_arg(call: ast.Call, name: str) -> ast.expr | None:
    return argument(call, INIT_PROCESS_GROUP_PARAMS.index(name), name)


@dataclass
class CallFacts:
    """What one PG-creating call says (expressions as written at that call)."""

    backend: ast.expr | None = None
    backend_literal: str | None = None
    world_size: ast.expr | None = None
    rank: ast.expr | None = None
    device_id: ast.expr | None = None
    timeout: ast.expr | None = None
    options: ast.expr | None = None
    store: ast.expr | None = None


def init_process_group_facts(call: ast.Call) -> CallFacts:
    backend = init_arg(call, "backend")
    return CallFacts(
        backend=backend,
        backend_literal=string_literal(backend),
        world_size=init_arg(call, "world_size"),
        rank=init_arg(call, "rank"),
        device_id=init_arg(call, "device_id"),
        timeout=init_arg(call, "timeout"),
        options=init_arg(call, "pg_options"),
        store=init_arg(call, "store"),
    )


def constructor_facts(call: ast.Call, backend: str) -> CallFacts:
    # ProcessGroupNCCL(store, rank, size, options) / ProcessGroupGloo(store, rank, size, options)
    return CallFacts(
        backend_literal=backend,
        world_size=argument(call, 2, "size"),
        rank=argument(call, 1, "rank"),
        timeout=argument(call, None, "timeout"),
        options=argument(call, 3, "options"),
        store=argument(call, 0, "store"),
    )


def device_mesh_facts(call: ast.Call) -> CallFacts:
    device = argument(call, 0, "device_type")
    shape = argument(call, 1, "mesh_shape")
    world_size = None
    if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) == 1:
        world_size = shape.elts[0]
        if isinstance(world_size, ast.Starred):  # ``(*sizes,)``: what is unpacked, as before
            world_size = world_size.value
    return CallFacts(
        backend_literal=backend_for_device(string_literal(device)), world_size=world_size
    )


def helper_facts(call: ast.Call, signature: HelperSignature) -> CallFacts:
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


def decorator_call(decorator: ast.expr) -> tuple[ast.expr, ast.Call | None]:
    """The decorator's callee and, for ``@dec(...)``, the call (``decorator``: an entry of a
    def's ``decorator_list``)."""
    if isinstance(decorator, ast.Call):
        return decorator.func, decorator
    return decorator, None

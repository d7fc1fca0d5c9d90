"""Turn a test class's declarations into the pool it needs (or the skip it gets).

The class says ``backend_str()``, ``world_size``, ``opts()``, ``timeout``, maybe
``device_type()`` and ``worker_env`` (environment its ranks start with); this module resolves them against the machine, in the
dispatcher, before any process starts:

* ``"nccl"``: one GPU per rank, world size defaults to the GPU count;
* ``"gloo"``: CPU, world size defaults to 2;
* ``None``: NCCL (torch's default ``cuda:nccl,cpu:gloo`` pair) when CUDA can give
  every rank a GPU, else gloo.

Two classes whose resolved :class:`PoolConfig` is equal share one pool.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from . import environment
from .markers import is_continuous_base, is_fresh_pg
from .protocol import ClassRef
from .role import Role, current_role
from .skips import REGISTRY, TestSkip, gpu_skip

DEFAULT_GLOO_WORLD_SIZE = 2
# torch's MultiProcessTestCase.world_size when a class sets none (common_distributed's
# DEFAULT_WORLD_SIZE): what a ReusedWorkersTest class, moved there from it, runs on.
DEFAULT_FRESH_PG_WORLD_SIZE = 4
UNSET_WORLD_SIZE = -2  # torch's sentinel for "not declared"
TIMEOUT_ENV = "DISTLINT_TEST_TIMEOUT"
# The PG gets a little longer than the test so that, when a collective hangs,
# the dispatcher's deadline fires first and reports every hung rank's stack
# instead of one rank's gloo timeout racing it.
PG_TIMEOUT_MARGIN_S = 2.0
# Environment variables that change between tests without changing what a
# worker would do (pytest rewrites this one for every test).
_VOLATILE_ENV = frozenset({"PYTEST_CURRENT_TEST"})


@dataclasses.dataclass(frozen=True)
class PoolConfig:
    """Everything that makes two pools interchangeable.  Hashable: it is the pool key."""

    backend: str | None  # argument for init_process_group
    backend_name: str  # "gloo" / "nccl" / other
    world_size: int
    bind_cuda: bool
    device_type: str
    pg_timeout_s: float
    options_owner: ClassRef | None  # None when opts() is None, so any such class can share
    environ: tuple = ()
    #: The ranks hold no PG: each test creates its own (ReusedWorkersTest).
    fresh_pg: bool = False


@dataclasses.dataclass(frozen=True)
class ClassPlan:
    """How the tests of one class run here: a pool config, or a skip for all of them."""

    config: PoolConfig | None
    skip: TestSkip | None
    test_timeout_s: float


def class_ref(cls: type) -> ClassRef:
    module = cls.__module__
    file = getattr(sys.modules.get(module), "__file__", None)
    return ClassRef(
        module=module, qualname=cls.__qualname__, file=os.path.abspath(file) if file else None
    )


def timeout_seconds(cls: type) -> float:
    """Per-test timeout: $DISTLINT_TEST_TIMEOUT (seconds) or the class's ``timeout``."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw:
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
        if value <= 0:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r} must be positive")
        return value
    timeout = getattr(cls, "timeout", timedelta(seconds=120))
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if seconds <= 0:
        raise ValueError(f"{cls.__qualname__}.timeout must be positive, got {timeout!r}")
    return seconds


def declared_world_size(cls: type) -> int | None:
    """The class's world size (class attribute or property), None when not declared. 0 is a
    declared size too: ``min(4, torch.cuda.device_count())`` on a machine without GPUs."""
    attr = inspect.getattr_static(cls, "world_size", None)
    if isinstance(attr, property):
        # A property reads instance state: evaluate it on a bare instance, as torch does.
        assert attr.fget is not None  # a property without a getter is no declaration
        value = attr.fget(object.__new__(cls))
    else:
        value = getattr(cls, "world_size", None)
    if value is None or value == UNSET_WORLD_SIZE:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{cls.__qualname__}.world_size must be a positive int, got {value!r}")
    return value


def _call_classmethod(cls: type, name: str) -> Any:
    attr = getattr(cls, name, None)
    return attr() if callable(attr) else attr


def _declared_device_type(cls: type) -> str | None:
    """A device_type the class overrides itself (method, property or string), else None."""
    for klass in cls.__mro__:
        if "device_type" not in vars(klass):
            continue
        if is_continuous_base(klass):
            return None  # the runtime's own default, not a declaration
        attr = vars(klass)["device_type"]
        if isinstance(attr, (classmethod, staticmethod)):
            return attr.__get__(None, cls)()
        if isinstance(attr, property) and attr.fget is not None:
            return attr.fget(cls)
        if callable(attr):
            return attr()
        if hasattr(attr, "__get__") and not isinstance(attr, str):
            # Another descriptor (e.g. a device type readable as attribute and as call).
            value = attr.__get__(None, cls)
            return str(value() if callable(value) else value)
        return attr
    return None


def declared_environment(cls: type) -> dict[str, str]:
    """The class's ``worker_env``: variables its ranks start with, before the PG is created.

    Part of the pool key, so classes that declare different environments never share a pool
    (the ``setUp`` of a per-test class that set ``os.environ[...]`` before spawning becomes this).
    """
    declared = getattr(cls, "worker_env", None) or {}
    if not isinstance(declared, Mapping):
        raise ValueError(
            f"{cls.__qualname__}.worker_env must be a dict of str to str, got {declared!r}"
        )
    for name, value in declared.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(
                f"{cls.__qualname__}.worker_env must map str to str, got {name!r}: {value!r}"
            )
    return dict(declared)


def environ_key(declared: Mapping[str, str] | None = None) -> tuple:
    """The environment a pool's ranks start with: this process's, then the class's ``worker_env``."""
    environ = {k: v for k, v in os.environ.items() if k not in _VOLATILE_ENV}
    environ.update(declared or {})
    return tuple(sorted(environ.items()))


def plan_for_class(cls: type, world_size: int | None = None) -> ClassPlan:
    """Resolve ``cls`` (optionally with a test's required world size) against this machine."""
    test_timeout = timeout_seconds(cls)
    requested = _call_classmethod(cls, "backend_str")
    declared = world_size if world_size is not None else declared_world_size(cls)
    if declared is None and current_role() is Role.INLINE:
        declared = int(os.environ["WORLD_SIZE"])  # under torchrun the launch decides
    gpus = environment.cuda_device_count()

    def skip(entry: TestSkip) -> ClassPlan:
        return ClassPlan(config=None, skip=entry, test_timeout_s=test_timeout)

    if declared == 0:
        # torch's per-test class spawns no rank and reports a pass that tested nothing: a skip says so.
        return skip(
            TestSkip(
                REGISTRY.by_name("small_worldsize").exit_code,
                f"{cls.__qualname__}.world_size is 0 on this machine: no rank to run the test on",
            )
        )

    if is_fresh_pg(cls):
        return ClassPlan(
            config=_fresh_pg_config(cls, declared, test_timeout),
            skip=None,
            test_timeout_s=test_timeout,
        )

    if requested is None:
        wanted = declared or gpus
        if gpus > 0 and environment.backend_available("nccl") and gpus >= wanted:
            backend, name, size, bind_cuda = None, "nccl", wanted, True
        else:
            backend, name, size, bind_cuda = (
                "gloo",
                "gloo",
                declared or DEFAULT_GLOO_WORLD_SIZE,
                False,
            )
    elif requested == "nccl":
        if not environment.backend_available("nccl"):
            return skip(REGISTRY.by_name("nccl"))
        if gpus == 0:
            return skip(REGISTRY.by_name("no_cuda"))
        size = declared or gpus
        if gpus < size:
            return skip(gpu_skip(size))
        backend, name, bind_cuda = "nccl", "nccl", True
    else:
        # "gloo", or another backend c10d may know ("mpi", "ucc", "cpu:gloo,cuda:nccl").
        composite = ":" in requested or "," in requested
        if not composite and not environment.backend_available(requested):
            return skip(REGISTRY.by_name("backend_unavailable"))
        backend, name, bind_cuda = requested, requested, False
        size = declared or DEFAULT_GLOO_WORLD_SIZE

    device_type = _declared_device_type(cls) or ("cuda" if bind_cuda else "cpu")
    options_owner = None if _opts_are_default(cls) else class_ref(cls)
    config = PoolConfig(
        backend=backend,
        backend_name=name,
        world_size=size,
        bind_cuda=bind_cuda,
        device_type=device_type,
        pg_timeout_s=test_timeout + PG_TIMEOUT_MARGIN_S,
        options_owner=options_owner,
    )
    return ClassPlan(config=config, skip=None, test_timeout_s=test_timeout)


def _fresh_pg_config(cls: type, declared: int | None, test_timeout: float) -> PoolConfig:
    """Ranks without a PG: no backend to resolve (each test picks its own, as per test), and no GPU
    bound (a per-test rank starts on the current device too); the tests' own GPU checks skip them."""
    return PoolConfig(
        backend=None,
        backend_name="",
        world_size=declared or DEFAULT_FRESH_PG_WORLD_SIZE,
        bind_cuda=False,
        device_type=_declared_device_type(cls) or "cpu",
        pg_timeout_s=test_timeout + PG_TIMEOUT_MARGIN_S,
        options_owner=None,
        fresh_pg=True,
    )


def _opts_are_default(cls: type) -> bool:
    """True when ``opts()`` gives None, so the PG options cannot differ between classes."""
    try:
        return _call_classmethod(cls, "opts") is None
    except (
        Exception,
        SystemExit,
    ):  # SystemExit: opts() may sys.exit(<skip code>), as torch code does
        # opts() may need a worker (e.g. CUDA); give the class its own pool and
        # let the worker report any real error.
        return False

"""Skip decorators that work in continuous classes, per-test code and plain tests.

Each decorator attaches a *requirement* to the test.  Requirements are checked
in two places:

* in the dispatcher, before a test is sent anywhere (GPU count, backend built
  in, world size parity): an unmet requirement is a skip with the registry's
  message and no worker round trip;
* when the decorated function is called, wherever that is.  In a child process
  (a pool worker, a torch MultiProcessTestCase rank, an ``mp.spawn`` target) the
  skip is signalled the PyTorch way, ``sys.exit(<registry code>)``; in a
  top-level process (a plain unittest, a torchrun rank) it raises
  ``unittest.SkipTest`` with the registry's message.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import os
import sys
import unittest
from collections.abc import Sequence
from typing import Any, Callable, NoReturn, TypeVar, cast

from . import environment
from .markers import is_continuous
from .skips import REGISTRY, RegistrySkip, TestSkip, gpu_skip

F = TypeVar("F", bound=Callable[..., Any])

# Attribute holding a test's requirements (tuple of Requirement), on functions
# and on classes.  Stacked decorators accumulate.
REQUIREMENTS_ATTR = "__distlint_requirements__"
# torch's require_world_size stores the size here; keep the name for tools.
REQUIRED_WORLD_SIZE_ATTR = "_required_world_size"


@dataclasses.dataclass(frozen=True)
class RequirementContext:
    """What a requirement may look at: the world the test runs in."""

    world_size: int | None
    backend: str | None

    def gpu_count(self) -> int:
        return environment.cuda_device_count()


class Requirement:
    """Something a test needs; ``unmet`` names the skip when it is missing."""

    def unmet(self, ctx: RequirementContext) -> TestSkip | None:  # pragma: no cover - interface
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class AtLeastGpus(Requirement):
    count: int
    allow_cpu: bool = False

    def unmet(self, ctx: RequirementContext) -> TestSkip | None:
        gpus = ctx.gpu_count()
        if gpus >= self.count or (self.allow_cpu and gpus == 0):
            return None
        return gpu_skip(self.count)


@dataclasses.dataclass(frozen=True)
class BackendBuilt(Requirement):
    backend: str

    def unmet(self, ctx: RequirementContext) -> TestSkip | None:
        if environment.backend_available(self.backend):
            return None
        name = "nccl" if self.backend == "nccl" else "backend_unavailable"
        return REGISTRY.by_name(name)


@dataclasses.dataclass(frozen=True)
class GpuPerRank(Requirement):
    def unmet(self, ctx: RequirementContext) -> TestSkip | None:
        gpus = ctx.gpu_count()
        if gpus == 0:
            return REGISTRY.by_name("no_cuda")
        if ctx.world_size is not None and gpus < ctx.world_size:
            return gpu_skip(ctx.world_size)
        return None


@dataclasses.dataclass(frozen=True)
class EvenWorldSize(Requirement):
    def unmet(self, ctx: RequirementContext) -> TestSkip | None:
        if ctx.world_size is not None and ctx.world_size % 2 == 1:
            return REGISTRY.by_name("odd_worldsize")
        return None


@dataclasses.dataclass(frozen=True)
class WorldSize(Requirement):
    """The test needs exactly ``size`` ranks.

    A continuous class runs such a test on a pool of that size (the dispatcher
    reads ``_required_world_size``), so there this only checks GPUs for NCCL.
    Code that cannot choose its world size skips when it has fewer ranks.
    """

    size: int

    def unmet(self, ctx: RequirementContext) -> TestSkip | None:
        if ctx.world_size is not None and ctx.world_size < self.size:
            return REGISTRY.by_name("small_worldsize")
        if ctx.backend == "nccl" and ctx.gpu_count() < self.size:
            return gpu_skip(self.size)
        return None


def requirements_of(obj: Any) -> tuple:
    return tuple(getattr(obj, REQUIREMENTS_ATTR, ()))


def first_unmet(requirements: Sequence[Requirement], ctx: RequirementContext) -> TestSkip | None:
    for requirement in requirements:
        skip = requirement.unmet(ctx)
        if skip is not None:
            return skip
    return None


def signal_skip(entry: TestSkip) -> NoReturn:
    """Report a skip the way the current process can: exit code or SkipTest."""
    if multiprocessing.parent_process() is not None:
        sys.exit(entry.exit_code)
    raise RegistrySkip(entry)


def _context_from_call(args: tuple) -> RequirementContext:
    """Best knowledge of the world from inside a running test."""
    world_size: int | None = None
    backend: str | None = None
    test = args[0] if args else None
    size = getattr(test, "world_size", None) if isinstance(test, unittest.TestCase) else None
    if isinstance(size, int) and size > 0:
        world_size = size
    elif os.environ.get("WORLD_SIZE", "").isdigit():
        world_size = int(os.environ["WORLD_SIZE"])
    if test is not None and callable(getattr(test, "backend_str", None)):
        try:
            backend = test.backend_str()
        except Exception:  # a backend_str that needs more context: fall back to env
            backend = None
    backend = backend or os.environ.get("BACKEND") or None
    return RequirementContext(world_size=world_size, backend=backend)


def _requirement_decorator(requirement: Requirement) -> Callable[[F], F]:
    def decorate(obj: F) -> F:
        if isinstance(obj, type):
            return cast(F, _decorate_class(obj, requirement))  # the same class, decorated

        @functools.wraps(obj)
        def checked(*args: Any, **kwargs: Any) -> Any:
            skip = requirement.unmet(_context_from_call(args))
            if skip is not None:
                signal_skip(skip)
            return obj(*args, **kwargs)

        setattr(checked, REQUIREMENTS_ATTR, requirements_of(obj) + (requirement,))
        return checked  # type: ignore[return-value]

    return decorate


def _decorate_class(cls: type, requirement: Requirement) -> type:
    setattr(cls, REQUIREMENTS_ATTR, requirements_of(cls) + (requirement,))
    if is_continuous(cls):
        return cls  # checked by the dispatcher in setUpClass, with the class's world
    # A plain TestCase has no dispatcher: decide now, with what the machine offers.
    skip = requirement.unmet(RequirementContext(world_size=None, backend=None))
    return unittest.skip(skip.message)(cls) if skip is not None else cls


def skip_if_lt_x_gpu(count: int, *, allow_cpu: bool = False) -> Callable[[F], F]:
    """Skip ("multi-gpu-N") unless at least ``count`` CUDA devices are visible."""
    return _requirement_decorator(AtLeastGpus(int(count), allow_cpu))


def requires_nccl() -> Callable[[F], F]:
    """Skip ("nccl", code 76) when c10d was built without NCCL."""
    return _requirement_decorator(BackendBuilt("nccl"))


def requires_gloo() -> Callable[[F], F]:
    """Skip ("backend_unavailable", code 72) when c10d was built without Gloo."""
    return _requirement_decorator(BackendBuilt("gloo"))


def skip_if_no_gpu(func: F) -> F:
    """Skip unless every rank can have its own GPU ("no_cuda" / "multi-gpu-<world size>")."""
    return _requirement_decorator(GpuPerRank())(func)


def skip_if_odd_worldsize(func: F) -> F:
    """Skip ("odd_worldsize", code 87) when the world size is odd."""
    return _requirement_decorator(EvenWorldSize())(func)


def require_world_size(size: int) -> Callable[[F], F]:
    """Run this test with exactly ``size`` ranks (continuous classes give it its own pool)."""

    def decorate(func: F) -> F:
        checked = _requirement_decorator(WorldSize(int(size)))(func)
        setattr(checked, REQUIRED_WORLD_SIZE_ATTR, int(size))
        return checked

    return decorate


# torch spells it both ways.
requires_world_size = require_world_size

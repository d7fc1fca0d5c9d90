"""``@on_ranks`` (the dispatcher's side): a plain pytest test function (or method) run on every rank of a shared pool.

    from distlint.runtime import on_ranks

    @on_ranks(2, backend="gloo")
    def test_all_reduce(rank, world_size):
        t = torch.ones(1) * (rank + 1)
        dist.all_reduce(t)
        assert t.item() == 3

The decorator replaces the function with a *dispatcher*: pytest resolves the test's fixtures
here as usual (``conftest.py``, ``tmp_path``, parametrize arguments) and calls it; it pickles
those values and sends one :class:`~distlint.runtime.protocol.RunFunction` to every rank of the
pool of its (world size, backend, environment), where :mod:`on_ranks_rank` calls the original
function with them and with the rank's own ``rank``, ``world_size``, ``device`` and ``pg``.  The
ranks' results go through the same :func:`~distlint.runtime.outcome.decide_outcome` as the
continuous classes'; this module only turns its outcome into pytest's (skip, fail).

The pools are :mod:`pool_registry`'s, so everything there holds: one pool per key per process
(each pytest-xdist worker its own), a pool that a test leaves broken (timeout, dead rank) is
replaced, every pool is closed when pytest ends.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import pickle
from collections.abc import Mapping
from typing import Any, Callable, TypeVar, cast

from .protocol import ON_RANKS_SPEC_ATTR

#: Fixtures each rank resolves for itself; every other fixture comes from the pytest process.
RANK_FIXTURES = ("rank", "world_size", "device", "pg")
#: What a test waits for its ranks by default, as for the continuous classes (seconds).
DEFAULT_TIMEOUT_S = 120.0
#: The PG timeout of every ``@on_ranks`` pool: longer than any default test timeout, so tests
#: with different ``timeout=`` share a pool and a hung collective is the dispatcher's to report.
POOL_PG_TIMEOUT_S = DEFAULT_TIMEOUT_S + 2.0
#: The attribute on a dispatcher that holds its :class:`OnRanksSpec` (the rank side reads it).

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class OnRanksSpec:
    """What ``@on_ranks(...)`` declared for one test function."""

    world_size: int
    backend: str | None
    timeout_s: float
    env: tuple  # sorted (name, value) pairs the ranks start with
    function: Callable[..., Any]  # the test as written
    rank_arguments: tuple  # which of RANK_FIXTURES it takes


def on_ranks(
    world_size: int,
    *,
    backend: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """Run the decorated pytest test on ``world_size`` ranks of a shared process group.

    ``backend``: ``"gloo"``, ``"nccl"``, ... or None for NCCL when every rank can have a GPU,
    else gloo.  ``timeout``: seconds the test may take on its ranks (``DISTLINT_TEST_TIMEOUT``
    overrides it, as for the continuous classes).  ``env``: variables the ranks start with
    (part of the pool key).  On a class, applies to each of its ``test*`` methods.
    """
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"on_ranks: world_size must be a positive int, got {world_size!r}")
    if backend is not None and not isinstance(backend, str):
        raise ValueError(f"on_ranks: backend must be a str or None, got {backend!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"on_ranks: timeout must be a positive number of seconds, got {timeout!r}")
    environ = dict(env or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items()):
        raise ValueError(f"on_ranks: env must map str to str, got {env!r}")
    declared = dict(
        world_size=world_size,
        backend=backend,
        timeout_s=float(timeout),
        env=tuple(sorted(environ.items())),
    )

    def decorate(target: F) -> F:
        if isinstance(target, type):
            for name, value in list(vars(target).items()):
                if name.startswith("test") and inspect.isfunction(value):
                    setattr(target, name, _dispatcher(value, declared))
            return target
        if not inspect.isfunction(target):
            raise TypeError(f"on_ranks: expected a test function or class, got {target!r}")
        return _dispatcher(target, declared)  # type: ignore[return-value]

    return decorate


def spec_of(obj: Any) -> OnRanksSpec | None:
    """The spec of an ``@on_ranks`` test (function or bound method), None for anything else."""
    return getattr(getattr(obj, "__func__", obj), ON_RANKS_SPEC_ATTR, None)


def _dispatcher(function: Callable[..., Any], declared: dict) -> Callable[..., Any]:
    if ON_RANKS_SPEC_ATTR in vars(function):
        raise TypeError(f"on_ranks: {function.__qualname__} is decorated with @on_ranks twice")
    signature = inspect.signature(function)
    names = list(signature.parameters)
    spec = OnRanksSpec(
        function=function,
        rank_arguments=tuple(name for name in names if name in RANK_FIXTURES),
        **declared,
    )

    @functools.wraps(function)
    def dispatch(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True  # pytest: the report shows the ranks' tracebacks
        _run_on_ranks(spec, args[0] if args else None, kwargs)

    # pytest asks for what this signature names: the rank fixtures are the ranks' to resolve.
    dispatch.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name not in RANK_FIXTURES]
    )
    setattr(dispatch, ON_RANKS_SPEC_ATTR, spec)
    return dispatch


# ---- the dispatcher's side of one test ------------------------------------------------


_declarations: dict[OnRanksSpec, type] = {}


def _declaration(spec: OnRanksSpec) -> type:
    """The decorator's arguments as the class declarations :mod:`resolve` reads (cached)."""
    declaration = _declarations.get(spec)
    if declaration is None:
        backend = spec.backend
        declaration = _declarations[spec] = type(
            spec.function.__qualname__,
            (),
            {
                "backend_str": classmethod(lambda cls: backend),
                "world_size": spec.world_size,
                "timeout": spec.timeout_s,
            },
        )
    return declaration


def current_test_id() -> str:
    """pytest's node id of the test running now (``PYTEST_CURRENT_TEST`` less its phase)."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return current.rsplit(" ", 1)[0] if current else "<on_ranks test>"


def _pickled(values: Mapping[str, Any], what: Callable[[str], str], test: str) -> bytes:
    try:
        return pickle.dumps(dict(values), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - find which one, for a message that names it
        for name, value in values.items():
            try:
                pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001
                raise TypeError(
                    f"{test}: {what(name)} cannot be handed to the ranks, it does not pickle "
                    f"({type(exc).__name__}: {exc}); @on_ranks tests get other fixtures by value"
                ) from None
        raise


def _run_on_ranks(spec: OnRanksSpec, instance: Any, arguments: dict) -> None:
    __tracebackhide__ = True
    import pytest

    from . import pool_registry, rank_state
    from .outcome import Verdict
    from .protocol import RunFunction, next_seq
    from .pytest_plugin import assign_gpus_once
    from .resolve import class_ref, environ_key, plan_for_class

    assign_gpus_once()  # under pytest-xdist: this worker's share of the GPUs, before any pool
    test = current_test_id()
    plan = plan_for_class(_declaration(spec))
    if plan.skip is not None:
        pytest.skip(plan.skip.message)
    assert plan.config is not None  # a plan without a skip has a pool configuration
    config = dataclasses.replace(
        plan.config,
        environ=environ_key(dict(spec.env)),
        pg_timeout_s=max(POOL_PG_TIMEOUT_S, plan.config.pg_timeout_s),
    )
    unpicklable = None
    try:
        message = RunFunction(
            seq=next_seq(),
            test_id=test,
            function=class_ref(cast(type, spec.function)),  # a function has the same names
            arguments=_pickled(arguments, lambda name: f"fixture {name!r}", test),
            owner=None if instance is None else class_ref(type(instance)),
            instance_state=_pickled(vars(instance), lambda name: f"attribute self.{name}", test)
            if instance is not None and vars(instance)
            else None,
        )
    except TypeError as error:
        unpicklable = str(error)
    if unpicklable is not None:
        pytest.fail(unpicklable, pytrace=False)  # outside the except: no chained traceback
    pool = pool_registry.pool_for_test(config, test, plan.test_timeout_s)
    if isinstance(pool, str):
        pytest.fail(pool, pytrace=False)
    outcome = pool.run(message, plan.test_timeout_s)
    rank_state.warn(test, outcome.restored)
    if outcome.verdict is Verdict.SKIP:
        pytest.skip(outcome.message)
    if outcome.verdict is not Verdict.PASS:
        pytest.fail(outcome.message, pytrace=False)


def in_on_ranks_test(item: Any) -> bool:
    """The pytest item is an ``@on_ranks`` test."""
    return spec_of(getattr(item, "obj", None)) is not None

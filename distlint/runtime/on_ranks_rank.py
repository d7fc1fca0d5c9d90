"""The rank's side of an ``@on_ranks`` test: find the function, call it, report what happened.

Like :mod:`execute` for the continuous classes, this never decides an outcome: it returns the
rank's :class:`~distlint.runtime.protocol.RankResult`, tagged with the message's seq.

A test module the rank imports for the first time is compiled with pytest's assertion
rewriting, as pytest imported it in the dispatcher, so a failing ``assert a == b`` reports
its values from the rank (``assert 2.0 == 3``) and not a bare ``AssertionError``.  A module
already imported here (by a fork server's preload) is used as it is.
"""

from __future__ import annotations

import ast
import importlib.util
import pickle
import sys
import time
from typing import Any, Callable, cast

from . import rank_state
from .execute import (
    RankSession,
    classify_exception,
    format_exception,
    rank_result,
    reset_dtensor_rng,
    seed_everything,
)
from .loader import ClassNotFound, load_class, module_for, named_object
from .protocol import ON_RANKS_SPEC_ATTR, ClassRef, RankResult, RunFunction, Status


def run_function(session: RankSession, message: RunFunction) -> RankResult:
    start = time.perf_counter()
    try:
        function = load_function(message.function)
        arguments = pickle.loads(message.arguments)
        instance = _instance(message)
    except BaseException as exc:  # noqa: BLE001 - reported as this rank's error
        status, detail = Status.ERRORED, format_exception(exc)
        restored: tuple[str, ...] = ()
    else:
        status, detail, restored = call(session, function, instance, arguments)
    return rank_result(session, message, status, detail, start, restored)


def call(
    session: RankSession, function: Callable[..., Any], instance: Any, arguments: dict
) -> tuple[Status, str, tuple[str, ...]]:
    """Call the test with its fixtures and this rank's own; how it ended here, and the
    process-wide state it changed (put back: :mod:`distlint.runtime.rank_state`), as a class
    test's ranks do."""
    spec = getattr(function, ON_RANKS_SPEC_ATTR)
    own = {"rank": session.rank, "world_size": session.world_size, "pg": session.pg}
    if "device" in spec.rank_arguments:
        own["device"] = _device()
    arguments = dict(arguments, **{name: own[name] for name in spec.rank_arguments})
    seed_everything()
    reset_dtensor_rng()
    before = rank_state.take()
    try:
        if instance is None:
            spec.function(**arguments)
        else:
            spec.function(instance, **arguments)
    except BaseException as exc:  # noqa: BLE001 - everything a rank raises is reported
        status, detail = classify(exc)
    else:
        status, detail = Status.PASSED, ""
    return status, detail, rank_state.restore(before)


def classify(exc: BaseException) -> tuple[Status, str]:
    """pytest's outcomes (``pytest.skip``, ``pytest.fail``) and assertions, then the runtime's rules."""
    outcomes = sys.modules.get("_pytest.outcomes")  # imported if the test raised one of them
    if outcomes is not None:
        if isinstance(exc, outcomes.Skipped):
            return Status.SKIPPED, str(exc.msg)
        if isinstance(exc, outcomes.Failed):
            return Status.FAILED, str(exc.msg)
    return classify_exception(exc)


def _device() -> Any:
    import torch

    from .role import worker_device_type

    if worker_device_type() == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _instance(message: RunFunction) -> Any:
    if message.owner is None:
        return None
    owner = load_class(message.owner)
    instance = cast(Any, owner).__new__(
        owner
    )  # pytest makes test-class instances without arguments
    if message.instance_state is not None:
        vars(instance).update(pickle.loads(message.instance_state))
    return instance


# ---- finding the function ------------------------------------------------------------


def load_function(ref: ClassRef) -> Callable[..., Any]:
    """The ``@on_ranks`` dispatcher ``ref`` names (module attribute or class attribute)."""
    obj = named_object(
        ref,
        lambda: _module(ref),
        "ranks can only run tests defined at module level or in a module-level class",
    )
    obj = getattr(obj, "__func__", obj)
    if getattr(obj, ON_RANKS_SPEC_ATTR, None) is None:
        raise ClassNotFound(f"{ref.describe()} is not an @on_ranks test")
    return obj


def _module(ref: ClassRef) -> Any:
    module = sys.modules.get(ref.module)
    if module is not None:
        return module
    if not ref.file or not _have_assertion_rewriter():
        return module_for(ref)
    # Errors of the module's own body (its ImportError too) are the test's: not retried.
    return import_with_assertion_rewriting(ref.module, ref.file)


def _have_assertion_rewriter() -> bool:
    try:
        import _pytest.assertion.rewrite  # noqa: F401
    except ImportError:
        return False
    return True


def import_with_assertion_rewriting(name: str, path: str) -> Any:
    """Import the file at ``path`` as module ``name``, its asserts rewritten as pytest does.

    Needs pytest's rewriter (:func:`_have_assertion_rewriter`).
    """
    from _pytest.assertion.rewrite import rewrite_asserts

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"cannot load {path!r} as {name!r}")
    with open(path, "rb") as handle:
        source = handle.read()
    tree = ast.parse(source, filename=path)
    rewrite_asserts(tree, source, path, None)
    code = compile(tree, path, "exec", dont_inherit=True)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module

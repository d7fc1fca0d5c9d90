"""Run one test on one rank, in the process that is that rank.

Used by pool workers and by torchrun ranks alike, so a test body sees the same
world either way: ``self.rank``, ``self.world_size``, ``self.pg`` (the default
group, or a gloo class's options group: :mod:`distlint.runtime.class_pg`),
``setUp``/``tearDown`` around every test, ``setUpClass`` once per class on each rank
before its first test, ``tearDownClass`` when the dispatcher's
class ends, the same RNG seed on every rank, and the process-wide state the rank had before
the test (:mod:`distlint.runtime.rank_state`): what a test changed is put back after it and
named in its result.
"""

from __future__ import annotations

import random
import sys
import time
import traceback
import unittest
from typing import Any, cast

from . import fresh_pg, rank_state
from .protocol import RankResult, RunFunction, RunTest, Status
from .skips import REGISTRY

# torch.testing._internal.common_utils.SEED: tests compare random tensors across
# ranks, so every rank seeds identically before every test.
SEED = 1234


def format_exception(exc: BaseException, skip_frames: int = 0) -> str:
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def classify_exception(
    exc: BaseException, failure_exception: type = AssertionError
) -> tuple[Status, str]:
    """Map what a test raised on a rank to a status and a detail text."""
    if isinstance(exc, unittest.SkipTest):
        return Status.SKIPPED, str(exc)
    if isinstance(exc, SystemExit):
        entry = REGISTRY.by_code(exc.code)
        if entry is not None:
            return Status.SKIPPED, entry.message
        # sys.exit(0) inside a test is not a pass: the test stopped early.
        return (
            Status.ERRORED,
            f"test called sys.exit({exc.code!r}), which is not a registered skip code\n"
            + (format_exception(exc, skip_frames=1)),
        )
    if isinstance(exc, failure_exception):
        return Status.FAILED, format_exception(exc, skip_frames=1)
    return Status.ERRORED, format_exception(exc, skip_frames=1)


_cuda_seed_queued = False


def seed_everything() -> None:
    """What torch's set_rng_seed does, without its per-call cost.

    ``torch.manual_seed`` formats a stack trace for every lazily-queued CUDA
    seed (about 0.2 ms per call, more than a trivial test).  The CPU generator
    is seeded directly; CUDA directly once initialised, and before that by one
    queued seed that torch applies when CUDA initialises.
    """
    global _cuda_seed_queued
    import torch

    random.seed(SEED)
    torch.default_generator.manual_seed(SEED)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(SEED)
    elif not _cuda_seed_queued:
        torch.cuda.manual_seed_all(SEED)
        _cuda_seed_queued = True
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(SEED)


def reset_dtensor_rng() -> None:
    """Forget DTensor's random-op RNG tracker, as a fresh process has none.

    ``torch.distributed.tensor._random`` keeps one tracker per process, created by the
    first random op on a DTensor; per-test ranks start without one, so tests of a shared
    pool must too (a tracker left by one test would change the next test's values).
    """
    module = sys.modules.get("torch.distributed.tensor._random")
    if module is not None and getattr(module, "_rng_tracker", None) is not None:
        setattr(module, "_rng_tracker", None)


class RankSession:
    """What a rank process keeps between tests: its place in the world and set-up classes."""

    def __init__(
        self,
        rank: int,
        world_size: int,
        pg: Any,
        *,
        world: Any,
        run_class_fixtures: bool = True,
        store_dir: str | None = None,
    ) -> None:
        self.rank = rank
        self.world_size = world_size
        #: What tests get as ``self.pg`` (:mod:`distlint.runtime.class_pg`); ``world``: the
        #: default group, the one whose loss ends the pool.
        self.pg = pg
        self.world = world
        # False under torchrun: unittest itself runs setUpClass/tearDownClass in the rank.
        self.run_class_fixtures = run_class_fixtures
        self._class_setup_errors: dict = {}  # cls -> (Status, detail) or None when fine
        #: ReusedWorkersTest: no shared PG; each test gets ``self.file_name`` in this directory
        #: and creates its own PG, which the rank destroys after it (:mod:`fresh_pg`).
        self.store_dir = store_dir
        #: Whether this rank could put away what the last test left (reported with its result).
        self.reusable = True

    # -- class lifecycle ---------------------------------------------------

    def bind_class(self, cls: type) -> None:
        """Give the class this rank's view of the world (torch sets the same class attributes)."""
        import inspect

        setattr(cls, "rank", self.rank)
        if not isinstance(inspect.getattr_static(cls, "world_size", None), property):
            setattr(cls, "world_size", self.world_size)
        setattr(cls, "pg", self.pg)

    def enter_class(self, cls: type) -> tuple[Status, str] | None:
        """Run setUpClass on this rank once; the error (if any) is remembered for later tests."""
        if cls in self._class_setup_errors:
            return self._class_setup_errors[cls]
        self.bind_class(cls)
        error = None
        try:
            cast("type[unittest.TestCase]", cls).setUpClass()
        except BaseException as exc:  # noqa: BLE001 - everything a rank raises is reported
            status, detail = classify_exception(exc)
            error = (
                status,
                f"setUpClass of {cls.__qualname__} raised on rank {self.rank}:\n{detail}",
            )
            if status is Status.SKIPPED:
                error = (status, detail)
            _run_class_cleanups(cls)
        self._class_setup_errors[cls] = error
        return error

    def exit_class(self, cls: type) -> str | None:
        """tearDownClass + class cleanups on this rank, if the class was set up here."""
        if cls not in self._class_setup_errors:
            return None
        setup_error = self._class_setup_errors.pop(cls)
        errors = []
        if setup_error is None:
            try:
                cast("type[unittest.TestCase]", cls).tearDownClass()
            except BaseException as exc:  # noqa: BLE001
                errors.append(format_exception(exc, skip_frames=1))
        errors.extend(_run_class_cleanups(cls))
        return "\n".join(errors) or None

    def entered_classes(self) -> list:
        return [cls for cls, error in self._class_setup_errors.items() if error is None]

    # -- one test -----------------------------------------------------------

    def pg_intact(self) -> bool:
        if self.pg is None:
            return True
        import torch.distributed as dist

        return dist.is_initialized() and dist.group.WORLD is self.world

    def run_test(
        self, cls: type, method_name: str, seq: int = 0
    ) -> tuple[Status, str, tuple[str, ...]]:
        """How the test ended here, its detail, and what process-wide state it changed
        (restored now: :mod:`distlint.runtime.rank_state`). ``seq``: the message's, the same on
        every rank (it names a fresh-PG test's store file)."""
        if self.run_class_fixtures:
            setup_error = self.enter_class(cls)
            if setup_error is not None:
                return (*setup_error, ())
        self.bind_class(cls)
        before = rank_state.take()
        if self.store_dir is None:
            status, detail = self._run_one(cls, method_name, None)
            return status, detail, rank_state.restore(before)
        file_name = fresh_pg.store_file(self.store_dir, seq)
        ranks = fresh_pg.RankBarrier(self.store_dir, self.world_size, seq)
        status, detail = self._run_one(cls, method_name, file_name, ranks.wait)
        self.reusable = fresh_pg.put_away(file_name)
        restored = rank_state.restore(before)
        return (
            status,
            detail,
            tuple(
                line for line in restored if not line.startswith(rank_state.PER_TEST_PG_SETTINGS)
            ),
        )

    def _run_one(
        self,
        cls: type,
        method_name: str,
        file_name: str | None,
        before_teardown: Any = None,
    ) -> tuple[Status, str]:
        """``before_teardown``: called between the body and ``tearDown`` (a fresh-PG rank waits
        there for its peers, as a per-test ``tearDown`` ran once every rank had exited)."""
        test = cls(method_name)
        test.rank = self.rank
        if file_name is not None:
            test.file_name = file_name
        seed_everything()
        reset_dtensor_rng()
        failure_exception = getattr(test, "failureException", AssertionError)
        outcome: tuple[Status, str] = (Status.PASSED, "")
        try:
            test.setUp()
        except BaseException as exc:  # noqa: BLE001
            outcome = classify_exception(exc, failure_exception)
        else:
            try:
                getattr(test, method_name)()
            except BaseException as exc:  # noqa: BLE001
                outcome = classify_exception(exc, failure_exception)
            if before_teardown is not None:
                before_teardown()
            try:
                test.tearDown()
            except BaseException as exc:  # noqa: BLE001
                if outcome[0] is Status.PASSED:
                    outcome = classify_exception(exc, failure_exception)
        for detail in _run_cleanups(test):
            if outcome[0] in (Status.PASSED, Status.SKIPPED):
                outcome = (Status.ERRORED, detail)
        return outcome


def _run_cleanups(test: unittest.TestCase) -> list:
    errors = []
    cleanups = getattr(test, "_cleanups", [])
    while cleanups:
        function, args, kwargs = cleanups.pop()
        try:
            function(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001
            errors.append("cleanup raised:\n" + format_exception(exc, skip_frames=1))
    return errors


def _run_class_cleanups(cls: type) -> list:
    errors = []
    cleanups = getattr(cls, "_class_cleanups", [])
    while cleanups:
        function, args, kwargs = cleanups.pop()
        try:
            function(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001
            errors.append("class cleanup raised:\n" + format_exception(exc, skip_frames=1))
    return errors


def rank_result(
    session: RankSession,
    message: RunTest | RunFunction,
    status: Status,
    detail: str,
    started: float,
    restored: tuple = (),
) -> RankResult:
    """What this rank reports for ``message``: tagged with its seq and test id, timed from
    ``started`` (``time.perf_counter()``), and whether the shared PG survived it."""
    return RankResult(
        seq=message.seq,
        test_id=message.test_id,
        rank=session.rank,
        status=status,
        detail=detail,
        pg_intact=session.pg_intact(),
        duration_s=time.perf_counter() - started,
        restored=restored,
        reusable=session.reusable,
    )

"""MultiProcContinuousTest: many tests, one worker pool, one process group.

Written to be a drop-in for ``torch.testing._internal.common_distributed.
MultiProcContinuousTest`` as far as test code can tell: ``self.rank``,
``self.world_size``, ``self.pg`` (the default group; a gloo class's ``opts()`` group:
:mod:`distlint.runtime.class_pg`), the classmethods
``backend_str()``, ``opts()``, ``device_type()``, the class attribute ``timeout``
(a ``timedelta``), ``world_size`` as class attribute or property,
``MAIN_PROCESS_RANK``.  Unlike torch's class it keeps no pool state on the class
(so a subclass never inherits its base's workers), never skips the rest of a
class after a failure, and bounds every wait.

In the dispatcher (the unittest/pytest process) ``run()`` routes each test to
the ranks and turns their results into one outcome; ``setUp``/``tearDown`` and
the test body run on every rank.  Under torchrun each process is one rank and
runs its tests itself (see :mod:`inline`).
"""

from __future__ import annotations

import dataclasses
import unittest
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar

from . import pool_registry, rank_state
from .case_base import TestCaseBase, check_enabled
from .decorators import REQUIRED_WORLD_SIZE_ATTR, RequirementContext, first_unmet, requirements_of
from .outcome import Outcome, Verdict
from .resolve import ClassPlan, class_ref, declared_environment, environ_key, plan_for_class
from .role import Role, current_role, worker_device_type

# unittest drops frames of modules that set this from failure tracebacks: the
# report then shows the ranks' tracebacks, not the dispatcher's plumbing.
__unittest = True

# Per class, never inherited: a subclass resolves its own plan.
_plans: dict[type, ClassPlan] = {}
# The pool config of (class, world size), with the environment as it was when
# the class started (after its setUpClass): computed once per class run, not
# per test, since a test body runs on the ranks and cannot change it here.
_configs: dict[tuple, Any] = {}


class RankFailure(RuntimeError):
    """A test errored on a rank (exception, death, timeout); the message says which and why."""


def _noop() -> None:
    pass


def raise_for(outcome: Outcome, failure_exception: type) -> None:
    """Report an outcome to the unittest machinery running in this process."""
    __tracebackhide__ = True  # pytest: show the ranks' tracebacks, not this frame
    if outcome.verdict is Verdict.PASS:
        return
    if outcome.verdict is Verdict.SKIP:
        raise unittest.SkipTest(outcome.message)
    if outcome.verdict is Verdict.FAIL:
        raise failure_exception(outcome.message)
    raise RankFailure(outcome.message)


def plan_for(cls: type) -> ClassPlan:
    plan = _plans.get(cls)
    if plan is None:
        plan = _plans[cls] = plan_for_class(cls)
    return plan


class MultiProcContinuousTest(TestCaseBase):
    """A TestCase whose tests run on every rank of a shared, long-lived process group
    (torch's TestCase where it imports: :mod:`distlint.runtime.case_base`)."""

    # How resolve.py and decorators.py recognise this class without importing it.
    _distlint_continuous: ClassVar[bool] = True
    MAIN_PROCESS_RANK: ClassVar[int] = -1
    #: Number of ranks; -2 (torch's "unset") means the backend's default.
    world_size: int = -2
    #: This process's rank; MAIN_PROCESS_RANK in the dispatcher.
    rank: int = -2
    #: The shared process group (also the default group) on a rank.
    pg: Any = None
    #: Per-test timeout, also given to the PG; $DISTLINT_TEST_TIMEOUT (seconds) overrides it.
    timeout: timedelta = timedelta(seconds=120)
    #: Environment the ranks start with, set before the PG is created (``{"TORCH_GLOO_LAZY_INIT": "1"}``).
    #: Part of the pool key: classes with different values never share ranks.
    worker_env: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def backend_str(cls) -> str | None:
        """ "nccl", "gloo", or None for NCCL where CUDA can serve the world size, else gloo."""
        return None

    @classmethod
    def opts(cls, high_priority_stream: bool = False) -> Any:
        """Backend options for init_process_group (e.g. ProcessGroupNCCL.Options); None by default."""
        return None

    @classmethod
    def device_type(cls) -> str:
        """ "cuda" when the ranks use NCCL on one GPU each, else "cpu"."""
        if current_role() is Role.WORKER:
            return worker_device_type()
        config = plan_for(cls).config
        return "cuda" if config is not None and config.bind_cuda else "cpu"

    # -- class fixtures (dispatcher side; on ranks they are plain no-ops) --------

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        if current_role() is Role.WORKER:
            return
        # Resolve afresh for every run of the class: the environment
        # ($DISTLINT_TEST_TIMEOUT, the variables the ranks inherit) may differ.
        plan = _plans[cls] = plan_for_class(cls)
        for key in [key for key in _configs if key[0] is cls]:
            del _configs[key]
        if plan.skip is not None:
            raise unittest.SkipTest(plan.skip.message)
        skip = first_unmet(requirements_of(cls), _context(plan))
        if skip is not None:
            raise unittest.SkipTest(skip.message)
        if current_role() is Role.INLINE:
            from . import inline

            inline.enter_class(cls, plan)

    @classmethod
    def tearDownClass(cls) -> None:
        role = current_role()
        if role is Role.DISPATCHER:
            errors = []
            plan = plan_for(cls)
            for pool in pool_registry.pools_serving(class_ref(cls)):
                errors += pool.exit_class(class_ref(cls), plan.test_timeout_s)
            if errors:
                super().tearDownClass()
                raise RankFailure(
                    f"tearDownClass of {cls.__qualname__} failed:\n" + "\n".join(errors)
                )
        elif role is Role.INLINE:
            from . import inline

            inline.exit_class(cls)
        super().tearDownClass()

    # -- per test ---------------------------------------------------------------

    def run(self, result: unittest.TestResult | None = None) -> unittest.TestResult | None:
        role = current_role()
        if role is Role.WORKER or _in_one_process(self):
            return super().run(result)
        name = self._testMethodName
        body = getattr(self, name, None)
        if body is None:  # unittest's default "runTest" instance: nothing to route
            return super().run(result)
        route = self._dispatch if role is Role.DISPATCHER else self._run_inline

        def routed() -> None:
            __tracebackhide__ = True
            route(body)

        # Keep unittest's view of the method (skip / expectedFailure markers).
        routed.__dict__.update(getattr(body, "__dict__", {}))
        routed.__wrapped__ = body  # type: ignore[attr-defined]
        # The body, setUp and tearDown run on the ranks, not here.
        overrides = {name: routed, "setUp": _noop, "tearDown": _noop}
        # Runners may have put their own instance attributes here (pytest sets the
        # test method); put back exactly what was there.
        saved = {attr: self.__dict__[attr] for attr in overrides if attr in self.__dict__}
        self.__dict__.update(overrides)
        self.rank = self.MAIN_PROCESS_RANK
        try:
            return super().run(result)
        finally:
            for attr in overrides:
                self.__dict__.pop(attr, None)
            self.__dict__.update(saved)

    def _test_plan(self, body: Any) -> ClassPlan:
        check_enabled(self)  # torch's disabled/slow tests: skipped here, before any rank is asked
        cls = type(self)
        plan = plan_for(cls)
        required = getattr(body, REQUIRED_WORLD_SIZE_ATTR, None)
        if required is not None and plan.config is not None and required != plan.config.world_size:
            plan = plan_for_class(cls, world_size=required)
        if plan.skip is not None:
            raise unittest.SkipTest(plan.skip.message)
        # Everything decidable without a rank is decided here: no round trip.
        skip = first_unmet(requirements_of(body), _context(plan))
        if skip is not None:
            raise unittest.SkipTest(skip.message)
        return plan

    def _dispatch(self, body: Any) -> None:
        __tracebackhide__ = True
        plan = self._test_plan(body)
        assert plan.config is not None  # _test_plan raised SkipTest for a plan without one
        key = (type(self), plan.config.world_size)
        config = _configs.get(key)
        if config is None:
            config = _configs[key] = dataclasses.replace(
                plan.config, environ=environ_key(declared_environment(type(self)))
            )
        pool = pool_registry.pool_for_test(
            config, self.id(), plan.test_timeout_s, preload=(type(self).__module__,)
        )
        if isinstance(pool, str):
            raise RankFailure(pool)
        outcome = pool.run_test(
            class_ref(type(self)), self._testMethodName, self.id(), plan.test_timeout_s
        )
        rank_state.report(self, outcome.restored)
        raise_for(outcome, self.failureException)

    def _run_inline(self, body: Any) -> None:
        __tracebackhide__ = True
        from . import inline

        plan = self._test_plan(body)
        outcome = inline.run_test(type(self), self._testMethodName, self.id(), plan)
        rank_state.report(self, outcome.restored)
        raise_for(outcome, self.failureException)


def _in_one_process(test: unittest.TestCase) -> bool:
    """A class in torch's local tensor mode (``create_local_tensor_test_class(X, base_class=
    LocalDTensorContinuousTestBase)`` of a continuous ``X``) simulates every rank in this
    process, on its own fake PG: nothing to route."""
    return getattr(test, "is_local_tensor_enabled", False) is True


def _context(plan: ClassPlan) -> RequirementContext:
    config = plan.config
    if config is None:
        return RequirementContext(world_size=None, backend=None)
    return RequirementContext(world_size=config.world_size, backend=config.backend_name)

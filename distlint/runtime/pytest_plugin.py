"""distlint's pytest plugin: ``@on_ranks`` tests, and fast start for per-test distributed classes.

Registered as a ``pytest11`` entry point, so every pytest run of an environment with
distlint installed loads it; by itself it adds an option and four fixtures, and imports
nothing heavy (no torch).

**Fast start** (torch's per-test ``MultiProcessTestCase`` classes start their ranks from a
fork server that has imported torch, instead of spawning them) is on for the per-test classes
of every file that imports ``distlint.runtime``, and for every per-test class with

* ``pytest --distlint-fast-start ...``, or
* ``distlint_fast_start = true`` in the ``[pytest]`` / ``[tool.pytest.ini_options]`` section;

``DISTLINT_FAST_START=0`` turns it off everywhere.  The former spellings
(``--distlint-fast-spawn``, ``distlint_fast_spawn``, ``DISTLINT_FAST_SPAWN``) still work.
``--distlint-reverse-order`` runs the collected tests last to first (what ``distlint migrate
--verify`` uses to show that a migrated file does not depend on the order its tests share ranks
in).  Then, in each process that runs tests (under pytest-xdist: each worker, not the controller):

* the fork server starts (at once when asked for everywhere; at the first collected per-test
  class of an opted-in file otherwise) and imports torch and torch's test helpers;
* after collection, torch's ``MultiProcessTestCase`` starts the ranks of those classes from it
  (:mod:`fast_start`), and the server preloads the collected modules that define them;
* under pytest-xdist on a GPU machine each worker gets its own share of the
  GPUs (``CUDA_VISIBLE_DEVICES``), so workers never run ranks on one device.

**``@on_ranks`` tests** (:mod:`on_ranks_dispatch`) get ``rank``, ``world_size``, ``device`` and ``pg``
on their ranks; here those fixtures only say that they exist in ``@on_ranks`` tests alone.
Every pool is closed when pytest ends.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import pytest  # this module is only ever loaded by pytest (a pytest11 entry point)

OPTION = "--distlint-fast-start"
INI = "distlint_fast_start"
#: The former names of the option and the ini key, still accepted.
OPTION_ALIASES = ("--distlint-fast-spawn",)
INI_ALIASES = ("distlint_fast_spawn",)
REVERSE_OPTION = "--distlint-reverse-order"
#: ``--distlint-started-log PATH``: one JSON line per test as it starts (``{"nodeid": ...}``), so a
#: run killed mid-test (``distlint migrate --verify`` stops a run that hangs) says which test it was.
STARTED_LOG_OPTION = "--distlint-started-log"
_DEST = "distlint_fast_start"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("distlint", "distlint.runtime")
    group.addoption(
        OPTION,
        *OPTION_ALIASES,
        action="store_true",
        dest=_DEST,
        default=False,
        help="start the ranks of every per-test distributed class (torch's MultiProcessTestCase "
        "and its subclasses) from a fork server that has imported torch, instead of spawning "
        "them; files that import distlint.runtime get it without this "
        "(DISTLINT_FAST_START=0 forces it off)",
    )
    parser.addini(INI, type="bool", default=False, help=f"as {OPTION}")
    for alias in INI_ALIASES:
        parser.addini(alias, type="bool", default=False, help=f"former name of {INI}")
    group.addoption(
        REVERSE_OPTION,
        action="store_true",
        dest="distlint_reverse_order",
        default=False,
        help="run the collected tests in reverse order (last class first, its last test first)",
    )
    group.addoption(
        STARTED_LOG_OPTION,
        dest="distlint_started_log",
        default=None,
        metavar="PATH",
        help="append a JSON line naming each test as it starts",
    )


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    path = _started_log
    if path is not None:
        import json

        with open(path, "a") as log:  # line by line: a killed run keeps what it wrote
            log.write(json.dumps({"nodeid": nodeid}) + "\n")


#: Set by pytest_configure from --distlint-started-log.
_started_log: str | None = None


@pytest.hookimpl(trylast=True)  # after any plugin that filters or reorders the items
def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    if config.getoption("distlint_reverse_order", default=False):
        items.reverse()


def requested(config: Any) -> bool:
    """Fast start asked for everywhere, on the command line or in the ini file."""
    return bool(
        config.getoption(_DEST, default=False)
        or config.getini(INI)
        or any(config.getini(alias) for alias in INI_ALIASES)
    )


def xdist_controller(config: Any) -> bool:
    """The pytest-xdist process that only hands tests to its workers (they load this plugin too)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_configure(config: Any) -> None:
    global _started_log
    _started_log = config.getoption("distlint_started_log", default=None)
    if xdist_controller(config):
        return
    from .early_start import fast_start_off_by

    off_by = fast_start_off_by()
    if off_by is not None:
        if requested(config):
            sys.stderr.write(
                f"distlint.runtime: fast start is off ({off_by}={os.environ[off_by]})\n"
            )
        return
    everywhere = requested(config)
    config.pluginmanager.register(FastStartSession(everywhere), "distlint-fast-start")


def pytest_unconfigure(config: Any) -> None:
    # The pools of @on_ranks tests (and any other this process started) end with pytest.
    registry = sys.modules.get("distlint.runtime.pool_registry")
    if registry is not None:
        registry.shutdown_all()


def _rank_fixture(name: str) -> Any:
    def fixture() -> Any:
        pytest.fail(
            f"the {name!r} fixture exists only in tests decorated with @on_ranks "
            "(from distlint.runtime import on_ranks), where each rank resolves it",
            pytrace=False,
        )

    fixture.__name__ = name
    fixture.__doc__ = f"In an @on_ranks test: this rank's {name} (resolved on the rank)."
    return pytest.fixture(name=name)(fixture)


rank = _rank_fixture("rank")
world_size = _rank_fixture("world_size")
device = _rank_fixture("device")
pg = _rank_fixture("pg")


class FastStartSession:
    """The hooks of a pytest process that runs tests with fast start on: for every per-test
    class (``everywhere``), or for those of the files that import ``distlint.runtime``."""

    def __init__(self, everywhere: bool) -> None:
        self.everywhere = everywhere
        self.started = False
        if everywhere:
            self._start()

    def _start(self, for_torch_tests: bool = True) -> None:
        """Start the fork server; ``for_torch_tests``: with torch's test helpers imported at once
        (per-test classes import them; plain ``@on_ranks`` tests need not pay their ~2 s: the
        modules the ranks do import are preloaded from the manifest all the same)."""
        from . import fast_start, forkserver, pool_registry

        self.started = True
        assign_gpus_once()
        pool_registry.install_exit_hooks()
        hints = fast_start.SUPPORT_MODULES if for_torch_tests else ()
        try:
            forkserver.start(hints=hints, defer=True)
        except Exception:  # noqa: BLE001 - the first rank starts it, or falls back to spawn with a note
            pass

    def pytest_itemcollected(self, item: Any) -> None:
        # The first per-test class of an opted-in file, or the first @on_ranks test, starts the
        # fork server while the rest collects (torch is imported by then: the class derives
        # from torch's; the @on_ranks pools fork their ranks from the same server).
        if self.started:
            return
        if self._gets_fast_start(item):
            self._start()
        elif _is_on_ranks_test(item):
            self._start(for_torch_tests=False)

    def _gets_fast_start(self, item: Any) -> bool:
        from .early_start import continuous_base, per_test_base

        cls = getattr(item, "cls", None)
        if not isinstance(cls, type):
            return False
        if self.everywhere:  # torch's continuous classes too: their class-scope ranks start fast
            bases = tuple(b for b in (per_test_base(), continuous_base()) if b is not None)
            return bool(bases) and issubclass(cls, bases)
        base = per_test_base()
        if base is None or not issubclass(cls, base):
            return False
        from .fast_start import uses_distlint_runtime

        path = getattr(getattr(item, "module", None), "__file__", None)
        return bool(path) and uses_distlint_runtime(path)

    def pytest_collection_finish(self, session: Any) -> None:
        classes = {item.cls for item in session.items if self._gets_fast_start(item)}
        if not classes:
            return
        from . import fast_start, forkserver

        if not self.started:
            self._start()
        if not fast_start.install(None if self.everywhere else classes):
            return
        try:
            forkserver.publish(sorted({cls.__module__ for cls in classes}))
        except OSError as exc:
            sys.stderr.write(
                f"distlint.runtime: could not tell the fork server what to preload: {exc}\n"
            )

    def pytest_unconfigure(self, config: Any) -> None:
        fast_start = sys.modules.get("distlint.runtime.fast_start")
        if fast_start is not None:
            fast_start.uninstall()


def _is_on_ranks_test(item: Any) -> bool:
    dispatch = sys.modules.get("distlint.runtime.on_ranks_dispatch")
    return dispatch is not None and dispatch.in_on_ranks_test(item)


# ---- GPUs for pytest-xdist workers ----------------------------------------------------


def split_devices(visible: Sequence[str], worker: int, workers: int) -> list[str] | None:
    """Worker ``worker`` of ``workers``'s share of ``visible``: equal, disjoint, in order.

    None when there are fewer devices than workers (no equal non-empty share).
    """
    share = len(visible) // workers if workers > 0 else 0
    if share == 0 or not 0 <= worker < workers:
        return None
    return list(visible[worker * share : (worker + 1) * share])


def visible_gpus(environ: dict | None = None) -> list[str]:
    """The GPUs a CUDA process here would see, without importing torch or touching CUDA."""
    env = os.environ if environ is None else environ
    listed = env.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [device.strip() for device in listed.split(",") if device.strip()]
    try:
        count = len(os.listdir("/proc/driver/nvidia/gpus"))  # one entry per GPU the driver sees
    except OSError:
        return []
    return [str(index) for index in range(count)]


_assigned = False


def assign_gpus_once() -> None:
    """:func:`assign_gpus_to_xdist_worker`, once per process (fast start and ``@on_ranks`` both
    ask; a second split would split the share)."""
    global _assigned
    if not _assigned:
        _assigned = True
        assign_gpus_to_xdist_worker()


def assign_gpus_to_xdist_worker() -> list[str] | None:
    """In a pytest-xdist worker: set CUDA_VISIBLE_DEVICES to this worker's share of the GPUs."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (name.startswith("gw") and name[2:].isdigit() and count.isdigit()):
        return None
    gpus = visible_gpus()
    if not gpus:
        return None
    share = split_devices(gpus, int(name[2:]), int(count))
    if share is None:
        sys.stderr.write(
            f"distlint.runtime: {len(gpus)} GPU(s) for {count} xdist workers: not split, workers share them\n"
        )
        return None
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(share)
    return share

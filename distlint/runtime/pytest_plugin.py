"""distlint's pytest plugin: fast start for PyTorch-style per-test distributed classes, when asked.

Registered as a ``pytest11`` entry point, so every pytest run of an environment
with distlint installed loads it: by itself it only adds an option, and it
imports nothing heavy (no torch) unless fast start is turned on, by either

* ``pytest --distlint-fast-spawn ...``, or
* ``distlint_fast_spawn = true`` in the ``[pytest]`` / ``[tool.pytest.ini_options]`` section;

and not forced off by ``DISTLINT_FAST_SPAWN=0``.  ``--distlint-reverse-order`` runs the
collected tests last to first (what ``distlint migrate --verify`` uses to show that a migrated
file does not depend on the order its tests share ranks in).  Then, in each process that
runs tests (under pytest-xdist: each worker, not the controller):

* the fork server starts at once and imports torch and torch's test helpers
  while pytest collects;
* after collection, torch's ``MultiProcessTestCase`` starts its ranks from it
  (:mod:`fast_start`), and the server preloads the collected modules that
  define per-test classes;
* under pytest-xdist on a GPU machine each worker gets its own share of the
  GPUs (``CUDA_VISIBLE_DEVICES``), so workers never run ranks on one device.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import pytest  # this module is only ever loaded by pytest (a pytest11 entry point)

OPTION = "--distlint-fast-spawn"
INI = "distlint_fast_spawn"
REVERSE_OPTION = "--distlint-reverse-order"
_DEST = "distlint_fast_spawn"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("distlint", "distlint.runtime")
    group.addoption(
        OPTION,
        action="store_true",
        dest=_DEST,
        default=False,
        help="start the ranks of per-test distributed classes (torch's MultiProcessTestCase and its "
        "subclasses) from a fork server that has imported torch, instead of spawning them "
        "(DISTLINT_FAST_SPAWN=0 forces it off)",
    )
    parser.addini(INI, type="bool", default=False, help=f"as {OPTION}")
    group.addoption(
        REVERSE_OPTION,
        action="store_true",
        dest="distlint_reverse_order",
        default=False,
        help="run the collected tests in reverse order (last class first, its last test first)",
    )


@pytest.hookimpl(trylast=True)  # after any plugin that filters or reorders the items
def pytest_collection_modifyitems(session: Any, config: Any, items: list) -> None:
    if config.getoption("distlint_reverse_order", default=False):
        items.reverse()


def requested(config: Any) -> bool:
    """Fast start asked for on the command line or in the ini file."""
    return bool(config.getoption(_DEST, default=False) or config.getini(INI))


def xdist_controller(config: Any) -> bool:
    """The pytest-xdist process that only hands tests to its workers (they load this plugin too)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_configure(config: Any) -> None:
    if not requested(config) or xdist_controller(config):
        return
    from .early_start import FAST_SPAWN_ENV, fast_spawn_disabled

    if fast_spawn_disabled():
        sys.stderr.write(
            f"distlint.runtime: fast start is off ({FAST_SPAWN_ENV}={os.environ[FAST_SPAWN_ENV]})\n"
        )
        return
    config.pluginmanager.register(FastStartSession(), "distlint-fast-start")


class FastStartSession:
    """The hooks of a pytest process that runs tests with fast start on."""

    def __init__(self) -> None:
        from . import fast_start, forkserver, pool_registry

        assign_gpus_to_xdist_worker()
        pool_registry.install_exit_hooks()
        try:
            forkserver.start(hints=fast_start.SUPPORT_MODULES, defer=True)
        except Exception:  # noqa: BLE001 - the first rank starts it, or falls back to spawn with a note
            pass

    def pytest_collection_finish(self, session: Any) -> None:
        from . import fast_start, forkserver

        modules: list[str] = []
        if fast_start.install():
            base = fast_start.per_test_base()
            for item in session.items:
                cls = getattr(item, "cls", None)
                if isinstance(cls, type) and issubclass(cls, base):
                    modules.append(cls.__module__)
        try:
            forkserver.publish(modules)
        except OSError as exc:
            sys.stderr.write(
                f"distlint.runtime: could not tell the fork server what to preload: {exc}\n"
            )

    def pytest_unconfigure(self, config: Any) -> None:
        from . import fast_start, pool_registry

        fast_start.uninstall()
        pool_registry.shutdown_all()


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

"""Start the fork server while ``python test_x.py`` is still importing, so torch loads on both cores at once.

A test file run as a script imports ``distlint.runtime`` near its top (the
``run_tests`` of its main block) and then spends seconds importing torch and
torch's test helpers.  The fork server needs the same imports before it can
fork a rank.  Started here, at the first import of ``distlint.runtime`` from the
script's own top level, it imports them in parallel; what the script itself
defines (``__main__``) follows once ``run_tests()`` publishes the manifest, and
never before: a script that never runs its tests never has its top level run
twice.

Nothing happens (and nothing is imported) unless every condition holds: the
import comes from ``__main__``'s module-level code; this is not a torchrun rank,
a multiprocessing child or the fork server; ``DISTLINT_FAST_START`` and
``DISTLINT_START_METHOD`` allow it; the fork server is safe here.
"""

from __future__ import annotations

import functools
import os
import sys
from types import FrameType
from typing import Any

#: Set to 0 (or false/no/off) to turn fast start off: per-test classes spawn, nothing starts early.
FAST_START_ENV = "DISTLINT_FAST_START"
#: The variable's former name, still read (either one set to 0 turns fast start off).
FAST_SPAWN_ENV = "DISTLINT_FAST_SPAWN"
_OFF = {"0", "false", "no", "off"}


def fast_start_off_by() -> str | None:
    """The variable that turns fast start off here (``DISTLINT_FAST_START=0``), or None."""
    for name in (FAST_START_ENV, FAST_SPAWN_ENV):
        if os.environ.get(name, "").strip().lower() in _OFF:
            return name
    return None


def fast_spawn_disabled() -> bool:
    return fast_start_off_by() is not None


def _importer_frame() -> FrameType | None:
    """The frame whose code is importing ``distlint.runtime`` (import machinery and this package skipped)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        filename = frame.f_code.co_filename
        if not (filename.startswith("<frozen") or name == "distlint.runtime" or name == __name__):
            return frame
        frame = frame.f_back
    return None


def _in_child_or_server() -> bool:
    if "distlint.runtime.forkserver_preload" in sys.modules:
        return True  # the fork server, or a process it forked
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return False  # a multiprocessing child has imported multiprocessing before anything else
    current = mp.current_process()
    return mp.parent_process() is not None or bool(getattr(current, "_inheriting", False))


#: torch's module of ``MultiProcessTestCase`` (fast start patches that class).
COMMON_DISTRIBUTED = "torch.testing._internal.common_distributed"


def per_test_base() -> Any:
    """torch's ``MultiProcessTestCase``, if torch's test helpers are imported (never imports them)."""
    module = sys.modules.get(COMMON_DISTRIBUTED)
    return getattr(module, "MultiProcessTestCase", None)


def continuous_base() -> Any:
    """torch's ``MultiProcContinuousTest``, if torch's test helpers are imported (never imports them)."""
    return getattr(sys.modules.get(COMMON_DISTRIBUTED), "MultiProcContinuousTest", None)


@functools.lru_cache(maxsize=256)
def imported_modules(path: str, top_level: bool = True) -> tuple[str, ...]:
    """The modules a file imports (read with ast, nothing imported; each file parsed once per
    process): at its top level, or anywhere in it. ``from a.b import c`` names ``a.b`` and
    ``a.b.c`` (``c`` may be a module)."""
    import ast

    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return ()
    names: list[str] = []
    for node in tree.body if top_level else ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
    return tuple(dict.fromkeys(names))


def torch_imports_of(path: str) -> list[str]:
    """The ``torch.*`` modules a script imports at its top level."""
    return [name for name in imported_modules(path) if name == "torch" or name.startswith("torch.")]


def from_main_module() -> bool | None:
    """Called by ``distlint/runtime/__init__.py``; starts the fork server if this is a script's own import."""
    from .role import launched_by_torchrun

    if fast_spawn_disabled() or launched_by_torchrun() or _in_child_or_server():
        return None
    if os.environ.get("DISTLINT_START_METHOD", "").strip().lower() == "spawn":
        return None
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = _importer_frame()
    if (
        not path
        or frame is None
        or frame.f_globals is not vars(main)
        or frame.f_code.co_name != "<module>"
    ):
        return None
    from . import forkserver

    try:
        started = forkserver.start(hints=torch_imports_of(path), defer=True)
    except Exception:  # noqa: BLE001 - starting early is an optimisation: the first use starts it again
        return None
    from . import pool_registry

    pool_registry.install_exit_hooks()  # at exit or on SIGTERM the server stops, after the pools
    return started

"""Imported by the fork server, and only there, before it forks any process.

multiprocessing's fork server imports the names in its preload list and then
forks every child from itself, so whatever is imported here is imported once
instead of once per rank.  The dispatcher (:mod:`forkserver`) passes a spec in
``$DISTLINT_FORKSERVER_SPEC``:

* ``argv``, ``sys_path``: the dispatcher's, so modules that read them at import
  (torch's ``common_utils`` parses ``sys.argv``) see what a spawned rank sees;
* ``modules``: imported at once (torch, the runtime, hints);
* ``then``: a manifest given at start, or ``manifest``: the path of one the
  dispatcher writes once it knows what the ranks will import; the server waits
  for it (and exits if the dispatcher goes first).  A manifest names more
  modules, the new ``sys_path`` and how to re-create ``__main__``.

Nothing here may end the server by accident: a module that fails to import is
left for the child to import (and fail on) itself, exactly as with spawn.
CUDA must not be initialised here (forked children could not use it): CUDA
availability is checked through NVML while importing, and a server that did
initialise CUDA exits, so the dispatcher falls back to spawn.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterable
from typing import Any

SPEC_ENV = "DISTLINT_FORKSERVER_SPEC"  # the same name as forkserver.SPEC_ENV (that module is not imported here)
MANIFEST_POLL_S = 0.01
EXIT_CUDA_INITIALISED = 3


def _import_all(names: Iterable[str]) -> None:
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - SystemExit too: the child meets the same error itself
            pass


def _recreate_main(entry: dict[str, str]) -> None:
    """Import ``__main__`` as multiprocessing's children do (as ``__mp_main__``), so they find it done."""
    from multiprocessing import process, spawn

    # What multiprocessing sets while a child imports main (private: not in typeshed).
    process.current_process()._inheriting = True  # type: ignore[attr-defined]
    try:
        if "init_main_from_name" in entry:
            spawn._fixup_main_from_name(entry["init_main_from_name"])  # type: ignore[attr-defined]
        elif "init_main_from_path" in entry:
            spawn.import_main_path(entry["init_main_from_path"])
    except BaseException:  # noqa: BLE001 - the child re-runs main itself and reports what it raises
        pass
    finally:
        del process.current_process()._inheriting  # type: ignore[attr-defined]


def _apply(manifest: dict[str, Any]) -> None:
    if "sys_path" in manifest:
        sys.path[:] = manifest["sys_path"]
    _import_all(manifest.get("modules", ()))
    if manifest.get("main"):
        _recreate_main(manifest["main"])


def _wait_for_manifest(path: str) -> dict[str, Any]:
    """Poll for the manifest; leave if the dispatcher (our parent) is gone."""
    parent = os.getppid()
    while not os.path.exists(path):
        if os.getppid() != parent:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
            os._exit(0)
        time.sleep(MANIFEST_POLL_S)
    with open(path) as handle:
        return json.load(handle)


def _report(path: str, names: Iterable[str], prefixes: Iterable[str]) -> None:
    """Tell the dispatcher which values of the variables torch reads at import this server imported under."""
    names, prefixes = set(names), tuple(prefixes)
    values = {
        k: v for k, v in os.environ.items() if k in names or (prefixes and k.startswith(prefixes))
    }
    try:
        with open(f"{path}.tmp", "w") as handle:
            json.dump(values, handle)
        os.replace(f"{path}.tmp", path)
    except OSError:
        pass  # the dispatcher then compares against nothing: every such variable it has means spawn


def _leave_without_teardown(server_pid: int, folder: str) -> None:
    """The server's last exit handler: remove its folder (the dispatcher may have been killed) and
    skip tearing torch down (a second or more): nothing needs it.

    Registered before anything is imported, so every other handler has run by then.
    Forked children inherit the registration (and run it when they exit); in them it does nothing.
    """
    if os.getpid() == server_pid:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _preload() -> None:
    import atexit

    raw = os.environ.pop(SPEC_ENV, None)
    spec = json.loads(raw) if raw else {}
    atexit.register(_leave_without_teardown, os.getpid(), os.path.dirname(spec.get("report", "")))
    if "argv" in spec:
        sys.argv[:] = spec["argv"]
    if "sys_path" in spec:
        sys.path[:] = spec["sys_path"]
    previous = os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = (
        "1"  # torch.cuda.is_available() without a CUDA context
    )
    try:
        _import_all(spec.get("modules", ()))
        if "then" in spec:
            _apply(spec["then"])
        elif spec.get("manifest"):
            manifest = _wait_for_manifest(spec["manifest"])
            if manifest.get("stop"):
                os._exit(0)
            _apply(manifest)
    finally:
        if previous is None:
            os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        else:
            os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = previous
    if spec.get("report"):
        _report(spec["report"], *spec.get("import_time_env", ((), ())))
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        sys.stderr.write(
            "distlint.runtime: CUDA was initialised while the fork server preloaded; it exits\n"
        )
        sys.stderr.flush()
        os._exit(EXIT_CUDA_INITIALISED)
    # Children inherit these buffers: nothing may be left in them to be written twice.
    sys.stdout.flush()
    sys.stderr.flush()


_preload()

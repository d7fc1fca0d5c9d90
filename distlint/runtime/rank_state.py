"""Process-wide state a test changes on a shared rank: snapshot before, restore after, say what.

A per-test rank process ends with its test, so whatever the test left behind (a default
dtype, an environment variable, a process group) ends with it. The ranks of a continuous
class run test after test, and the next test would inherit it: a test that never restores
``torch.set_default_dtype`` passes alone and breaks a later one. torch's ``TestCase`` resets
none of what is listed here (its ``setUp`` seeds the RNGs, which
:func:`distlint.runtime.execute.seed_everything` does before every test already).

:func:`take` reads the state before ``setUp``; :func:`restore` puts back what differs after
``tearDown`` and the cleanups, and returns one line per change, which the rank sends with its
result (``RankResult.restored``) so the report names the test that changed it. "Fresh" means
the state the rank had before the test started: after the process group was made and the
class's ``setUpClass`` ran on the rank (what ``setUpClass`` sets belongs to the class and
stays for all its tests).

Cheap by construction (``benchmarks/rank_state.py``): a few getters, one copy of the
environment's byte strings, one of the process-group registry's keys; nothing is restored,
and nothing is formatted, unless it changed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import warnings
from typing import Any, Callable

from .peer_wait import await_peers, default_store

#: Where the dispatcher keeps a test's restored-state lines on the test instance (the JUnit
#: report writes them as the testcase property ``distlint.restored_state``).
RESTORED_ATTR = "_distlint_restored_state"


class RestoredStateWarning(UserWarning):
    """A test changed process-wide state on its ranks; it was put back before the next test."""


# The environment as the OS holds it (bytes on POSIX): copying it decodes nothing.
_environ_data: Any = getattr(os.environ, "_data", None)


@dataclasses.dataclass(frozen=True)
class _Setting:
    """One process-wide torch setting: how to read it, how to put it back, how to show it."""

    name: str
    read: Callable[[Any], Any]
    write: Callable[[Any, Any], None]
    show: Callable[[Any], str] = repr


def _device_context(torch: Any) -> Any:
    # What torch.set_default_device installs; torch.get_default_device would allocate a tensor.
    return getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)


def _set_device_context(torch: Any, context: Any) -> None:
    torch.set_default_device(None if context is None else context.device)


def _show_device_context(context: Any) -> str:
    return "none" if context is None else str(context.device)


def _deterministic(torch: Any) -> tuple[bool, bool]:
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )


def _set_deterministic(torch: Any, value: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(value[0], warn_only=value[1])


def _show_deterministic(value: tuple[bool, bool]) -> str:
    return f"{value[0]} (warn_only={value[1]})" if value[0] else "False"


def _anomaly(torch: Any) -> tuple[bool, bool]:
    return torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()


def _set_anomaly(torch: Any, value: tuple[bool, bool]) -> None:
    torch.set_anomaly_enabled(value[0], value[1])


def _debug_level(torch: Any) -> Any:
    return torch.distributed.get_debug_level()


def _set_debug_level(torch: Any, value: Any) -> None:
    torch.distributed.set_debug_level(value)


SETTINGS: tuple[_Setting, ...] = (
    _Setting(
        "default dtype",
        lambda torch: torch.get_default_dtype(),
        lambda torch, value: torch.set_default_dtype(value),
        str,
    ),
    _Setting("default device", _device_context, _set_device_context, _show_device_context),
    _Setting(
        "grad mode",
        lambda torch: torch.is_grad_enabled(),
        lambda torch, value: torch.set_grad_enabled(value),
    ),
    _Setting("deterministic algorithms", _deterministic, _set_deterministic, _show_deterministic),
    _Setting("anomaly detection", _anomaly, _set_anomaly, lambda value: str(value[0])),
    _Setting(
        "float32 matmul precision",
        lambda torch: torch.get_float32_matmul_precision(),
        lambda torch, value: torch.set_float32_matmul_precision(value),
    ),
    _Setting(
        "intra-op threads",
        lambda torch: torch.get_num_threads(),
        lambda torch, value: torch.set_num_threads(value),
    ),
    # with_dist_debug_levels sets it from the environment and never puts it back.
    _Setting("distributed debug level", _debug_level, _set_debug_level, str),
)

#: What a test creating its own PG is expected to change (ReusedWorkersTest): put back, not
#: reported (its per-test original set them on a process that ended with it).
PER_TEST_PG_SETTINGS = ("os.environ", "distributed debug level")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    settings: tuple
    environ: dict
    cwd: str | None
    groups: tuple  # process groups registered with torch.distributed (the default one too)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed
        return None


def _environ_copy() -> dict:
    return dict(_environ_data) if _environ_data is not None else dict(os.environ)


def _groups() -> tuple:
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if c10d is None:
        return ()
    return tuple(c10d._world.pg_map)


#: A setting this torch cannot read (an older torch without the getter): never compared.
_UNREADABLE = object()


def _read(setting: _Setting, torch: Any) -> Any:
    try:
        return setting.read(torch)
    except Exception:  # noqa: BLE001 - a snapshot never fails a test
        return _UNREADABLE


def take() -> Snapshot:
    """The process-wide state now (torch must be imported)."""
    import torch

    return Snapshot(
        settings=tuple(_read(setting, torch) for setting in SETTINGS),
        environ=_environ_copy(),
        cwd=_cwd(),
        groups=_groups(),
    )


def restore(before: Snapshot) -> tuple[str, ...]:
    """Put back what changed since ``before``; one line per change ("what: now (was before)").

    Never raises: a setting that cannot be put back is named with the error instead.
    """
    import torch

    changes = []
    for setting, old in zip(SETTINGS, before.settings):
        new = _read(setting, torch)
        if new is old or new == old or _UNREADABLE in (old, new):
            continue
        line = f"{setting.name} {setting.show(new)} (was {setting.show(old)})"
        try:
            setting.write(torch, old)
        except Exception as exc:  # noqa: BLE001 - reported, never fails the test
            line += f"; not restored: {exc!r}"
        changes.append(line)
    environ = _environ_copy()
    if environ != before.environ:
        try:
            changes.append(_restore_environ(before.environ, environ))
        except Exception as exc:  # noqa: BLE001 - e.g. a name putenv refuses
            changes.append(f"os.environ changed; not restored: {exc!r}")
    cwd = _cwd()
    if cwd != before.cwd and before.cwd is not None:
        line = f"cwd {cwd or '(removed)'} (was {before.cwd})"
        try:
            os.chdir(before.cwd)
        except OSError as exc:
            line += f"; not restored: {exc}"
        changes.append(line)
    groups = _groups()
    if groups != before.groups:
        line = _destroy_new_groups(before.groups, groups)
        if line:
            changes.append(line)
    return tuple(changes)


def _decode(name: Any) -> str:
    return os.fsdecode(name) if isinstance(name, bytes) else name


def _restore_environ(old: dict, new: dict) -> str:
    added = [key for key in new if key not in old]
    removed = [key for key in old if key not in new]
    changed = [key for key in new if key in old and new[key] != old[key]]
    for key in added:
        del os.environ[_decode(key)]
    for key in removed + changed:
        os.environ[_decode(key)] = _decode(old[key])
    # Names only: values may be secrets, and the report is read in CI logs.
    parts = [
        f"{label} {', '.join(sorted(_decode(key) for key in keys))}"
        for label, keys in (("set", added), ("changed", changed), ("removed", removed))
        if keys
    ]
    return "os.environ: " + "; ".join(parts)


def _destroy_new_groups(old: tuple, new: tuple) -> str:
    """Destroy the process groups the test created and left (a fresh process has none of them).

    Only groups created during the test: the default group and the groups the class's
    ``setUpClass`` made are in ``old``, and a test that destroyed the default group is an
    error of its own (:mod:`distlint.runtime.outcome`)."""
    import torch.distributed as dist

    known = set(old)
    default = dist.group.WORLD if dist.is_initialized() else None
    created = [pg for pg in new if pg not in known and pg is not default]
    if not created:
        return ""
    _await_peers(dist, created)
    failures = []
    for pg in reversed(created):  # newest first, as torch shuts groups down
        try:
            dist.destroy_process_group(pg)
        except Exception as exc:  # noqa: BLE001 - reported, never fails the test
            failures.append(repr(exc))
    done = "destroyed now" if not failures else "destroy failed: " + "; ".join(failures)
    return f"process groups: {len(created)} created and not destroyed ({done})"


#: How long a rank waits for its peers before destroying a group a test left (a peer that
#: failed the test may never come; the group is destroyed all the same).
PEER_WAIT_S = 5.0


def _await_peers(dist: Any, groups: list) -> None:
    """Wait (bounded) until every member of ``groups`` is here too, before any closes its side.

    torch's ``new_group`` returns on a rank as soon as its own gloo pairs are connected (no
    barrier unless ``TORCH_DIST_INIT_BARRIER=1``), while a peer may still be finishing the
    handshake: destroying the group at once fails that peer's ``new_group`` with "Connection
    closed by peer". The count lives in the default group's store, keyed by the group's name
    (the same on every rank)."""
    store = default_store()
    if store is None:
        return
    deadline = time.monotonic() + PEER_WAIT_S
    for pg in groups:
        try:
            key = f"distlint/left-group/{dist.distributed_c10d._get_process_group_name(pg)}"
            size = pg.size()
        except Exception:  # noqa: BLE001 - a group torch cannot name: destroyed without waiting
            continue
        await_peers(store, key, size, max(0.0, deadline - time.monotonic()))


def report(test: Any, restored: tuple[str, ...]) -> None:
    """Dispatcher side, for a unittest test: :func:`warn`, and an attribute the JUnit report
    reads."""
    if restored:
        setattr(test, RESTORED_ATTR, restored)
        warn(test.id(), restored)


def warn(test_id: str, restored: tuple[str, ...]) -> None:
    """Dispatcher side: say which test changed what, without changing its outcome.

    A warning (pytest lists it under the test; unittest prints it). Under ``-W error`` the
    warning would fail the test, so it is then written to stderr instead."""
    if not restored:
        return
    message = (
        f"{test_id} changed process-wide state that later tests on its ranks would inherit "
        f"(restored): {'; '.join(restored)}"
    )
    try:
        warnings.warn(RestoredStateWarning(message), stacklevel=4)
    except RestoredStateWarning:
        sys.stderr.write(f"distlint.runtime: {message}\n")

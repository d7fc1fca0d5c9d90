"""Facts about this machine that decide skips: GPUs and built-in backends.

These are answered in the dispatcher, before any worker exists, so a test that
cannot run never costs a process.  Answers are cached: they do not change while
a suite runs.  None of them initialises CUDA, which would make forking unsafe.
"""

from __future__ import annotations

import functools
import os
import sys


@functools.cache
def cuda_device_count() -> int:
    """Visible CUDA devices; 0 on CPU-only builds.  Does not create a CUDA context."""
    import torch

    if not torch.cuda.is_available():
        return 0
    return torch.cuda.device_count()


@functools.cache
def backend_available(name: str) -> bool:
    """Whether c10d was built with this backend ("gloo", "nccl", "mpi", ...)."""
    import torch.distributed as dist

    if not dist.is_available():
        return False
    checks = {
        "gloo": dist.is_gloo_available,
        "nccl": dist.is_nccl_available,
        "mpi": dist.is_mpi_available,
        "ucc": dist.is_ucc_available,
    }
    check = checks.get(name.lower())
    if check is not None:
        return bool(check())
    is_backend_available = getattr(dist, "is_backend_available", None)
    # Unknown names (third-party backends) are tried by the workers instead.
    return True if is_backend_available is None else bool(is_backend_available(name))


def cuda_initialized_here() -> bool:
    """True when this process already created a CUDA context (forking is then unsafe).

    Without torch imported, torch cannot have done so: False (and torch stays unimported).
    """
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized())


def cuda_build_version() -> tuple[int, ...] | None:
    """The CUDA version torch was built with, or None for CPU/ROCm builds (or no torch).

    Read from ``torch.version`` once torch is imported; before that from torch's
    ``version.py`` file, so the fork server can be started before torch is imported.
    """
    torch = sys.modules.get("torch")
    version = (
        getattr(torch.version, "cuda", None) if torch is not None else _torch_version_field("cuda")
    )
    if not version:
        return None
    try:
        return tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return None


@functools.cache
def _torch_version_field(name: str) -> str | None:
    """A literal assignment in the installed torch's ``version.py``, without importing torch."""
    import ast
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if (
            any(isinstance(t, ast.Name) and t.id == name for t in targets)
            and node.value is not None
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}

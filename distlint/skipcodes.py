"""PyTorch's distributed-test skip exit codes, as plain data (no torch import).

The single source of the codes: ``distlint.runtime.skips`` builds its registry from
``PYTORCH_SKIPS``, and the DL301 lint rule reads it to name raw ``sys.exit(N)`` codes.
Values match ``TEST_SKIPS`` in ``torch/testing/_internal/common_distributed.py``.
"""

from __future__ import annotations

from typing import NamedTuple


class SkipCode(NamedTuple):
    exit_code: int
    message: str


PYTORCH_SKIPS: dict[str, SkipCode] = {
    "backend_unavailable": SkipCode(72, "Skipped because distributed backend is not available."),
    "small_worldsize": SkipCode(73, "Skipped due to small world size."),
    "odd_worldsize": SkipCode(87, "Skipped due to odd world size."),
    "no_cuda": SkipCode(74, "CUDA is not available."),
    "multi-gpu-1": SkipCode(75, "Need at least 1 CUDA device"),
    "multi-gpu-2": SkipCode(77, "Need at least 2 CUDA devices"),
    "multi-gpu-3": SkipCode(80, "Need at least 3 CUDA devices"),
    "multi-gpu-4": SkipCode(81, "Need at least 4 CUDA devices"),
    "multi-gpu-5": SkipCode(82, "Need at least 5 CUDA devices"),
    "multi-gpu-6": SkipCode(83, "Need at least 6 CUDA devices"),
    "multi-gpu-7": SkipCode(84, "Need at least 7 CUDA devices"),
    "multi-gpu-8": SkipCode(85, "Need at least 8 CUDA devices"),
    "nccl": SkipCode(76, "c10d not compiled with NCCL support"),
    "skipIfRocm": SkipCode(78, "Test skipped for ROCm"),
    "no_peer_access": SkipCode(79, "Test skipped because no GPU peer access"),
    "generic": SkipCode(
        86, "Test skipped at subprocess level, look at subprocess log for skip reason"
    ),
    "importerror": SkipCode(88, "Test skipped due to missing import"),
    "no_accelerator": SkipCode(89, "accelerator is not available."),
}


def name_for_code(exit_code: int) -> str | None:
    """The registry name of a PyTorch skip exit code, or None."""
    return next((name for name, skip in PYTORCH_SKIPS.items() if skip.exit_code == exit_code), None)

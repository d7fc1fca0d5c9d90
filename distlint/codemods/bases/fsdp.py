"""``FSDPTest``: ``DEVICE_COUNT`` per-test workers whose ``_run`` creates the PG before every
test (then barrier, dynamo reset, RNG seed; after it barrier and destroy).

Its tests move, unchanged, to torch's ``FSDPTestContinuous`` (``--runtime torch``) or
distlint's ``FSDPContinuousTest``: both keep ``FSDPTestMixin``'s helpers, the world size,
the backend and those per-test steps on a PG built once.
"""

from __future__ import annotations

from distlint.codemods.bases.spec import PerTestBase, Target

BASE = PerTestBase(
    name="FSDPTest",
    targets={
        "distlint": Target("distlint.runtime.torch_fsdp", "FSDPContinuousTest"),
        "torch": Target("torch.testing._internal.common_fsdp", "FSDPTestContinuous"),
    },
    default_world_size={},
    needs_backend=False,
)

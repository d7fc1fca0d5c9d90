"""``DTensorTestBase``: ``NUM_DEVICES`` per-test workers; ``@with_comms`` builds the PG around
each test (``self.init_pg()`` before, ``self.destroy_pg()`` after) with the device's backend.

Its tests move to torch's ``DTensorContinuousTestBase`` (``--runtime torch``) or distlint's
``DTensorContinuousTest`` (the same ``DTensorTestMixin`` helpers on distlint's continuous
class); ``@with_comms`` goes (the shared PG exists before every test). A module-level
``create_local_tensor_test_class(X)`` gets a twin for the continuous class, on torch's
``LocalDTensorContinuousTestBase``, as torch's own continuous DTensor files do.
"""

from __future__ import annotations

from distlint.codemods.bases.spec import PerTestBase, Target

COMMON_DTENSOR = "torch.testing._internal.distributed._tensor.common_dtensor"

BASE = PerTestBase(
    name="DTensorTestBase",
    targets={
        "distlint": Target("distlint.runtime.torch_dtensor", "DTensorContinuousTest"),
        "torch": Target(COMMON_DTENSOR, "DTensorContinuousTestBase"),
    },
    # torch's DTensorContinuousTestBase would start one rank per device (none on CPU).
    default_world_size={"torch": Target(COMMON_DTENSOR, "NUM_DEVICES")},
    needs_backend=False,
    local_tensor_base={
        "distlint": Target(COMMON_DTENSOR, "LocalDTensorContinuousTestBase"),
        "torch": Target(COMMON_DTENSOR, "LocalDTensorContinuousTestBase"),
    },
)

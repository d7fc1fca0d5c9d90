"""``DTensorContinuousTest``: torch's ``DTensorTestMixin`` helpers on distlint's continuous class.

What ``distlint migrate`` gives tests of ``DTensorTestBase`` (``--runtime distlint``): the
same helpers (``build_device_mesh()``, ``init_manual_seed_for_rank()``, ``run_subtests()``,
``_test_op()``, ``device_type``), the same world size (torch's ``NUM_DEVICES``, 4 on CPU)
and the same backend (the device's default: NCCL when every rank gets a GPU, else gloo,
as ``DTensorTestMixin.device_type`` decides), on one pool and PG for the class.

Imported only by test files that use it (it imports torch's DTensor test helpers).
"""

from __future__ import annotations

from typing import Any

from torch.testing._internal.distributed._tensor.common_dtensor import NUM_DEVICES, DTensorTestMixin

from .continuous import MultiProcContinuousTest


class DeviceTypeName(str):
    """``"cpu"`` that can also be called: ``self.device_type`` (the DTensor mixin's property)
    and ``cls.device_type()`` (the continuous base's classmethod) both work."""

    def __call__(self) -> str:
        return str(self)


class _DeviceType:
    """The mixin's ``device_type`` property: on a test, the plain string the mixin gives (a
    ``DeviceMesh`` built from it is pickled with it: ``torch.load(..., weights_only=True)``
    loads only builtin strings); on the class, a :class:`DeviceTypeName`, which
    ``cls.device_type()`` also calls."""

    def __get__(self, instance: Any, owner: type) -> str:
        # The mixin's property only reads ``world_size``, which the class declares.
        # A property read on the class: mypy types it as its getter function.
        name = DTensorTestMixin.device_type.fget(  # type: ignore[attr-defined]
            instance if instance is not None else owner
        )
        return str(name) if instance is not None else DeviceTypeName(name)


class DTensorContinuousTest(DTensorTestMixin, MultiProcContinuousTest):
    """Many DTensor tests on one pool of ``NUM_DEVICES`` ranks and one PG."""

    world_size = NUM_DEVICES
    # A str on a test, as torch's mixin gives (not the base's classmethod there: see _DeviceType).
    device_type = _DeviceType()  # type: ignore[assignment]

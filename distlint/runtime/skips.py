"""The skip/exit-code registry, compatible with PyTorch's ``TEST_SKIPS``.

A rank process cannot raise into the process that reports the test, so PyTorch
encodes "skip this test" as a process exit code (``sys.exit(75)`` means "needs
one GPU").  This module owns the table of those codes.  It starts with exactly
PyTorch's codes and messages, so ``sys.exit(TEST_SKIPS["multi-gpu-2"].exit_code)``
written for torch reports the same skip here, and lets a project add its own
entries without ever giving one code two meanings.

Nothing here imports torch.
"""

from __future__ import annotations

import threading
import unittest
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import NamedTuple

from distlint import skipcodes


class TestSkip(NamedTuple):
    """One registry entry (same shape as torch's ``TestSkip``)."""

    exit_code: int
    message: str


TestSkip.__test__ = False  # type: ignore[attr-defined]  # not a pytest test class despite its name

# PyTorch's codes and messages (torch 2.13's TEST_SKIPS, byte for byte: tests and log
# scrapers compare them) live in distlint.skipcodes, plain data the linter's DL301 reads too.
PYTORCH_SKIPS: Mapping[str, TestSkip] = MappingProxyType(
    {name: TestSkip(*entry) for name, entry in skipcodes.PYTORCH_SKIPS.items()}
)

# Exit codes that already mean something else and so can never mean "skip":
# 0 is success, 1 is Python's uncaught-exception status, 10 is torch's
# MultiProcessTestCase.TEST_ERROR_EXIT_CODE.  Above 127 a shell reports signals.
_RESERVED_CODES = frozenset({0, 1, 10})
_MAX_CODE = 127


class SkipRegistry:
    """Name <-> exit code <-> message, with no code or name ever meaning two things."""

    def __init__(self, entries: Mapping[str, TestSkip] = PYTORCH_SKIPS) -> None:
        self._lock = threading.Lock()
        self._by_name: dict[str, TestSkip] = {}
        self._name_by_code: dict[int, str] = {}
        for name, entry in entries.items():
            self.register(name, entry.exit_code, entry.message)

    def register(self, name: str, exit_code: int, message: str) -> TestSkip:
        """Add an entry; registering an identical entry again is a no-op.

        Raises ValueError when the name is taken by a different entry, the code is
        taken by another name, or the code could be confused with a failure.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"skip name must be a non-empty string, got {name!r}")
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise ValueError(f"skip {name!r}: exit code must be an int, got {exit_code!r}")
        if exit_code in _RESERVED_CODES or not 2 <= exit_code <= _MAX_CODE:
            raise ValueError(
                f"skip {name!r}: exit code {exit_code} is reserved or out of range "
                f"(use 2..{_MAX_CODE}, not {sorted(_RESERVED_CODES)})"
            )
        if not isinstance(message, str) or not message:
            raise ValueError(f"skip {name!r}: message must be a non-empty string")
        entry = TestSkip(exit_code, message)
        with self._lock:
            existing = self._by_name.get(name)
            if existing is not None:
                if existing == entry:
                    return existing
                raise ValueError(
                    f"skip {name!r} is already registered as {tuple(existing)}; refusing {tuple(entry)}"
                )
            owner = self._name_by_code.get(exit_code)
            if owner is not None:
                raise ValueError(
                    f"exit code {exit_code} already means skip {owner!r}; refusing it for {name!r}"
                )
            self._by_name[name] = entry
            self._name_by_code[exit_code] = name
        return entry

    def by_name(self, name: str) -> TestSkip:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(
                f"no skip named {name!r} (known: {', '.join(sorted(self._by_name))})"
            ) from None

    def name_for_code(self, exit_code: object) -> str | None:
        """The registered name for an exit code, or None when it is not a skip code."""
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            return None
        return self._name_by_code.get(exit_code)

    def by_code(self, exit_code: object) -> TestSkip | None:
        name = self.name_for_code(exit_code)
        return None if name is None else self._by_name[name]

    def as_mapping(self) -> Mapping[str, TestSkip]:
        """A live read-only view: entries registered later show up in it."""
        return MappingProxyType(self._by_name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._by_name))

    def __len__(self) -> int:
        return len(self._by_name)


REGISTRY = SkipRegistry()

#: Drop-in for torch's ``TEST_SKIPS``: ``TEST_SKIPS["multi-gpu-2"].exit_code``.
TEST_SKIPS: Mapping[str, TestSkip] = REGISTRY.as_mapping()


def register_skip(name: str, exit_code: int, message: str) -> TestSkip:
    """Register a project-specific skip code (see :meth:`SkipRegistry.register`)."""
    return REGISTRY.register(name, exit_code, message)


def skip_for_name(name: str) -> TestSkip:
    return REGISTRY.by_name(name)


def skip_for_code(exit_code: object) -> TestSkip | None:
    return REGISTRY.by_code(exit_code)


def gpu_skip(count: int) -> TestSkip:
    """The "multi-gpu-N" entry for a test needing ``count`` GPUs.

    PyTorch only defines codes up to 8 devices; beyond that the multi-gpu-8 code
    is reused with an accurate message, since no code can say "16".
    """
    if count <= 0:
        return REGISTRY.by_name("no_cuda")
    name = f"multi-gpu-{count}"
    if name in REGISTRY.as_mapping():
        return REGISTRY.by_name(name)
    return TestSkip(
        REGISTRY.by_name("multi-gpu-8").exit_code, f"Need at least {count} CUDA devices"
    )


class RegistrySkip(unittest.SkipTest):
    """A SkipTest that remembers which registry entry it came from."""

    def __init__(self, entry: TestSkip) -> None:
        super().__init__(entry.message)
        self.entry = entry

    @property
    def exit_code(self) -> int:
        return self.entry.exit_code

"""Side-by-side timing for the in-process benchmarks: variants interleaved in every repeat.

A shared machine's load changes over seconds; timing variant A ``repeat`` times and then
variant B would let a busy moment hit one of them only. Here each repeat runs every
variant once, in an order rotated from repeat to repeat, and each variant's median is
reported. Times are CPU seconds of this process (``time.process_time``), steadier than
wall time when other jobs share the cores.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Optional

#: A variant: runs once; may return the CPU seconds of the part that counts (else its whole call counts).
Variant = Callable[[], Optional[float]]


def whole(fn: Callable[[], object]) -> Variant:
    """A variant whose whole call counts, whatever ``fn`` returns."""

    def run() -> None:
        fn()

    return run


def interleaved_medians(variants: dict[str, Variant], repeat: int) -> dict[str, float]:
    """Median CPU seconds per variant, every variant run once per repeat, order rotated."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for index in range(repeat):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.process_time()
            inner = variants[name]()
            samples[name].append(inner if isinstance(inner, float) else time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}
